"""Runlens: the entry script. The router (ui/shell.py: st.navigation over pages/, then the shared chrome: database,
demo banner, filters), then the chosen page."""

from __future__ import annotations

import streamlit as st

from ui.shell import PAGE_CONFIG, run_app

st.set_page_config(**PAGE_CONFIG)
run_app()

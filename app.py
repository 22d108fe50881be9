"""Runlens: the entry script. The router (ui/shell.py: st.navigation over pages/, then the shared chrome: database,
demo banner, filters), then the chosen page."""

from __future__ import annotations

from ui.shell import run_app

run_app()

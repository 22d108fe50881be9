"""The search index kept up with each upload: the Upload page starts its refresh in the background after an ingest
(``jobs.search_index`` in a process of its own, under the server's memory budget: ``ui.background``) and shows what
it is doing; ``python -m ingest`` runs the same refresh after its files (cli/ingest.py)."""

from __future__ import annotations

import uuid
from typing import Any

import streamlit as st

from jobs import search_index
from ui import background
from ui.common import plain

INDEX_JOBS = "search-index|"  # the search index's refresh after an upload, one job each (ui.background)


def start_index_refresh(results: list[Any], db: str) -> str | None:
    """After an upload that ingested something into a store with a search index: its refresh in the background, in
    a process of its own under the memory budget (``jobs.search_index``), so the index keeps up with every ingest
    and the upload never waits for it. Returns the job's key; "" when it does not start by itself
    (``RUNLENS_AUTO_FIT=0``); None when there is nothing to refresh (nothing ingested, or no index)."""
    if not any(r.outcome == "ingested" for r in results) or not search_index.has_index(db):
        return None
    if not background.is_enabled():
        return ""
    background.forget_done(INDEX_JOBS)
    key = f"{INDEX_JOBS}{db}|{uuid.uuid4().hex}"
    background.start_process(key, "jobs.search_index", search_index.worker_request(db))
    return key


def show_index_refresh(key: str | None) -> None:
    """What the search index's refresh after the last upload is doing (``start_index_refresh``'s job)."""
    if key is None:
        return
    if not key:
        st.caption(
            "The store's search index does not cover these attempts yet (RUNLENS_AUTO_FIT=0: nothing starts by "
            "itself): `python -m analytics search-index` adds them; search scans them meanwhile."
        )
        return

    job = background.get(key)
    if job is None:  # (a finished job forgotten by a later upload's)
        return
    if job.error is not None:
        st.warning(
            plain(
                f"The search index was not refreshed ({job.error}); search scans the new attempts until "
                "`python -m analytics search-index` adds them."
            ),
            icon=":material/info:",
        )
    elif job.is_done:
        st.caption(plain(f"{job.message[:1].upper()}{job.message[1:]}: search reads them from the index."))
    else:

        @st.fragment(run_every=1.0)
        def wait_for_index() -> None:
            current = background.get(key)
            if current is None or current.is_done:
                st.rerun(scope="app")
            st.caption(
                "Adding the new attempts to the search index in the background; search scans them until it is done."
            )

        wait_for_index()

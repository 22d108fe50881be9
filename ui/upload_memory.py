"""Uploaded files out of the server's memory: the one place ui/ reaches a Streamlit internal (tests/test_layers.py
names it).

Streamlit keeps every file dropped on an uploader in the server's memory until the browser session ends (the
uploader's value, and its manager's copy); no public API lets a page give them back. Measured with the real app
(bench/bench_tree_budget.py): after four files of 95 MB were refused, the server kept 606 MB with the uploader
only emptied, 226 MB once the files were also removed from the manager.
"""

from __future__ import annotations

from typing import Any


def release_uploads(files: list[Any]) -> None:
    """Remove uploaded files the page refused from Streamlit's manager (the page empties the uploader too, so no
    widget value holds them); a no-op where the internal API is missing (AppTest, another Streamlit version)."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError:
        return
    ctx = get_script_run_ctx()
    manager = getattr(ctx, "uploaded_file_mgr", None)
    if ctx is None or manager is None:
        return
    for item in files:
        manager.remove_file(ctx.session_id, item.file_id)

"""Open a page of the app with AppTest as a visitor arriving by a link would."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT


def open_page(
    page: str, db: Path, monkeypatch: pytest.MonkeyPatch, *, timeout_s: float = 120, check: bool = True, **params: str
) -> AppTest:
    """Run app.py (router, bootstrap, sidebar filters) with ``params`` in the URL, then switch to ``page``.

    Args:
        page: the page file, e.g. ``views/diff.py``; the default page needs no switch.
        db: the database (RUNLENS_DB).
        monkeypatch: pytest's monkeypatch, to set the environment.
        timeout_s: AppTest's per-run timeout.
        check: assert that the page raised no exception.
        **params: query parameters of the link.
    """
    monkeypatch.setenv("RUNLENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout_s)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page != "views/leaderboard.py":
        at.switch_page(page)
        at.run()
    if check:
        assert not at.exception, [e.value for e in at.exception]
    return at

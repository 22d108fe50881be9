# ruff: noqa: F811  (pytest fixtures imported from the analytics tests are redefined as arguments)
"""In Chromium: search the transcripts, open a hit in the drilldown (its step marked), record a review there."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import reader
from tests.browser_support import chromium_page, screenshot, settle, streamlit_server
from tests.test_search import search_db  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser


def test_search_open_hit_and_review(search_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")  # others edit the tree while tests run
    with streamlit_server(search_db) as url, chromium_page(height=1400) as page:
        page.set_default_timeout(120_000)  # the machine is shared and often busy
        page.goto(url + "/search?benchmark=sb&q=quota_exceeded", wait_until="domcontentloaded")
        link = page.get_by_text("Open this hit in the drilldown")
        link.wait_for()
        settle(page)
        shot = screenshot(page, "search-hit")
        assert "⟦QUOTA_EXCEEDED⟧" in page.locator("body").inner_text()
        link.click()
        page.get_by_text("search hit").wait_for()
        page.get_by_text("Transcript", exact=True).wait_for()
        page.get_by_text("Review this attempt").click()
        page.get_by_label("Reviewer (your name, kept for this session)").fill("Browser Bot")
        page.get_by_label("Reviewer (your name, kept for this session)").press("Enter")
        settle(page)
        page.get_by_text("incorrect", exact=True).click()
        page.get_by_label("Note").fill("quota error not handled")
        page.get_by_role("button", name="Save review").click()
        page.get_by_text("saved as Browser Bot").wait_for()
        settle(page)
        screenshot(page, "drilldown-review-saved")
        assert shot.stat().st_size > 20_000
    with reader(search_db) as con:
        rows = con.execute("SELECT reviewer, verdict, note, source FROM reviews").fetchall()
    assert rows == [("Browser Bot", "incorrect", "quota error not handled", "human")]

"""The running app in a real browser: the leaderboard renders with numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser_support import assert_app_navigation, chromium_page, screenshot, settle, streamlit_server

pytestmark = pytest.mark.browser


def test_leaderboard_renders_in_chromium(demo_db: Path) -> None:
    with streamlit_server(demo_db) as url, chromium_page() as page:
        page.goto(url + "/leaderboard", wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=120_000)
        page.wait_for_selector('[data-testid="stMetricValue"]', timeout=60_000)
        settle(page)
        metrics = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
        assert any(re.search(r"\d", m) for m in metrics), metrics
        grid_text = page.locator('[data-testid="stDataFrame"]').first.inner_text()
        body = page.locator("body").inner_text()
        assert "Demo data" in body
        shot = screenshot(page, "leaderboard")
        assert shot.stat().st_size > 20_000
        assert re.search(r"\d+\.\d", grid_text) or re.search(r"\d+\.\d", body), "no numbers rendered"
        assert "Traceback" not in body and "Error" not in page.title()
        assert "Page not found" not in body  # /leaderboard is a page of its own, not only the root URL's
        assert_app_navigation(page)

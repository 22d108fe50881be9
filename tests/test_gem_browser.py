"""The GEM-Bench page in a real browser: tables with numbers and the marked response text."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.demo import gembench
from ingest.pipeline import ingest_paths
from tests.browser_support import chromium_page, screenshot, settle, streamlit_server

pytestmark = pytest.mark.browser


def test_gem_page_renders_in_chromium(tmp_path: Path) -> None:
    db = tmp_path / "gem.duckdb"
    assert [r.outcome for r in ingest_paths(gembench.generate(tmp_path), db=db, fmt="native", is_demo=True)] == [
        "ingested"
    ]
    with streamlit_server(db) as url, chromium_page(height=1400) as page:
        page.goto(url + "/gem", wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stCode"]', timeout=180_000)
        settle(page)
        body = page.locator("body").inner_text()
        assert "Table 2" in body and "Table 6" in body and "Traceback" not in body
        assert ">> AD |" in page.locator('[data-testid="stCode"]').first.inner_text()
        shot = screenshot(page, "gem")
        assert shot.stat().st_size > 50_000

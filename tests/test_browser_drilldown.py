"""The drilldown page in a real browser: a deep link opens, hostile log text stays text, a screenshot is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import store as rdb
from ingest.pipeline import ingest_paths
from tests.browser_support import assert_app_navigation, chromium_page, screenshot, settle, streamlit_server
from tests.conftest import shared_data
from tests.test_page_drilldown import _write_special

pytestmark = pytest.mark.browser


def test_drilldown_deep_link_in_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # other people edit the tree while tests run; the file watcher's event storm is no part of this test
    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    db = tmp_path / "edge.duckdb"
    assert [r.outcome for r in ingest_paths([_write_special(tmp_path / "edge.jsonl")], db=db)] == ["ingested"]
    requested: list[str] = []
    with streamlit_server(db) as url, chromium_page(height=1400) as page:
        page.set_default_timeout(120_000)  # the test machine is shared and often busy
        page.on("request", lambda req: requested.append(req.url))
        page.on("dialog", lambda dialog: requested.append("dialog:" + dialog.message))
        page.goto(url + "/drilldown?run=edge-run&task=hostile&sample=0", wait_until="domcontentloaded")
        page.get_by_text("Transcript", exact=True).wait_for(timeout=120_000)
        page.get_by_text("Step 2", exact=True).wait_for(timeout=60_000)
        settle(page)
        body = page.locator("body").inner_text()
        shot = screenshot(page, "drilldown-hostile")
        assert '<script>alert("x")</script>' in body and "![x](http://evil.example/pixel.png)" in body
        assert page.locator('img[src*="evil.example"]').count() == 0
        assert page.locator('a[href*="evil.example"]').count() == 0
        assert not [r for r in requested if "evil.example" in r or r.startswith("dialog:")]
        assert "Traceback" not in body
        assert shot.stat().st_size > 20_000
        assert_app_navigation(page)  # the first request after the server started, yet the app's own sidebar
        # the long trajectory: paged, with the reference alignment beside it
        page.goto(url + "/drilldown?run=edge-run&task=long&sample=0", wait_until="domcontentloaded")
        page.get_by_text("Against the reference").wait_for(timeout=60_000)
        page.get_by_text("Page (of 80)").wait_for(timeout=60_000)
        page.get_by_text("Step 24", exact=True).wait_for(timeout=60_000)
        settle(page)
        body = page.locator("body").inner_text()
        screenshot(page, "drilldown-long")
        assert "Step 25" not in body and "Go to the first divergence" in body


def test_tau_transcript_and_next_failed_in_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real tau-bench trajectory reads as a transcript (roles apart, expected vs actual actions) and "Next
    failed" opens the run's next failed attempt."""
    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    db = tmp_path / "tau.duckdb"
    src = shared_data("tau_bench", "gpt-4o-airline.json")
    assert [r.outcome for r in ingest_paths([src], db=db, fmt="openai-messages")] == ["ingested"]
    with rdb.reader(db) as con:
        failed = rdb.query_rows(
            con,
            "SELECT run_id, task_id, sample FROM attempts WHERE NOT passed AND n_tool_calls > 0 "
            "ORDER BY task_id, sample LIMIT 2",
        )
    (run_id, task_id, sample), second = failed
    with streamlit_server(db) as url, chromium_page(width=1440, height=1400) as page:
        page.set_default_timeout(120_000)
        page.goto(url + f"/drilldown?run={run_id}&task={task_id}&sample={sample}", wait_until="domcontentloaded")
        page.get_by_text("Expected vs actual actions").wait_for(timeout=120_000)
        page.get_by_text("Step 1", exact=True).wait_for(timeout=60_000)
        settle(page)
        screenshot(page, "drilldown-tau")
        body = page.locator("body").inner_text()
        assert "user · round" in body and "tool call · round" in body  # each message names its role
        assert page.locator('[data-testid="stChatMessage"]').count() >= 2
        page.get_by_role("button", name="Next failed ▶").click()
        page.wait_for_url(f"**task={second[1]}**", timeout=60_000)
        page.get_by_text("Expected vs actual actions").wait_for(timeout=60_000)
        assert "Traceback" not in page.locator("body").inner_text()

"""An uploaded run (tests/fixtures/good.jsonl) in Chromium at 1280 and 1440 px reads like a finished report on every
page that shows runs, after the upload's own preview and result: no table cell and no caption shows None or nan, and
every table's default columns fit its width. A screenshot of each page at 1280 px is saved
(tests/artifacts/browser-tables-uploaded-<page>-1280.png). A file of its own, beside tests/test_browser_tables.py (its
own app over its own copy of the demo), so that two test workers share the two halves."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.browser_support import chromium_page, screenshot, settle, streamlit_server
from tests.conftest import FIXTURES, copy_store
from tests.test_browser_tables import GRIDS_JS, WIDTHS, open_expanders, problems_on

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# an uploaded run (tests/fixtures/good.jsonl: two runs of mini-bench, one of them a human baseline) on every page
# that shows runs, after the upload's own preview and result
UPLOADED = [
    "leaderboard?benchmark=mini-bench",
    "progress?benchmark=mini-bench",
    "tmf?benchmark=mini-bench",
    "errors?benchmark=mini-bench",
    "drilldown?run=mini-a-v1",
    "search?benchmark=mini-bench&q=CTR",
    "review?benchmark=mini-bench",
    "diff?benchmark=mini-bench",
    "sql?q=" + quote("SELECT * FROM v_runs WHERE benchmark = 'mini-bench'"),
]


@pytest.fixture(scope="module")
def uploaded_problems(
    demo_db_master: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[int, dict[str, list[str]]]:
    """tests/fixtures/good.jsonl uploaded once through the Upload page of an app over a copy of the demo; the upload's
    preview and result, then every page that shows runs, each checked at every width by resizing the window. What is
    wrong, by width and page."""
    db = copy_store(demo_db_master, tmp_path_factory.mktemp("uploaded"))
    failures: dict[int, dict[str, list[str]]] = {width: {} for width in WIDTHS}

    def check(name: str, *, min_grids: int = 0) -> None:
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1000})
            settle(page, grace_s=0.0)  # a resize asks for no script run
            open_expanders(page)
            if width == WIDTHS[0]:  # one picture a page to look at
                screenshot(page, f"browser-tables-uploaded-{name}-{width}")
            found = problems_on(page)
            if page.locator('[data-testid="stException"]').count():
                found.append("an exception")
            n_grids = len(page.evaluate(GRIDS_JS))
            if n_grids < min_grids:
                found.append(f"{n_grids} grids drawn, expected at least {min_grids}")
            if found:
                failures[width][name] = found
        page.set_viewport_size({"width": WIDTHS[0], "height": 1000})

    env = {"RUNLENS_AUTO_FIT": "0", "RUNLENS_STATE_DIR": str(tmp_path_factory.mktemp("state"))}
    with (
        streamlit_server(db, timeout_s=180, env=env) as url,
        chromium_page(width=WIDTHS[0], height=1000) as page,
    ):
        since = time.monotonic()
        page.goto(f"{url}/upload")
        settle(page, since=since)
        page.locator('input[type="file"]').set_input_files(
            files=[
                {"name": "mini.jsonl", "mimeType": "application/json", "buffer": (FIXTURES / "good.jsonl").read_bytes()}
            ]
        )
        page.get_by_role("heading", name="Preview").wait_for(timeout=180_000)
        check("upload-preview", min_grids=2)  # the files, and the runs they create
        page.get_by_role("button", name="Ingest 1 file", exact=True).click()
        page.get_by_text("Open run mini-a-v1 (Agent A)").first.wait_for(timeout=180_000)
        check("upload-done")
        for link in UPLOADED:
            since = time.monotonic()
            page.goto(f"{url}/{link}")
            settle(page, since=since)  # the page's first run, not the one before it
            check(link.split("?")[0])
    return failures


@pytest.mark.parametrize("width", WIDTHS)
def test_an_uploaded_run_reads_clean_and_fits(uploaded_problems: dict[int, dict[str, list[str]]], width: int) -> None:
    failures = uploaded_problems[width]
    assert not failures, json.dumps(failures, indent=2)

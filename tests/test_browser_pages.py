"""Every page opened cold in Chromium from a stale or hand-edited link, as a newcomer arriving from a chat message
would: the page draws, says what it could not use, raises nothing, answers its main interaction, and leaves a
screenshot in tests/artifacts/ (browser-page-<name>.png) to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import assert_app_navigation, chromium_page, screenshot, streamlit_server
from tests.conftest import FIXTURES
from tests.test_browser_plaintext import open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# (url path and link, the page's title, text the page must show for that link, a button to press then, if any)
LINKS: list[tuple[str, str, str, str | None]] = [
    ("leaderboard?benchmark=ad-bench&to=2099-12-31&agents=Nobody", "Leaderboard", "were left out of the filter", None),
    ("progress?benchmark=no-such-bench&model=9pl", "Progress", "is not one of 1pl", None),
    ("tmf?benchmark=ad-bench&hourly_usd=-5&performance=bogus", "Tech-Market-Fit", "bogus", None),
    ("errors?benchmark=ad-bench&err_sources=bogus&err_facet=nope", "Errors", "not a label source or facet", None),
    (
        "drilldown?run=deleted-run&task=T9&sample=99",
        "Drilldown",
        "The linked run is not in the database",
        "Next failed ▶",
    ),
    ("search?benchmark=ad-bench&q=revenue", "Search", "Attempts with a hit", None),
    ("clusters?benchmark=ad-bench&run=deleted-run", "Failure clusters", "Failure clusters", None),
    ("review?queue=bogus", "Review", "is not one of", None),
    ("diff?benchmark=ad-bench&baseline=deleted-run&candidate=also-gone", "Version diff", "not in this benchmark", None),
    ("gem?benchmark=gem-bench&from=1999-01-01", "GEM-Bench", "GEM", None),
    ("sql?q=SELECT%20agent%2C%20count(*)%20AS%20n%20FROM%20v_runs%20GROUP%20BY%20agent", "SQL", "agent", None),
    ("upload", "Upload", "Ingest history", None),
]


def exceptions(page: Any) -> list[str]:
    return [str(t) for t in page.locator('[data-testid="stException"]').all_inner_texts()]


def test_every_page_from_a_stale_link(demo_db: Path) -> None:
    with streamlit_server(demo_db, timeout_s=180) as url, chromium_page() as page:
        for link, title, marker, button in LINKS:
            name = link.split("?")[0]
            text = open_page(page, f"{url}/{link}", title, marker)
            assert "Traceback" not in text and not exceptions(page), (link, exceptions(page))
            assert_app_navigation(page)
            if button is not None:
                page.get_by_role("button", name=button).first.click(timeout=60_000)  # type: ignore[attr-defined]
                page.wait_for_timeout(3000)  # type: ignore[attr-defined]
                assert not exceptions(page), (link, button, exceptions(page))
            screenshot(page, f"browser-page-{name}")

        # the upload page's whole flow: preview says what the file creates, ingest, links to the new run
        open_page(page, f"{url}/upload", "Upload", "Delete a run")
        page.locator('input[type="file"]').set_input_files(  # type: ignore[attr-defined]
            files=[
                {"name": "mini.jsonl", "mimeType": "application/json", "buffer": (FIXTURES / "good.jsonl").read_bytes()}
            ]
        )
        page.get_by_role("heading", name="Preview").wait_for(timeout=180_000)  # type: ignore[attr-defined]
        page.wait_for_timeout(1500)  # type: ignore[attr-defined]
        # the preview's grid (a canvas) keeps each cell's text in a hidden DOM cell
        assert page.get_by_text("mini-a-v1: mini-bench, Agent A").count() > 0  # type: ignore[attr-defined]
        page.get_by_role("button", name="Ingest 1 file(s)").click()  # type: ignore[attr-defined]
        page.get_by_text("Open run mini-a-v1 (Agent A)").first.wait_for(timeout=180_000)  # type: ignore[attr-defined]
        page.wait_for_timeout(1500)  # type: ignore[attr-defined]
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()  # type: ignore[attr-defined]
        assert "75 runs" not in sidebar and "runs ·" in sidebar, sidebar  # the counts include the new runs at once
        assert not exceptions(page)
        screenshot(page, "browser-page-upload-done")

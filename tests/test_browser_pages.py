"""Every page opened cold in Chromium from a stale or hand-edited link, as a newcomer arriving from a chat message
would: the page draws, says what it could not use, raises nothing, answers its main interaction (and the browser's
Back restores the view before it), and leaves a screenshot in tests/artifacts/ (browser-page-<name>.png) to look
at."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

from jobs.failures import embed_failures
from tests.browser_support import assert_app_navigation, chromium_page, screenshot, settle, streamlit_server
from tests.conftest import FIXTURES
from tests.test_browser_plaintext import open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
Page = Any  # playwright's sync Page (the package has no type stubs here)


def wait_text(page: Page, text: str, *, timeout_ms: int = 240_000) -> None:
    page.get_by_text(text).first.wait_for(timeout=timeout_ms)


def url_param(page: Page, name: str) -> str | None:
    return (parse_qs(urlsplit(page.url).query).get(name) or [None])[0]


def main_area(page: Page) -> Page:
    return page.locator('[data-testid="stMain"]')


def sidebar_benchmark(page: Page) -> str:
    return str(page.locator('[data-testid="stSidebar"] input[aria-label="Benchmark"]').input_value())


def choose(page: Page, option: str) -> None:
    """Click one option of a segmented control (a radio button with that exact name) in the main area."""
    main_area(page).get_by_role("radio", name=option, exact=True).first.click()
    settle(page)


# --- the main interaction of each page -------------------------------------------------------------------------


def leaderboard(page: Page, url: str) -> None:
    choose(page, "category")
    wait_text(page, "Detail for one category")
    # the sidebar's benchmark changed, then Back: the earlier benchmark is in the URL and in the sidebar again
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name="liveagentbench").click()
    settle(page)
    assert url_param(page, "benchmark") == "liveagentbench" and "liveagentbench" in sidebar_benchmark(page)
    page.go_back()
    settle(page)
    assert url_param(page, "benchmark") == "ad-bench" and "ad-bench" in sidebar_benchmark(page), page.url


def progress(page: Page, url: str) -> None:
    # the first visit fits in the background (RUNLENS_AUTO_FIT=1 here); the heading, not the fit's progress message
    # ("the abilities' sd: ..."), which get_by_text would also match
    page.get_by_role("heading", name="Abilities", exact=True).first.wait_for(timeout=240_000)
    text = settle(page)
    assert "Velocity and breakthroughs" in text


def tmf(page: Page, url: str) -> None:
    rate = page.get_by_label("Human hourly rate (USD)").first
    page.get_by_text("Change the assumptions").first.click()
    assert rate.input_value() == "1.00"  # the link's -5 was clamped
    before = main_area(page).locator('[data-testid="stMetric"]').all_inner_texts()
    rate.fill("120")
    rate.press("Enter")
    settle(page)
    assert url_param(page, "hourly_usd") == "120"
    assert main_area(page).locator('[data-testid="stMetric"]').all_inner_texts() != before
    page.go_back()  # the view of the earlier URL: its rate and its numbers
    settle(page)
    assert url_param(page, "hourly_usd") == "1" and rate.input_value() == "1.00", page.url
    assert main_area(page).locator('[data-testid="stMetric"]').all_inner_texts() == before


def errors(page: Page, url: str) -> None:
    choose(page, "level")
    wait_text(page, "Error types per run (level: ")
    # a click on a bar lists that run's attempts with that code right under the chart
    bar = page.locator(".st-key-err_shares .js-plotly-plot .barlayer .point path >> visible=true").first
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()  # Plotly's drag layer lies over the bars: click where the bar is drawn
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    settle(page)
    run, code = url_param(page, "err_run"), url_param(page, "err_code")
    assert run and code, page.url
    assert page.locator('input[aria-label="Code"]').input_value() == code  # the pickers under the chart follow
    assert "No failed attempt matches" not in settle(page)


def drilldown(page: Page, url: str) -> None:
    before = page.url
    page.get_by_role("button", name="Next failed ▶").first.click(timeout=60_000)
    settle(page)
    assert page.url != before and url_param(page, "run"), page.url


def search(page: Page, url: str) -> None:
    box = page.get_by_label("Search the transcripts")
    box.fill("budget")
    box.press("Enter")
    settle(page)
    assert url_param(page, "q") == "budget"
    hits = main_area(page).locator('[data-testid="stMetric"]').first.inner_text()
    assert re.search(r"\d", hits) and not hits.strip().endswith("\n0"), hits
    page.get_by_text("Open this hit in the drilldown").first.click()
    page.get_by_role("heading", name="Drilldown", exact=True).first.wait_for(timeout=120_000)
    settle(page)
    assert url_param(page, "step") is not None
    page.go_back()
    page.get_by_role("heading", name="Search", exact=True).first.wait_for(timeout=120_000)
    settle(page)
    assert page.get_by_label("Search the transcripts").input_value() == "budget", page.url


def clusters(page: Page, url: str) -> None:
    wait_text(page, "Failed attempts")
    page.get_by_text("drilldown").first.wait_for(timeout=60_000)  # a cluster's member attempts, with links


def review(page: Page, url: str) -> None:
    choose(page, "calibration")
    assert url_param(page, "queue") == "calibration"
    page.go_back()
    settle(page)
    assert url_param(page, "queue") is None, page.url  # the default queue ("failed") again


def diff(page: Page, url: str) -> None:
    pair = (url_param(page, "baseline"), url_param(page, "candidate"))
    page.get_by_text("Regressions only").first.click()
    settle(page)
    page.get_by_text("Open in the drilldown").first.click()
    page.get_by_role("heading", name="Drilldown", exact=True).first.wait_for(timeout=120_000)
    settle(page)
    attempt = tuple(url_param(page, p) for p in ("run", "task", "sample"))
    page.go_back()  # the diff comes back with the same pair, and no drilldown parameter in its URL
    page.get_by_role("heading", name="Version diff", exact=True).first.wait_for(timeout=120_000)
    settle(page)
    assert (url_param(page, "baseline"), url_param(page, "candidate")) == pair, page.url
    assert url_param(page, "task") is None and url_param(page, "run") is None, page.url
    page.go_forward()  # and Forward lands on the same attempt again
    page.get_by_role("heading", name="Drilldown", exact=True).first.wait_for(timeout=120_000)
    settle(page)
    assert tuple(url_param(page, p) for p in ("run", "task", "sample")) == attempt, page.url


def gem(page: Page, url: str) -> None:
    choose(page, "computed")
    wait_text(page, "No computed metrics are stored yet")


def sql(page: Page, url: str) -> None:
    link = main_area(page).locator('[data-testid="stCode"]').all_inner_texts()
    assert any(t.strip().startswith(f"{url}/sql?q=SELECT") for t in link), link  # absolute, runs the query
    editor = page.get_by_role("textbox", name="SQL", exact=True)
    editor.fill("SELECT 42 AS answer")
    editor.press("Control+Enter")
    wait_text(page, "1 row · 1 column ·")


def upload(page: Page, url: str) -> None:
    """The whole flow: the preview says what the file creates, ingest, links to the new run, fresh counts."""
    page.locator('input[type="file"]').set_input_files(
        files=[{"name": "mini.jsonl", "mimeType": "application/json", "buffer": (FIXTURES / "good.jsonl").read_bytes()}]
    )
    page.get_by_role("heading", name="Preview").wait_for(timeout=180_000)
    settle(page)
    # the preview's grid (a canvas) keeps each cell's text in a hidden DOM cell
    assert page.get_by_text("2 runs (listed below)").count() > 0  # the file's runs, each on its own row
    for cell in ("mini-a-v1", "mini-human", "Agent A", "Human"):  # the table of the runs it creates, one per row
        assert page.get_by_text(cell, exact=True).count() > 0, cell
    page.get_by_role("button", name="Ingest 1 file", exact=True).click()
    page.get_by_text("Open run mini-a-v1 (Agent A)").first.wait_for(timeout=180_000)
    settle(page)
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "the store: 75 runs" not in sidebar and "the store: " in sidebar, sidebar  # the new runs counted at once
    screenshot(page, "browser-page-upload-ingested")
    # the link opens the new run in its own benchmark: the sidebar follows it and the demo banner is not shown
    page.get_by_text("Open run mini-a-v1 (Agent A)").first.click()
    page.get_by_role("heading", name="Drilldown", exact=True).first.wait_for(timeout=120_000)
    settle(page)
    assert url_param(page, "run") == "mini-a-v1" and url_param(page, "benchmark") == "mini-bench", page.url
    assert sidebar_benchmark(page) == "mini-bench" and not page.get_by_text("Demo data.").count()


# (url path and link, the page's title, text the page must show for that link, its main interaction)
LINKS: list[tuple[str, str, str, Callable[[Page, str], None]]] = [
    (
        "leaderboard?benchmark=ad-bench&to=2099-12-31&agents=Nobody",
        "Leaderboard",
        "were left out of the filter",
        leaderboard,
    ),
    ("progress?benchmark=no-such-bench&model=9pl", "Progress", "is not one of 1pl", progress),
    ("tmf?benchmark=ad-bench&hourly_usd=-5&performance=bogus", "Tech-Market-Fit", "bogus", tmf),
    ("errors?benchmark=ad-bench&err_sources=bogus&err_facet=nope", "Errors", "not a label source", errors),
    ("drilldown?run=deleted-run&task=T9&sample=99", "Drilldown", "The linked run is not in the database", drilldown),
    ("search?benchmark=ad-bench&q=revenue", "Search", "Attempts with a hit", search),
    ("clusters?benchmark=ad-bench&run=deleted-run", "Failure clusters", "Failure clusters", clusters),
    ("review?benchmark=ad-bench&queue=bogus", "Review", "is not one of", review),
    ("diff?benchmark=ad-bench&baseline=deleted-run&candidate=also-gone", "Version diff", "not in this benchmark", diff),
    ("gem?benchmark=gem-bench&from=1999-01-01", "GEM-Bench", "GEM", gem),
    ("sql?q=SELECT%20agent%2C%20count(*)%20AS%20n%20FROM%20v_runs%20GROUP%20BY%20agent", "SQL", "agent", sql),
    ("upload", "Upload", "Ingest history", upload),
]


def hashed_words(texts: list[str]) -> np.ndarray:
    """A stand-in for the sentence model (not available to a browser test's time budget): bag of hashed words,
    64 dimensions, unit length; texts that share words point the same way."""
    out = np.zeros((len(texts), 64))
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[i, int(hashlib.sha1(word.encode()).hexdigest(), 16) % 64] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def exceptions(page: Page) -> list[str]:
    return [str(t) for t in page.locator('[data-testid="stException"]').all_inner_texts()]


def test_every_page_from_a_stale_link(demo_db: Path) -> None:
    assert embed_failures(demo_db, benchmark="ad-bench", encode=hashed_words) > 0  # the clusters page has data
    with (
        streamlit_server(demo_db, timeout_s=180, env={"RUNLENS_AUTO_FIT": "1"}) as url,
        chromium_page() as page,
    ):
        for link, title, marker, interact in LINKS:
            name = link.split("?")[0]
            text = open_page(page, f"{url}/{link}", title, marker)
            assert "Traceback" not in text and not exceptions(page), (link, exceptions(page))
            assert_app_navigation(page)
            interact(page, url)
            assert not exceptions(page), (link, exceptions(page))
            screenshot(page, f"browser-page-{name}")

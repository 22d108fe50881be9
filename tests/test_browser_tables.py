"""Every page in Chromium at 1280 and 1440 px reads like a finished report: no table cell and no caption shows
None or nan, and every table's default columns fit its width (the grid does not scroll sideways). Each page's first
render at 1280 px is recorded (wall seconds to the app's answer, tests/artifacts/page-timings-1280.json; figures, not
assertions: bench/bench_pages_browser.py is where times are measured, a second visit's too), and a screenshot of
each page at 1280 px is saved (tests/artifacts/browser-tables-<page>-1280.png) to look at. A page is opened once
and checked at both widths by resizing the window; the pages of ui.tables' own check (TOUCHED) are checked on that
visit too. The same checks after an upload: tests/test_browser_tables_uploaded.py."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import store as rdb
from jobs.failures import cluster_failures, embed_failures
from jobs.irt import fit_and_store
from tests.browser_support import ScriptClock, chromium_page, screenshot, settle, streamlit_server
from tests.conftest import ARTIFACTS, copy_store
from tests.test_browser_pages import hashed_words

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SQL_RESULT = "SELECT *, NULL AS nothing FROM v_runs ORDER BY run_id"  # wide, with NULLs: a dash, never None
PAGES = [
    "leaderboard?benchmark=ad-bench",
    "progress?benchmark=ad-bench",
    "tmf?benchmark=ad-bench",
    "errors?benchmark=ad-bench",
    "drilldown?benchmark=ad-bench",
    "search?benchmark=ad-bench&q=budget",
    "clusters?benchmark=ad-bench",
    "review?benchmark=ad-bench",
    "diff?benchmark=ad-bench",
    "gem?benchmark=gem-bench",
    "upload",
    "sql?q=" + quote(SQL_RESULT),
]
# opens every closed expander of the main area; how many it opened (none: the page did not change, no need to settle)
OPEN_EXPANDERS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] details:not([open]) > summary')]
  .map(s => s.click()).length"""
RAW = re.compile(r"^(None|nan|NaN|<NA>|NaT|inf|-inf)$")
RAW_WORD = re.compile(r"\b(None|nan|NaN|NaT)\b")

# Every grid on the page that is drawn (not inside a closed expander): its cells' text (the grid keeps each drawn
# cell in a hidden DOM table) and whether its columns fit (the scroller's content no wider than its box).
GRIDS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]')]
  .filter(e => e.getBoundingClientRect().width > 0)
  .map(e => {
    const s = e.querySelector('.dvn-scroller');
    return {cells: [...e.querySelectorAll('td, th')].map(c => c.innerText.trim()),
            scroll: s ? s.scrollWidth : 0, box: s ? s.clientWidth : 0,
            where: (e.closest('[class*="st-key-"]') || e).className.match(/st-key-[\\w-]+/)?.[0] || ''};
  })"""
CAPTIONS_JS = """() => [...document.querySelectorAll([
  '[data-testid="stMain"] [data-testid="stCaptionContainer"]', '[data-testid="stMain"] [data-testid="stMetric"]',
  '[data-testid="stMain"] [data-testid="stAlert"]'].join(', '))].map(e => e.innerText)"""


def problems_on(page: Any) -> list[str]:
    """What a reader should not see on the page now: raw cells, raw words in captions, grids cut off."""
    found = []
    grids = page.evaluate(GRIDS_JS)
    for i, grid in enumerate(grids):
        raw = sorted({c for c in grid["cells"] if RAW.match(c)})
        if raw:
            found.append(f"grid {i} {grid['where']}: cells {raw}")
        if grid["scroll"] > grid["box"] + 2:
            found.append(f"grid {i} {grid['where']}: {grid['scroll']} px of columns in {grid['box']} px")
    for text in page.evaluate(CAPTIONS_JS):
        if RAW_WORD.search(text):
            found.append(f"caption: {text[:160]!r}")
    return found


def open_expanders(page: Any) -> None:
    """Open every closed expander of the main area (every table of the page, those in expanders too); wait for the
    page only when one was opened (a resized window keeps the expanders it had open)."""
    if page.evaluate(OPEN_EXPANDERS_JS):
        settle(page)


@pytest.fixture(scope="module")
def ready_db(demo_db_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with a stored IRT fit (Progress) and a stored clustering of stand-in failure vectors (Clusters: with
    the background jobs off, the page shows what is stored). Built once for the module: its tests only read it."""
    target = copy_store(demo_db_master, tmp_path_factory.mktemp("ready"))
    with rdb.writer(target) as con:
        fit_and_store(con, benchmark="ad-bench", model="1pl")
    assert embed_failures(target, benchmark="ad-bench", encode=hashed_words) > 0
    assert cluster_failures(target, benchmark="ad-bench", encode=hashed_words)
    return target


@pytest.fixture(scope="module")
def ready_url(ready_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One app over ``ready_db`` for the module's tests (its own state folder, like each test's)."""
    env = {"RUNLENS_AUTO_FIT": "0", "RUNLENS_STATE_DIR": str(tmp_path_factory.mktemp("state"))}
    with streamlit_server(ready_db, timeout_s=180, env=env) as url:
        yield url


WIDTHS = [1280, 1440]

# the tables views/gem.py, views/errors.py (every expander opened: Table 3's grid, the judge's corrections, every
# code) and views/sql.py (a user's wide result with NULLs) draw through ui.tables; checked at 1280 px on the visit
# of every page (the same view a page opened alone at 1280 px shows): at least this many grids drawn.
# gem: Tables 2, 3, 6, 4, the judges' agreement, a response's sentences; errors: the rates, Table 3's grid, every
# code, the attempts behind a bar; sql: the schema's columns and objects, the result
TOUCHED = ["gem?benchmark=gem-bench", "errors?benchmark=ad-bench", "sql?q=" + quote(SQL_RESULT)]
MIN_GRIDS = {"gem": 6, "errors": 3, "sql": 3}


@pytest.fixture(scope="module")
def every_page_problems(ready_url: str) -> dict[str, dict[str, list[str]]]:
    """Every page opened once at the first width (its first render timed), then drawn and checked at each width by
    resizing the window: the app's tables take their column widths from the page, not the window, so a resized
    window shows what a window opened at that width shows. What is wrong, by width ("1280", "1440") and page; and
    under "touched", what is wrong at 1280 px on the pages of ``TOUCHED`` (too few grids included)."""
    timings: dict[str, dict[str, float]] = {}
    failures: dict[str, dict[str, list[str]]] = {str(width): {} for width in WIDTHS}
    failures["touched"] = {}
    assert set(TOUCHED) <= set(PAGES)
    with chromium_page(width=WIDTHS[0], height=1000) as page:
        clock = ScriptClock(page)
        for link in PAGES:
            name = link.split("?")[0]
            page.set_viewport_size({"width": WIDTHS[0], "height": 1000})
            # one visit: a second one (cached loaders) drew the same page again for a figure bench/ records
            since = time.monotonic()
            page.goto(f"{ready_url}/{link}")
            settle(page, since=since)  # the page's runs finished, the page drawn and still
            timings[name] = {"first": clock.answered_s(since)}
            for width in WIDTHS:
                if width != WIDTHS[0]:
                    page.set_viewport_size({"width": width, "height": 1000})
                    settle(page, grace_s=0.0)  # a resize asks for no script run
                open_expanders(page)  # every table of the page, those in expanders too
                if width == WIDTHS[0]:  # one picture a page to look at (each costs about 0.8 s of the run)
                    shot = screenshot(page, f"browser-tables-{name}-{width}")
                found = problems_on(page)
                if page.locator('[data-testid="stException"]').count():
                    found.append("an exception")
                n_grids = len(page.evaluate(GRIDS_JS))
                if not n_grids and name != "upload":
                    found.append("no table drawn")
                if found:
                    failures[str(width)][name] = found
                if width == 1280 and link in TOUCHED:
                    shutil.copyfile(shot, ARTIFACTS / f"browser-tables-touched-{name}-1280.png")
                    touched = list(found)
                    if n_grids < MIN_GRIDS[name]:
                        touched.append(f"{n_grids} grids drawn, expected at least {MIN_GRIDS[name]}")
                    if touched:
                        failures["touched"][name] = touched
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"page-timings-{WIDTHS[0]}.json").write_text(json.dumps(timings, indent=2) + "\n")
    return failures


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_reads_clean_and_fits(every_page_problems: dict[str, dict[str, list[str]]], width: int) -> None:
    failures = every_page_problems[str(width)]
    assert not failures, json.dumps(failures, indent=2)


def test_gem_errors_and_sql_tables_read_clean_at_1280(every_page_problems: dict[str, dict[str, list[str]]]) -> None:
    failures = every_page_problems["touched"]
    assert not failures, json.dumps(failures, indent=2)

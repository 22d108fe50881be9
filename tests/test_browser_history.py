"""Back and Forward in Chromium: every view is one history entry and comes back whole.

A page's first visit adds exactly one entry (the sidebar's menu carries the filters, and no page writes its default
state into the URL), so the first Back leaves the page instead of showing the same view again; Back and Forward
across pages (Version diff -> the drilldown and back) restore the pair of runs and the attempt. Every change of the
browser's history is recorded (pushState / replaceState wrapped before the app loads). The tests share one app over
the demo (conftest's ``demo_app``: they only read it), each in a new browser.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser_support import MENU, chromium_page, screenshot
from tests.test_browser_pages import settle, sidebar_benchmark, url_param

pytestmark = [pytest.mark.browser, pytest.mark.slow]
Page = Any

RECORD_HISTORY_JS = """(() => { window.__pushes = 0;
  const push = history.pushState.bind(history);
  history.pushState = (s, t, u) => { window.__pushes += 1; return push(s, t, u); }; })()"""
# every page of the menu, with its heading
PAGES = [
    ("Progress", "Progress"),
    ("Tech-Market-Fit", "Tech-Market-Fit"),
    ("Errors", "Errors"),
    ("Drilldown", "Drilldown"),
    ("Search", "Search"),
    ("Failure clusters", "Failure clusters"),
    ("Review", "Review"),
    ("Version diff", "Version diff"),
    ("GEM-Bench", "GEM-Bench"),
    ("SQL", "SQL"),
    ("Upload", "Upload"),
    ("Leaderboard", "Leaderboard"),
]


def pushes(page: Page) -> int:
    return int(page.evaluate("window.__pushes"))


def heading(page: Page, name: str) -> None:
    page.get_by_role("heading", name=name, exact=True).first.wait_for(timeout=120_000)
    settle(page)


def picked(page: Page, label: str) -> str:
    return str(page.locator(f'[data-testid="stMain"] input[aria-label="{label}"]').first.input_value())


def test_each_page_visit_is_one_history_entry(demo_app: str) -> None:
    """Every page of the menu opened in turn, each adding one entry; then Back from the last to the first, each Back
    leaving its page for the view before it (not the same page again)."""
    url = demo_app
    with chromium_page(width=1280, height=900) as page:
        page.add_init_script(RECORD_HISTORY_JS)
        page.goto(f"{url}/?benchmark=ad-bench")
        heading(page, "Leaderboard")
        assert pushes(page) == 0, page.url  # a link that names the benchmark is kept as it came
        visited = [("Leaderboard", page.url)]
        for title, head in PAGES:
            n = pushes(page)
            page.locator(MENU).get_by_text(title, exact=True).first.click()
            heading(page, head)
            assert pushes(page) == n + 1, (title, page.url)
            assert url_param(page, "benchmark") == "ad-bench", page.url  # the menu carries the filters
            visited.append((head, page.url))
        for (title, _), (head, before) in zip(reversed(visited[1:]), reversed(visited[:-1]), strict=True):
            page.go_back()  # the first Back leaves the page: the view before it, not the same page again
            heading(page, head)
            assert page.url == before, (title, page.url)


def test_diff_to_drilldown_back_and_forward(demo_app: str) -> None:
    url = demo_app
    with chromium_page(width=1280, height=900) as page:
        page.add_init_script(RECORD_HISTORY_JS)
        page.goto(url)  # the landing page without a benchmark in its link: its URL stays as typed
        heading(page, "Leaderboard")
        start = sidebar_benchmark(page)
        assert pushes(page) == 0 and url_param(page, "benchmark") is None, page.url
        page.locator(MENU).get_by_text("Version diff", exact=True).first.click()
        heading(page, "Version diff")
        assert pushes(page) == 1 and url_param(page, "baseline") is None, page.url  # the default pair: no entry
        default_pair = (picked(page, "Baseline run A (before)"), picked(page, "Candidate run B (after)"))
        # another candidate: one entry with the pair in it
        page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').nth(1).click()
        page.get_by_role("option").nth(2).click()
        settle(page)
        pair = (picked(page, "Baseline run A (before)"), picked(page, "Candidate run B (after)"))
        assert pair != default_pair and pushes(page) == 2, page.url
        in_url = (url_param(page, "baseline"), url_param(page, "candidate"))
        page.get_by_text("Open in the drilldown").first.click()
        heading(page, "Drilldown")
        assert pushes(page) == 3, page.url
        attempt = tuple(url_param(page, p) for p in ("run", "task", "sample"))
        shown = (picked(page, "Run"), picked(page, "Task (✓ passed, ✗ failed, ◐ some samples)"))
        screenshot(page, "history-drilldown")

        page.go_back()  # the diff with the pair picked
        heading(page, "Version diff")
        assert (url_param(page, "baseline"), url_param(page, "candidate")) == in_url, page.url
        assert (picked(page, "Baseline run A (before)"), picked(page, "Candidate run B (after)")) == pair
        page.go_back()  # the diff as it opened: the default pair
        heading(page, "Version diff")
        assert url_param(page, "baseline") is None, page.url
        assert (picked(page, "Baseline run A (before)"), picked(page, "Candidate run B (after)")) == default_pair
        page.go_back()  # the landing page, where the visit started
        heading(page, "Leaderboard")
        assert sidebar_benchmark(page) == start and url_param(page, "benchmark") is None, page.url

        page.go_forward()
        heading(page, "Version diff")
        assert (picked(page, "Baseline run A (before)"), picked(page, "Candidate run B (after)")) == default_pair
        page.go_forward()
        heading(page, "Version diff")
        assert (picked(page, "Baseline run A (before)"), picked(page, "Candidate run B (after)")) == pair
        page.go_forward()  # the same attempt again
        heading(page, "Drilldown")
        assert tuple(url_param(page, p) for p in ("run", "task", "sample")) == attempt, page.url
        assert (picked(page, "Run"), picked(page, "Task (✓ passed, ✗ failed, ◐ some samples)")) == shown
        screenshot(page, "history-forward")


def test_drilldown_back_to_its_first_attempt(demo_app: str) -> None:
    url = demo_app
    with chromium_page(width=1280, height=900) as page:
        page.add_init_script(RECORD_HISTORY_JS)
        # a link to a run (as the Upload page and the tables' links give): the sidebar follows the run's benchmark,
        # the run opens on its first attempt, and the URL stays as the link was
        page.goto(f"{url}/drilldown?run=adb-qwen3-32b-2026-01")
        heading(page, "Drilldown")
        first = picked(page, "Task (✓ passed, ✗ failed, ◐ some samples)")
        assert sidebar_benchmark(page) == "ad-bench", page.url
        assert pushes(page) == 0 and url_param(page, "task") is None and url_param(page, "benchmark") is None, page.url
        page.get_by_role("button", name="Next failed ▶").first.click()
        settle(page)
        assert pushes(page) == 1 and url_param(page, "task") not in (None, first), page.url
        page.go_back()
        settle(page)
        assert url_param(page, "task") is None and picked(page, "Task (✓ passed, ✗ failed, ◐ some samples)") == first
        assert picked(page, "Run").startswith("Qwen3-32B"), picked(page, "Run")
        # the sidebar's benchmark changed, then Back: the earlier benchmark is in the sidebar again
        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name="liveagentbench").click()
        settle(page)
        assert url_param(page, "benchmark") == "liveagentbench", page.url
        page.go_back()
        settle(page)
        assert sidebar_benchmark(page) == "ad-bench" and url_param(page, "benchmark") is None, page.url

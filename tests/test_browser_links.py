"""Every link from one page of the app to another carries the URL of the page it opens: the href alone, opened in
a new tab (a new session, no state from the page it was on), shows that page with the link's benchmark. A link to
the leaderboard once had the root page's empty path (``?benchmark=x``), so a new tab stayed on the page it was on
(issue 31)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from tests.browser_support import chromium_page, screenshot, settle, streamlit_server, watch
from tests.conftest import FIXTURES, ROOT
from tests.test_browser_pages import main_area, sidebar_benchmark

pytestmark = [pytest.mark.browser, pytest.mark.slow]
Page = Any  # playwright's sync Page

NAV_LINKS = 'a[data-testid="stPageLink-NavLink"]'


def page_titles() -> dict[str, str]:
    """Each page's URL path and title, from app.py's ``PAGES``."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    titles = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page":
            kw = {k.arg: k.value for k in node.keywords}
            titles[ast.literal_eval(kw["url_path"])] = ast.literal_eval(kw["title"])
    return titles


PAGE_TITLES = page_titles()


def page_links(page: Page, *, where: str = "body") -> list[tuple[str, str]]:
    """(label, absolute href) of every link to a page of the app (st.page_link, the menu's entries included)."""
    rows = page.locator(f"{where} {NAV_LINKS}").evaluate_all(
        "els => els.map(e => [e.innerText.trim().split('\\n').pop(), e.getAttribute('href')])"
    )
    return [(label, urljoin(page.url, href)) for label, href in rows]


def heading(page: Page) -> str:
    return str(main_area(page).locator("h1").first.inner_text()).strip()


TABS_AT_ONCE = 4  # tabs open together: the app draws one while the test waits for another to be still


def opened_alone(page: Page, hrefs: list[str]) -> dict[str, tuple[str, str | None, str]]:
    """Each href's page title, sidebar benchmark and shown path, the href opened in a new tab of its own (a browser
    context of its own: no state shared with the page it was on, nor with the other tabs). ``TABS_AT_ONCE`` tabs are
    opened together and each is read once its page is drawn and still (one after the other, the tests waited for
    each page's stillness in turn while the app was idle)."""
    out: dict[str, tuple[str, str | None, str]] = {}
    for i in range(0, len(hrefs), TABS_AT_ONCE):
        tabs: list[tuple[str, Page]] = []
        try:
            for href in hrefs[i : i + TABS_AT_ONCE]:
                tab = watch(page.context.browser.new_page(viewport=page.viewport_size))
                tabs.append((href, tab))
                tab.goto(href)
            for href, tab in tabs:
                main_area(tab).locator("h1").first.wait_for(timeout=180_000)
                settle(tab)
                out[href] = (heading(tab), sidebar_benchmark(tab) or None, urlsplit(tab.url).path.strip("/"))
        finally:
            for _, tab in tabs:
                tab.close()
    return out


def benchmark_of(href: str) -> str | None:
    return (parse_qs(urlsplit(href).query).get("benchmark") or [None])[0]


def test_every_page_link_opens_the_page_it_names_in_a_new_tab(demo_db: Path) -> None:
    with (
        streamlit_server(demo_db, timeout_s=180, env={"RUNLENS_AUTO_FIT": "0"}) as url,
        chromium_page(width=1280, height=900) as page,
    ):
        # a file uploaded: the Upload page links to its new run and to its benchmark's leaderboard
        page.goto(f"{url}/upload")
        page.get_by_role("heading", name="Upload", exact=True).first.wait_for(timeout=180_000)
        page.locator('input[type="file"]').set_input_files(
            files=[
                {"name": "mini.jsonl", "mimeType": "application/json", "buffer": (FIXTURES / "good.jsonl").read_bytes()}
            ]
        )
        page.get_by_role("button", name="Ingest 1 file", exact=True).click()
        page.get_by_text("Leaderboard of mini-bench").first.wait_for(timeout=180_000)
        settle(page)
        screenshot(page, "browser-links-upload")
        # the menu, from a page that is not the one it links to (a link without a path stays where it is)
        menu = page_links(page, where='[data-testid="stSidebar"]')
        titles = [label for label, _ in menu]
        assert {"Leaderboard", "Errors", "Version diff", "Upload"} <= set(titles), titles
        in_page = page_links(page, where='[data-testid="stMain"]')
        assert ("Leaderboard of mini-bench", f"{url}/leaderboard?benchmark=mini-bench") in in_page, in_page
        checked: list[tuple[str, str]] = [*menu, *in_page]
        # the links the pages draw in their main area
        for source in ("leaderboard?benchmark=ad-bench", "errors?benchmark=ad-bench"):
            page.goto(f"{url}/{source}")
            main_area(page).locator("h1").first.wait_for(timeout=180_000)
            settle(page)
            found = page_links(page, where='[data-testid="stMain"]')
            assert found, source
            checked += found
        for label, href in checked:
            assert urlsplit(href).path.strip("/") in PAGE_TITLES, (label, href)  # every link names its page's own path
        # a link drawn twice (menu, pages) is opened once
        opened = opened_alone(page, list(dict.fromkeys(href for _, href in checked)))
        for label, href in checked:
            path = urlsplit(href).path.strip("/")
            title, bench, shown = opened[href]
            assert (title, shown) == (PAGE_TITLES[path], path), (label, href, title, shown)
            if label in titles:  # a menu entry is named by its page's title
                assert title == label, (label, href)
            assert bench == benchmark_of(href), (label, href, bench)

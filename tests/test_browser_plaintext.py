"""Every page in a real browser on a log whose every string holds Markdown/HTML/URL payloads (issue 18).

The payloads point at a beacon server this test runs on the loopback: if any page rendered log text as
Markdown or HTML, Chromium would fetch an image from it, or a link to it would appear (in the page or in a
Plotly chart). The test asserts that no request reaches the beacon and no link or image to it exists,
and that the payload is visible as text. Screenshots are kept under tests/artifacts/plaintext-*.png.
"""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

import pytest

from ingest.pipeline import ingest_paths
from tests.browser_support import chromium_page, free_port, screenshot, settle, streamlit_server
from tests.conftest import FIXTURES
from tests.hostile_log import payload, write_hostile_log

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # one server, every page: minutes on a busy machine

# (path, page title, a text that shows the page has drawn its content, not only its title)
PAGES = [
    ("/", "Leaderboard", "Human baseline"),
    ("/progress", "Progress", "fit of"),
    ("/tmf", "Tech-Market-Fit", "Over time"),
    ("/errors", "Errors", "Attempts behind a bar or cell"),
    ("/drilldown", "Drilldown", "Transcript"),
    ("/diff", "Version diff", "Both trajectories"),
    ("/gem", "GEM-Bench", "No GEM-style data"),
    ("/upload", "Upload", "Delete a run"),
    ("/search?q=link&mode=words", "Search", "Attempts with a hit"),
    ("/clusters", "Failure clusters", "Compute the clusters"),
    ("/review", "Review", "Review queue"),
]
# Every anchor's href and every image's src, including SVG <a xlink:href> in Plotly charts.
LINKS_JS = """() => [...document.querySelectorAll('a, img, image, [href], [src]')].map(
    e => [e.getAttribute('href') || e.getAttribute('xlink:href') || e.getAttribute('src') || '',
          e.outerHTML.slice(0, 300), (e.closest('[data-testid]') || e).getAttribute('data-testid')])"""


@pytest.fixture
def beacon() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()


def outside_links(page: object, beacon_url: str) -> list[tuple[str, str, str]]:
    found = page.evaluate(LINKS_JS)  # type: ignore[attr-defined]
    hosts = (urlsplit(beacon_url).netloc, "www.example.com")
    base = str(page.url)  # type: ignore[attr-defined]
    # links to the app itself (drilldown?run=... with the payload in its query) are fine; outside hosts are not
    return [(u, html, where) for u, html, where in found if urlsplit(urljoin(base, u)).netloc in hosts]


def open_page(page: object, url: str, title: str, marker: str) -> str:
    """Open ``url`` and wait until the script has finished and drawn ``marker``; return the page's text."""
    page.goto(url, wait_until="domcontentloaded")  # type: ignore[attr-defined]
    page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=180_000)  # type: ignore[attr-defined]
    page.get_by_text(marker).first.wait_for(timeout=180_000)  # type: ignore[attr-defined]
    settle(page)
    # md_plain puts an invisible word joiner into URLs so Streamlit does not link them; read past it
    return str(page.locator("body").inner_text()).replace("\u2060", "")  # type: ignore[attr-defined]


# the drilldown's panels read and drawn only when opened (issue 33): opened on the hostile attempt, one by one
DRILLDOWN_PANELS = (
    "Runlens LLM judge verdicts",
    "Findings: error labels and rule findings",
    "Human reviews",
    "Same task in another run",
)


def open_panels(page: object, labels: tuple[str, ...]) -> str:
    """Open each collapsed panel named in ``labels`` (an expander's summary), wait for its content; the page's text."""
    for label in labels:
        page.locator("summary").filter(has_text=label).first.click()  # type: ignore[attr-defined]
        settle(page)
    return str(page.locator("body").inner_text()).replace("\u2060", "")  # type: ignore[attr-defined]


def test_log_text_never_becomes_a_link_or_an_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beacon: tuple[str, list[str]]
) -> None:
    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    beacon_url, hits = beacon
    db = tmp_path / "hostile.duckdb"
    log = write_hostile_log(tmp_path / "hostile.jsonl", beacon_url)
    assert [r.outcome for r in ingest_paths([log], db=db)] == ["ingested"]
    run, task = quote(payload(beacon_url, "r1")), quote(payload(beacon_url, "t1"))
    sql = f"SELECT agent, run_id FROM v_runs WHERE agent <> '{payload(beacon_url, 'q')}'"
    visits = [
        *PAGES,
        (f"/drilldown?run={run}&task={task}&sample=0", "Drilldown", "Transcript"),
        (f"/sql?q={quote(sql)}", "SQL", "Shareable link"),
    ]
    requested: list[str] = []
    with streamlit_server(db) as url, chromium_page(height=1600) as page:
        page.set_default_timeout(120_000)  # type: ignore[attr-defined]
        page.on("request", lambda req: requested.append(req.url))  # type: ignore[attr-defined]
        bodies = {}
        for i, (path, title, marker) in enumerate(visits):
            bodies[path] = open_page(page, url + path, title, marker)
            if title == "SQL":
                page.get_by_text("Query history").click()  # type: ignore[attr-defined]
                settle(page)
            if path.startswith("/drilldown?run="):
                bodies[path] = open_panels(page, DRILLDOWN_PANELS)
            screenshot(page, f"plaintext-{i}-{title.lower().replace(' ', '-')}")
            assert "Traceback" not in bodies[path], (path, bodies[path][:2000])
            assert outside_links(page, beacon_url) == [], path
        # the upload page takes a file named '..' (checked in a worker) without an error
        open_page(page, url + "/upload", "Upload", "Delete a run")
        page.locator('input[type="file"]').set_input_files(  # type: ignore[attr-defined]
            files=[{"name": "..", "mimeType": "application/json", "buffer": (FIXTURES / "good.jsonl").read_bytes()}]
        )
        page.get_by_role("heading", name="Preview").wait_for(timeout=180_000)  # type: ignore[attr-defined]
        settle(page)
        screenshot(page, "plaintext-upload-dotdot")
        assert "IsADirectoryError" not in page.locator("body").inner_text()  # type: ignore[attr-defined]
        page.wait_for_timeout(1000)  # type: ignore[attr-defined]
    assert hits == [], hits
    beacon_host = urlsplit(beacon_url).netloc
    assert [r for r in requested if urlsplit(r).netloc in (beacon_host, "www.example.com")] == []
    # the payload is there, as text: the leader's metric label and the drilldown's level
    assert re.search(r"Leader: agent-r[12] !\[x\]\(" + re.escape(beacon_url), bodies["/"]), bodies["/"][:3000]
    assert f"![x]({beacon_url}/img-level-t1.png)" in bodies[visits[-2][0]]

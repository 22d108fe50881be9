"""Run the real app with `streamlit run` and drive Debian's Chromium through Playwright."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scripts.servers import die_with_parent
from tests.conftest import ARTIFACTS, ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def streamlit_server(db: Path, *, timeout_s: float = 90.0, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start ``streamlit run app.py`` on a free loopback port with RUNLENS_DB=db (and ``env``); yield its URL."""
    port = free_port()
    env = {**os.environ, "RUNLENS_DB": str(db), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **(env or {})}
    log = ARTIFACTS / f"streamlit-{port}.log"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent(),  # a killed test process leaves no server running
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as resp:
                        if resp.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start; see {log}")
                time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def chromium_page(*, width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A Playwright page in Debian's headless Chromium (no browser download: executable_path is fixed)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            watch(page)
            yield page
        finally:
            browser.close()


def screenshot(page: object, name: str) -> Path:
    """Save a full-page screenshot under tests/artifacts/ and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # Streamlit scrolls inside its main block, so a "full page" screenshot is only the window: grow the window to
    # the block's height (at most 6,000 px) for the picture, then put it back
    size = page.viewport_size  # type: ignore[attr-defined]
    tall = page.evaluate(  # type: ignore[attr-defined]
        "() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stMainBlockContainer]')]"
        ".map(e => e.scrollHeight), 0)"
    )
    if size and tall > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(tall) + 40, 6000)})  # type: ignore[attr-defined]
        settle(page, grace_s=0.0)  # charts and grids redraw at the new size (a resize asks for no script run)
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    if size:
        page.set_viewport_size(size)  # type: ignore[attr-defined]
    return path


MENU = ".st-key-rl_nav"  # the app's own menu in the sidebar (ui/shell.py draw_menu)


def assert_app_navigation(page: Any) -> None:
    """The sidebar shows the app's sections (app.py's pages in the app's menu), not Streamlit's list of page files,
    which a deep link opened first after the server starts got while the page folder was named ``pages/``."""
    assert not page.locator('[data-testid="stSidebarNav"]').count()  # Streamlit's own menu is not drawn
    lines = {line.strip() for line in page.locator(MENU).inner_text().splitlines()}
    assert {"Results", "Analysis", "Data", "Leaderboard", "Version diff"} <= lines and "app" not in lines, lines


class ScriptClock:
    """When each script run of the page's session finished, as the browser received it: Streamlit's
    ``script_finished`` message on the websocket. Times an interaction from the click to the app's answer without
    polling the page (a poll only sees a rerun once its spinner shows)."""

    def __init__(self, page: Any) -> None:
        self.finished: list[float] = []
        page.on("websocket", self._watch)

    def _watch(self, ws: Any) -> None:
        ws.on("framereceived", self._frame)

    def _frame(self, payload: Any) -> None:
        if not isinstance(payload, bytes | bytearray):
            return
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        try:
            msg = ForwardMsg.FromString(bytes(payload))
        except Exception:  # noqa: BLE001 - a frame that is not a ForwardMsg is not a script run
            return
        if msg.WhichOneof("type") == "script_finished":
            self.finished.append(time.monotonic())

    def answer_s(self, page: Any, since: float, *, timeout_s: float = 120.0, quiet_s: float = 1.0) -> float:
        """Seconds from ``since`` (time.monotonic()) to the last script run that finished before the app stayed
        quiet for ``quiet_s`` (a page switch or a rerun the script asks for is part of the answer)."""
        deadline = since + timeout_s
        while time.monotonic() < deadline:
            page.wait_for_timeout(50)
            done = [t for t in self.finished if t > since]
            if done and time.monotonic() - done[-1] >= quiet_s:
                return round(done[-1] - since, 3)
        raise TimeoutError(f"no script run finished within {timeout_s:.0f} s")

    def answered_s(self, since: float) -> float:
        """Seconds from ``since`` to the last script run finished since (after ``settle``: the app's answer)."""
        done = [t for t in self.finished if t > since]
        if not done:
            raise TimeoutError("no script run finished since the action")
        return round(done[-1] - since, 3)


# What the page shows while the app works: Streamlit's "Running..." widget, a skeleton, an element of the last run
# not yet replaced, a Plotly chart not yet drawn; and the page's size (elements, characters of text) to see it still.
PAGE_STATE_JS = """() => [
  document.querySelectorAll(
    '[data-testid="stStatusWidget"], [data-testid="stSkeleton"], [data-stale="true"]').length
  + [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(e => !e.querySelector('.main-svg')).length,
  document.getElementsByTagName('*').length, document.body.innerText.length]"""


class ScriptWatch:
    """A page's script runs as its browser sends and receives them on Streamlit's websocket: a ``rerun_script``
    request (a click, Enter, Back, a page opened) or a ``new_session`` makes the session busy until a
    ``script_finished`` that is not a stop for a rerun (a run the script restarts with st.rerun, or a request that
    interrupts it, is part of the same answer). Attached before the page opens its websocket (``chromium_page``)."""

    def __init__(self, page: Any) -> None:
        self.busy: dict[Any, bool] = {}  # each open websocket of the page: is a run asked for or under way
        self.finished: list[float] = []  # when each run finished (time.monotonic())
        page.on("websocket", self._watch)

    def _watch(self, ws: Any) -> None:
        self.busy[ws] = False
        ws.on("framesent", lambda payload: self._sent(ws, payload))
        ws.on("framereceived", lambda payload: self._received(ws, payload))
        ws.on("close", lambda _: self.busy.pop(ws, None))

    def _sent(self, ws: Any, payload: Any) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = _parse(BackMsg, payload)
        if msg is not None and msg.WhichOneof("type") == "rerun_script" and ws in self.busy:
            self.busy[ws] = True

    def _received(self, ws: Any, payload: Any) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = _parse(ForwardMsg, payload)
        kind = msg.WhichOneof("type") if msg is not None else None
        if kind == "new_session" and ws in self.busy:
            self.busy[ws] = True
        elif kind == "script_finished" and msg is not None:
            if msg.script_finished != ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN and ws in self.busy:
                self.busy[ws] = False
            self.finished.append(time.monotonic())

    def running(self) -> bool:
        return any(self.busy.values())

    def connected(self) -> bool:
        return bool(self.busy)


def _parse(kind: Any, payload: Any) -> Any:
    if not isinstance(payload, bytes | bytearray):
        return None
    try:
        return kind.FromString(bytes(payload))
    except Exception:  # noqa: BLE001 - a frame that is not one of Streamlit's messages
        return None


_WATCHES: weakref.WeakKeyDictionary[Any, ScriptWatch] = weakref.WeakKeyDictionary()


def watch(page: Any) -> Any:
    """Follow ``page``'s script runs (for ``settle``); call it before the page opens the app. Returns the page."""
    _WATCHES[page] = ScriptWatch(page)
    return page


def settle(
    page: Any, *, since: float | None = None, timeout_s: float = 240.0, grace_s: float = 0.5, still_s: float = 0.3
) -> str:
    """Wait until the app has answered: the page connected to the app, no script run asked for or under way on its
    websocket, nothing running, stale or undrawn on the page, and the page unchanged for ``still_s`` (looks 100 ms
    apart); and a run finished after ``since`` (time.monotonic() before a page.goto: the new page's first run), or
    without ``since`` at least ``grace_s`` after the call unless a run finished meanwhile (the request of an action
    just made is on its way). Returns the page's text; fails with TimeoutError after ``timeout_s``."""
    clock = _WATCHES.get(page)
    if clock is None:
        raise RuntimeError("settle() needs a page watched from its start: chromium_page() or watch(page)")
    start = time.monotonic()
    last: list[int] | None = None
    still_since: float | None = None
    while True:
        page.wait_for_timeout(100)
        now = time.monotonic()
        busy, *size = page.evaluate(PAGE_STATE_JS)
        quiet = clock.connected() and not clock.running() and busy == 0 and size == last
        last = size
        still_since = (still_since or now) if quiet else None
        if since is None:
            answered = any(t > start for t in clock.finished) or now - start >= grace_s
        else:
            answered = any(t > since for t in clock.finished)
        if still_since is not None and now - still_since >= still_s and answered:
            break
        if now - start > timeout_s:
            raise TimeoutError(f"the app did not settle within {timeout_s:.0f} s: {page.url}")
    return str(page.locator("body").inner_text()).replace("\u2060", "")

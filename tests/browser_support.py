"""Run the real app with `streamlit run` and drive Debian's Chromium through Playwright."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
        page.wait_for_timeout(1500)  # type: ignore[attr-defined]  # charts redraw at the new size
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

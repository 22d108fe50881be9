"""Defaults a newcomer cannot get wrong (issue 30): the app listens on loopback unless told otherwise, and no page
makes a request that leaves localhost (the page icon was fetched from fonts.gstatic.com)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ingest.pipeline import ingest_paths
from scripts.servers import die_with_parent
from tests.browser_support import chromium_page, free_port, streamlit_server
from tests.conftest import FIXTURES, ROOT
from tests.test_browser_plaintext import open_page


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} writes them) of sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


def test_the_app_listens_on_loopback_by_default(tmp_path: Path) -> None:
    """`streamlit run app.py` with no address (what `bash run.sh app` runs) binds 127.0.0.1, not every interface."""
    port = free_port()
    env = {**os.environ, "RUNLENS_DB": str(tmp_path / "empty.duckdb"), "RUNLENS_SKIP_DEMO": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent(),  # a killed test process leaves no server running
    )
    try:
        deadline = time.monotonic() + 60
        while not _listening_addresses(port):
            assert proc.poll() is None and time.monotonic() < deadline, "streamlit did not start"
            time.sleep(0.3)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as resp:
            assert resp.status == 200
        assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only: no 00000000 (0.0.0.0) nor [::]
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.browser
@pytest.mark.slow
def test_no_request_leaves_localhost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chromium, every request intercepted: pages, their icons and fonts all come from the app itself."""
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    db = tmp_path / "runlens.duckdb"
    assert [r.outcome for r in ingest_paths([FIXTURES / "good.jsonl"], db=db)] == ["ingested"]
    requests: list[str] = []
    with streamlit_server(db) as url, chromium_page() as page:
        page.on("request", lambda request: requests.append(request.url))  # type: ignore[attr-defined]
        for path, title, marker in (("", "Leaderboard", "Leaderboard"), ("sql", "SQL", "Examples")):
            open_page(page, f"{url}/{path}", title, marker)
        icon = page.evaluate("document.querySelector('link[rel~=icon]')?.href || ''")  # type: ignore[attr-defined]
    outside = [
        u for u in requests if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).hostname != "127.0.0.1"
    ]
    assert requests and not outside, outside
    assert "gstatic" not in icon and icon, icon

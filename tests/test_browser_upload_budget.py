"""The Upload page within the server's memory budget (issue 30), in Chromium against `streamlit run`: files past
what the page takes at once are named with the reason, dropped from the server's memory and the uploader emptied;
the server's memory goes back to what it was."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from ingest.pipeline import ingest_paths
from tests.browser_support import chromium_page, screenshot, streamlit_server
from tests.conftest import FIXTURES
from tests.test_browser_plaintext import open_page
from tests.treemem import listening_pid, tree_rss_bytes

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MB = 1024**2


def test_uploads_past_the_total_are_dropped_from_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    db = tmp_path / "runlens.duckdb"
    assert [r.outcome for r in ingest_paths([FIXTURES / "good.jsonl"], db=db)] == ["ingested"]
    files = []
    for i in range(3):  # 3 x 80 MB: each within the 100 MB a file, together past the 200 MB at once
        path = tmp_path / f"part-{i}.jsonl"
        path.write_bytes(os.urandom(80 * MB))
        files.append(str(path))
    with streamlit_server(db) as url, chromium_page() as page:
        pid = listening_pid(int(url.rsplit(":", 1)[1]))
        open_page(page, f"{url}/upload", "Upload", "Ingest history")
        before = tree_rss_bytes(pid)
        page.locator('input[type="file"]').set_input_files(files)  # type: ignore[attr-defined]
        main = page.locator('[data-testid="stMain"]')  # type: ignore[attr-defined]
        main.get_by_text(re.compile("past the 200 MB the page takes at once")).first.wait_for(timeout=180_000)
        text = str(main.inner_text())
        screenshot(page, "upload-budget")
        assert "part-2.jsonl: past the 200 MB the page takes at once; not read." in text
        assert "The files were dropped from the server" in text
        assert not main.locator('[data-testid="stFileUploaderFile"]').count()  # the uploader is empty
        deadline = time.monotonic() + 30
        while tree_rss_bytes(pid) - before > 120 * MB and time.monotonic() < deadline:
            time.sleep(0.5)
        kept = (tree_rss_bytes(pid) - before) / MB
        assert kept < 120, kept  # not the 240 MB of files (nor twice that)

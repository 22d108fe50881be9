"""The team store through the product's other ways in: the upload page's helpers and its run deletion, and the
live OTLP receiver (``python -m ingest serve-otlp --db ducklake:...``), each writing through the one writer."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from ingest import uploads
from store import lake as store_lake
from tests.conftest import FIXTURES, ROOT
from tests.otlp_producer import expected_by_trace, make_spans, otlp_json_lines
from tests.test_otlp_receiver import TRACE_IDS_SQL, Receiver, _free_port


def _rows(lake: str, sql: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    with rdb.reader(lake) as con:
        return con.execute(sql, params or []).fetchall()


def test_upload_preview_ingest_and_delete_on_a_lake(lake: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with rdb.reader(lake) as con:
        preview = uploads.preview_file(con, FIXTURES / "good.jsonl")
    assert preview.outcome == "ready" and preview.n_attempts > 0
    result = uploads.ingest_one(FIXTURES / "good.jsonl", db=lake)
    assert (result.outcome, result.n_attempts) == ("ingested", preview.n_attempts)
    with rdb.reader(lake) as con:
        assert uploads.preview_file(con, FIXTURES / "good.jsonl").outcome == "duplicate"
    # the page's delete, confirmed, on the lake
    monkeypatch.delenv("RUNLENS_READ_ONLY", raising=False)
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("views/upload.py").run()
    assert not at.exception, [e.value for e in at.exception]
    run_id = at.selectbox(key="up_del_run").value
    at.checkbox(key="up_del_confirm").check().run()
    at.button(key="up_del_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _rows(lake, "SELECT count(*) FROM attempts WHERE run_id = ?", [run_id]) == [(0,)]
    assert _rows(lake, "SELECT action, subject FROM audit_log") == [("run_deleted", run_id)]


def test_the_otlp_receiver_writes_into_a_lake(lake: str, tmp_path: Path) -> None:
    receiver = Receiver(lake, _free_port(), tmp_path / "receiver.log")  # type: ignore[arg-type]
    try:
        spans = make_spans()
        ids = list(expected_by_trace(spans))
        body = otlp_json_lines(spans).splitlines()[2]  # the travel-agent trace, as one OTLP/JSON request
        assert receiver.post(body).status_code == 200
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _rows(lake, TRACE_IDS_SQL, [ids]) != [(1,)]:
            time.sleep(0.2)
        assert receiver.post(body).status_code == 200  # a client's retry after the trace was written
        while time.monotonic() < deadline and "already stored" not in receiver.log():
            time.sleep(0.2)
        assert "1 trace(s) already stored" in receiver.log()
        assert _rows(lake, TRACE_IDS_SQL, [ids]) == [(1,)], receiver.log()
        with rdb.reader(lake) as con:
            extras = [
                json.loads(e)
                for (e,) in con.execute(
                    f"SELECT commit_extra_info FROM {store_lake.alias(con)}.snapshots() WHERE commit_extra_info IS NOT NULL"
                ).fetchall()
            ]
        assert [e["format"] for e in extras] == ["otlp"], extras  # the commit says what was ingested
    finally:
        receiver.proc.terminate()
        receiver.proc.wait(timeout=30)

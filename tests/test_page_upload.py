"""Upload page (AppTest), its helpers (preview, ingest, failed-upload sidecar) and run deletion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store
from analytics.plaintext import md_plain
from ingest import uploads
from ingest.pipeline import ingest_paths
from store import reader
from tests.adapter_helpers import counts, rows
from tests.conftest import FIXTURES, ROOT, shared_data


def _history(at: AppTest):
    """The ingest history table (dataframes are found by their columns; AppTest has no key lookup for them)."""
    return next(d.value for d in at.dataframe if "Hash" in d.value.columns and "Runs" in d.value.columns)


def _page(db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("RUNLENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("views/upload.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_page_shows_history_and_deletes_with_confirmation(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNLENS_READ_ONLY", raising=False)
    at = _page(fixture_db, monkeypatch)
    history = _history(at)
    path, n_attempts, digest = rows(fixture_db, "SELECT path, n_attempts, content_hash FROM ingest_log")[0]
    assert list(history["Attempts"]) == [str(n_attempts)]
    assert list(history["File"]) == [Path(path).name] and list(history["Hash"]) == [digest[:12] + "…"]
    assert "None" not in history.to_string() and "NaT" not in history.to_string()
    shown = list(next(d for d in at.dataframe if "Hash" in d.value.columns).proto.column_order)
    # what a person reads: the file, what it held and when; the server's upload folder only on demand
    assert shown[0] == "File" and {"Runs", "Attempts", "Ingested (UTC)"} <= set(shown) and "Folder" not in shown, shown
    run_id = at.selectbox(key="up_del_run").value
    n_before = rows(fixture_db, "SELECT count(*) FROM attempts WHERE run_id = ?", [run_id])[0][0]
    assert n_before > 0
    assert at.button(key="up_del_go").disabled  # nothing happens without the confirmation
    at.checkbox(key="up_del_confirm").check().run()
    at.button(key="up_del_go").click().run()
    assert not at.exception
    assert any(f"Deleted {md_plain(run_id)}" in s.value for s in at.success)  # log text is escaped Markdown
    assert rows(fixture_db, "SELECT count(*) FROM attempts WHERE run_id = ?", [run_id]) == [(0,)]
    assert rows(fixture_db, "SELECT action, subject FROM audit_log") == [("run_deleted", run_id)]


def test_read_only_hides_upload_and_delete(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_READ_ONLY", "1")
    at = _page(fixture_db, monkeypatch)
    assert any("switched off" in i.value for i in at.info)
    assert not [w for w in at.selectbox if w.key == "up_del_run"]
    assert len(_history(at)) == 1


def test_preview_counts_without_writing(fixture_db: Path, tmp_path: Path) -> None:
    src = json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())[:6]
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps(src))
    before = counts(fixture_db)
    with reader(fixture_db) as con:
        preview = uploads.preview_file(con, path)
        dup = uploads.preview_file(con, FIXTURES / "good.jsonl")
    assert (preview.format, preview.outcome, preview.n_runs, preview.n_attempts) == ("openai-messages", "ready", 1, 6)
    assert dup.outcome == "duplicate"
    assert counts(fixture_db) == before
    result = uploads.ingest_one(path, db=fixture_db)
    assert (result.outcome, result.n_attempts, result.n_steps) == ("ingested", 6, preview.n_steps)
    assert preview.n_steps > 6


def test_failed_upload_goes_to_the_sidecar_not_the_db(fixture_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record": "attempt", "run_id": "nope", "task_id": "T1", "score": 1}\n')
    before = counts(fixture_db)
    with reader(fixture_db) as con:
        preview = uploads.preview_file(con, bad)
    assert preview.outcome == "invalid" and "unknown run 'nope'" in preview.errors[0]
    result = uploads.ingest_one(bad, db=fixture_db)
    assert result.outcome == "failed"
    assert counts(fixture_db) == before
    failed = uploads.failed_uploads(fixture_db)
    assert list(failed["file"]) == ["bad.jsonl"] and "unknown run" in failed["errors"][0]


def test_delete_removes_everything_of_the_run_in_one_go(tmp_db: Path) -> None:
    ingest_paths([FIXTURES / "good.jsonl"], db=tmp_db)
    run_id, n_attempts = rows(tmp_db, "SELECT run_id, count(*) FROM attempts GROUP BY 1 ORDER BY 2 DESC LIMIT 1")[0]
    others = rows(tmp_db, "SELECT count(*) FROM attempts WHERE run_id <> ?", [run_id])[0][0]
    done = store.delete_run(run_id, db=tmp_db, actor="test")
    assert done.n_attempts == n_attempts
    assert rows(tmp_db, "SELECT count(*) FROM attempts") == [(others,)]
    orphans = rows(
        tmp_db,
        "SELECT (SELECT count(*) FROM steps WHERE attempt_id NOT IN (SELECT attempt_id FROM attempts)),"
        " (SELECT count(*) FROM error_labels WHERE attempt_id NOT IN (SELECT attempt_id FROM attempts)),"
        " (SELECT count(*) FROM attempt_metrics WHERE attempt_id NOT IN (SELECT attempt_id FROM attempts)),"
        " (SELECT count(*) FROM ratings WHERE attempt_id NOT IN (SELECT attempt_id FROM attempts))",
    )
    assert orphans == [(0, 0, 0, 0)]
    detail = json.loads(rows(tmp_db, "SELECT detail FROM audit_log WHERE subject = ?", [run_id])[0][0])
    assert detail["actor"] == "test" and detail["n_attempts"] == n_attempts
    with pytest.raises(store.RunNotFoundError):
        store.delete_run(run_id, db=tmp_db)


def test_deleting_every_run_of_a_file_releases_it(tmp_db: Path) -> None:
    ingest_paths([FIXTURES / "good.jsonl"], db=tmp_db)
    n = rows(tmp_db, "SELECT count(*) FROM attempts")[0][0]
    for (run_id,) in rows(tmp_db, "SELECT run_id FROM runs"):
        store.delete_run(run_id, db=tmp_db)
    assert rows(tmp_db, "SELECT outcome FROM ingest_log") == [("deleted",)]
    again = ingest_paths([FIXTURES / "good.jsonl"], db=tmp_db)
    assert again[0].outcome == "ingested" and rows(tmp_db, "SELECT count(*) FROM attempts") == [(n,)]


def _partial_trace_upload() -> bytes:
    """An OTLP file of two traces: one whole, one without its root span (stored, marked ``trace_partial``)."""
    from tests.test_adapter_otlp import SCORELESS, TRACE, _line, _span_json

    return (
        SCORELESS[0] + "\n" + _line(_span_json(TRACE, "eee19b7ec3c1b174", parent="00000000000000aa")) + "\n"
    ).encode()


def test_an_upload_says_how_many_attempts_are_partial_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest import upload_worker

    db = tmp_path / "db.duckdb"
    upload = [("traces.jsonl", _partial_trace_upload())]
    [preview] = upload_worker.preview_uploads(upload, db=db)  # in the page's worker, as the page calls it
    assert (preview.outcome, preview.n_attempts, preview.n_partial) == ("ready", 2, 1)
    [done] = upload_worker.ingest_uploads(upload, ["traces.jsonl"], db=db)
    assert (done.outcome, done.n_attempts, done.n_partial) == ("ingested", 2, 1)
    assert rows(db, "SELECT count(*) FROM attempts WHERE json_exists(extra, '$.trace_partial')") == [(1,)]

    monkeypatch.delenv("RUNLENS_READ_ONLY", raising=False)
    at = _page(db, monkeypatch)
    at.session_state["up_done"] = [(done, (), ())]  # what the page keeps after its ingest button, for the rerun
    at.run()
    assert not at.exception
    [message] = [s.value for s in at.success if md_plain("traces.jsonl") in s.value]
    assert "1 attempt stored as partial traces (no root span; marked partial)" in message
    whole = upload_worker.IngestSummary("whole.jsonl", "ingested", 1, 2, 3)
    # the preview's retry note (store.retries) stays with the file's result once it is ingested
    at.session_state["up_done"] = [(whole, (), ("run r-2: retry of run r-1 (bench_a)",))]
    at.run()
    assert not any("partial" in s.value for s in at.success)  # nothing said when no attempt is partial
    [message] = [s.value for s in at.success if md_plain("whole.jsonl") in s.value]
    assert md_plain("run r-2: retry of run r-1 (bench_a)") in message

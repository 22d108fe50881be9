"""Deleting a run leaves none of its long texts behind (tool results stored once in ``texts``), and keeps every
text another run still names: what the SQL console can read after a deletion is what the remaining runs hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.pipeline import ingest_paths
from store import delete_run, reader

OWN_A = "result only run A has " * 100
OWN_B = "result only run B has " * 100
SHARED = "a long result both runs got " * 100


def _attempt(run: str, task: str, results: list[str]) -> dict[str, object]:
    steps = [
        {"round": 1, "kind": "tool_call", "tool": "fetch", "args": {"i": i}, "result": r} for i, r in enumerate(results)
    ]
    return {
        "record": "attempt",
        "run_id": run,
        "task_id": task,
        "sample": 0,
        "score": 0.0,
        "answer": "x",
        "steps": steps,
    }


def _store(folder: Path, backend: str) -> str:
    lines = [
        {"record": "benchmark", "benchmark": "b", "scoring": "binary"},
        {"record": "task", "benchmark": "b", "task_id": "T1"},
        {"record": "task", "benchmark": "b", "task_id": "T2"},
        {"record": "run", "run_id": "r-a", "benchmark": "b", "agent": "A"},
        {"record": "run", "run_id": "r-b", "benchmark": "b", "agent": "B"},
        _attempt("r-a", "T1", [OWN_A, SHARED]),
        _attempt("r-a", "T2", [OWN_A, "short"]),
        _attempt("r-b", "T1", [OWN_B, SHARED]),
    ]
    path = folder / "runs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = str(folder / "db.duckdb") if backend == "file" else f"ducklake:sqlite:{folder / 'db.lake'}"
    [result] = ingest_paths([path], db=db)
    assert result.outcome == "ingested", result.error
    return db


def rows(db: str, sql: str) -> list[tuple[object, ...]]:
    with reader(db) as con:
        return con.execute(sql).fetchall()


def _texts(db: str) -> list[str]:
    return sorted(str(t)[:22] for (t,) in rows(db, "SELECT text FROM texts"))


@pytest.mark.parametrize("backend", ["file", "local lake"])
def test_a_deleted_runs_own_texts_go_and_shared_ones_stay(tmp_path: Path, backend: str) -> None:
    db = _store(tmp_path, backend)
    assert _texts(db) == sorted([OWN_A[:22], OWN_B[:22], SHARED[:22]])
    done = delete_run("r-a", db=db, actor="test")
    assert (done.n_attempts, done.n_texts) == (2, 1)
    assert _texts(db) == sorted([OWN_B[:22], SHARED[:22]])  # r-b still names the shared result
    [(detail,)] = rows(db, "SELECT detail FROM audit_log WHERE action = 'run_deleted'")
    assert json.loads(detail)["n_texts"] == 1
    # every long result the remaining run names is still readable in full
    [(n_missing,)] = rows(
        db,
        "SELECT count(*) FROM steps s ANTI JOIN texts t ON t.text_hash = s.result_hash WHERE s.result_hash IS NOT NULL",
    )
    assert n_missing == 0
    assert delete_run("r-b", db=db).n_texts == 2
    assert rows(db, "SELECT count(*) FROM texts") == [(0,)]

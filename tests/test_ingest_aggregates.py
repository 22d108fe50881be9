"""The aggregates an ingested file writes (store/aggregates.py) equal what migration 008's backfill computes from
every attempt, whether the file only adds runs of its own (``insert_file``: its rows inserted straight from its
attempts, with or without error labels) or adds attempts to a run stored before (``refresh_file``: its rows are
replaced)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import store as rdb
from ingest import pipeline
from ingest.pipeline import ingest_paths
from ingest.records import Bundle
from tests.test_aggregates import KEYS, assert_same, from_attempts, stored

CODES = ["TE", "PE", "DE"]


def _log(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _attempts(run: str, sample: int, n_tasks: int = 4) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for t in range(n_tasks):
        passed = (t + sample) % 2 == 0
        rec: dict[str, object] = {
            "record": "attempt",
            "run_id": run,
            "task_id": f"T{t}",
            "sample": sample,
            "score": passed,
            "steps": [{"kind": "tool_call", "tool": "search", "args": {"q": t}}, {"kind": "final"}],
        }
        if not passed:
            rec["errors"] = [CODES[t % 3], CODES[(t + sample + 1) % 3]]
        out.append(rec)
    return out


def _run(run: str) -> dict[str, object]:
    return {"record": "run", "run_id": run, "benchmark": "b", "agent": f"agent-{run}"}


@pytest.mark.parametrize(("backend", "chunk_bytes"), [("file", None), ("local lake", None), ("local lake", 600)])
def test_refresh_of_new_and_extended_runs_equals_the_backfill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, chunk_bytes: int | None
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    spills: list[int] = []
    if chunk_bytes is not None:  # every file read in parts (a large file's path): its attempt ids span the parts
        monkeypatch.setattr(pipeline, "CHUNK_BYTES", chunk_bytes)
        spill = Bundle.spill

        def counted(self: Bundle, parent: str | None = None) -> None:
            spills.append(1)
            spill(self, parent)

        monkeypatch.setattr(Bundle, "spill", counted)
    db = str(tmp_path / "s.duckdb") if backend == "file" else f"ducklake:sqlite:{tmp_path / 's.lake'}"
    tasks: list[dict[str, object]] = [{"record": "task", "benchmark": "b", "task_id": f"T{t}"} for t in range(4)]
    head: list[dict[str, object]] = [{"record": "benchmark", "benchmark": "b", "scoring": "binary"}, *tasks]
    files = [
        _log(tmp_path / "a.jsonl", [*head, _run("A"), *_attempts("A", 0)]),  # a new run only
        _log(tmp_path / "b.jsonl", [_run("B"), *_attempts("B", 0), *_attempts("A", 1)]),  # A stored before
        _log(tmp_path / "c.jsonl", [*_attempts("A", 2)]),  # only more attempts of a stored run
        _log(tmp_path / "d.jsonl", [_run("C"), *_attempts("C", 0), *_attempts("C", 1)]),
        # new runs without error labels: no rows for the labels' tables
        _log(
            tmp_path / "e.jsonl",
            [_run("D"), *({k: v for k, v in a.items() if k != "errors"} for a in _attempts("D", 3))],
        ),
    ]
    for f in files:  # one batch per file, so each file meets the runs the earlier ones stored
        assert [r.outcome for r in ingest_paths([f], db=db, jobs=1)] == ["ingested"], f
        with rdb.reader(db) as con:
            for table in KEYS:
                assert_same(stored(con, table), from_attempts(con, table), f"{f.name}: {table}")
    with rdb.reader(db) as con:
        rows = con.execute("SELECT run_id, sum(n_attempts) FROM run_task_stats GROUP BY 1 ORDER BY 1").fetchall()
    assert [(r, int(n)) for r, n in rows] == [("A", 12), ("B", 4), ("C", 8), ("D", 4)]
    assert (len(spills) > len(files)) == (chunk_bytes is not None)  # in parts: more parts than files

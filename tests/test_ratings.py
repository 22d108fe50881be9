"""Rating records: stored per attempt with their rater, and unknown fields kept (DESIGN: never dropped)."""

from __future__ import annotations

import json
from pathlib import Path

from ingest.pipeline import ingest_paths
from store import query_rows, reader

HEAD = [
    {"record": "benchmark", "benchmark": "rb", "scoring": "binary"},
    {"record": "task", "benchmark": "rb", "task_id": "t1"},
    {"record": "run", "run_id": "r1", "benchmark": "rb", "agent": "A", "kind": "llm", "eval_date": "2026-01-01"},
    {"record": "attempt", "run_id": "r1", "task_id": "t1", "sample": 0, "score": 1.0},
]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _ratings(db: Path) -> list[tuple]:
    with reader(db) as con:
        return query_rows(
            con,
            "SELECT a.task_id, g.rater, g.rater_kind, g.dimension, g.value, g.extra::VARCHAR "
            "FROM ratings g JOIN attempts a USING (attempt_id) ORDER BY g.rater",
        )


def test_unknown_rating_fields_are_kept(tmp_path: Path) -> None:
    rating = {
        "record": "rating",
        "run_id": "r1",
        "task_id": "t1",
        "sample": 0,
        "rater": "ann",
        "rater_kind": "human",
        "dimension": "helpfulness",
        "value": 4,
        "rationale": "clear, cites the source",
        "rubric": {"version": 2, "scale": [1, 5]},
    }
    db = tmp_path / "r.duckdb"
    assert [r.outcome for r in ingest_paths([_write(tmp_path / "a.jsonl", [*HEAD, rating])], db=db)] == ["ingested"]
    [(task, rater, kind, dim, value, extra)] = _ratings(db)
    assert (task, rater, kind, dim, value) == ("t1", "ann", "human", "helpfulness", 4.0)
    assert json.loads(extra) == {"rationale": "clear, cites the source", "rubric": {"version": 2, "scale": [1, 5]}}


def test_a_rating_of_an_attempt_already_stored_has_no_extra_when_none_is_given(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    ingest_paths([_write(tmp_path / "a.jsonl", HEAD)], db=db)
    later = {"record": "rating", "run_id": "r1", "task_id": "t1", "rater": "gpt", "dimension": "d", "value": 0.5}
    assert [r.outcome for r in ingest_paths([_write(tmp_path / "b.jsonl", [later])], db=db)] == ["ingested"]
    assert _ratings(db) == [("t1", "gpt", "llm", "d", 0.5, None)]

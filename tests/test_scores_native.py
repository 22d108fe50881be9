"""Every score of an attempt in native JSONL (``scores``): stored per scorer, validated at its line, rankable."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from analytics import leaderboard as lb
from analytics.scorers import ScorerNotFoundError
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.adapter_helpers import rows


def _log(tmp_path: Path, attempts: list[dict[str, object]]) -> Path:
    lines = [
        {"record": "benchmark", "benchmark": "b", "scoring": "binary"},
        *({"record": "task", "benchmark": "b", "task_id": f"t{i}"} for i in range(3)),
        {"record": "run", "run_id": "r1", "benchmark": "b", "agent": "a"},
        *attempts,
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _attempt(i: int, scores: object) -> dict[str, object]:
    return {"record": "attempt", "run_id": "r1", "task_id": f"t{i}", "score": i % 2, "scores": scores}


def test_scores_are_stored_and_ranked_by_name(tmp_path: Path, tmp_db: Path) -> None:
    ratings = [2.0, 9.0, 6.5]
    attempts = [
        _attempt(i, [{"scorer": "exact", "value": i % 2, "is_headline": True}, {"scorer": "rating", "value": r}])
        for i, r in enumerate(ratings)
    ]
    res = ingest_paths([_log(tmp_path, attempts)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    assert rows(tmp_db, "SELECT scorer, count(*), sum(value) FROM scores GROUP BY 1 ORDER BY 1") == [
        ("exact", 3, 1.0),
        ("rating", 3, sum(ratings)),
    ]
    con = duckdb.connect(str(tmp_db), read_only=True)
    try:
        board = lb.leaderboard(con, RunFilter(benchmark="b"), scorer="rating")
        with pytest.raises(ScorerNotFoundError, match="scorers: exact, rating"):
            lb.leaderboard(con, RunFilter(benchmark="b"), scorer="bleu")
    finally:
        con.close()
    row = board[board["slice"] == "all"].iloc[0]
    assert row["mean_score"] == pytest.approx(sum(ratings) / 3) and row["scale"] == "raw"


@pytest.mark.parametrize(
    ("scores", "where", "reason"),
    [
        ("x", "scores", "expected an array"),
        ([{"value": 1}], "scores[0].scorer", "missing required field"),
        ([{"scorer": "a", "value": "C"}], "scores[0].value", "expected a number"),
        ([{"scorer": "a", "value": 1}, {"scorer": "a", "value": 0}], "scores[1].scorer", "given twice"),
    ],
)
def test_bad_scores_are_refused_at_their_line(
    tmp_path: Path, tmp_db: Path, scores: object, where: str, reason: str
) -> None:
    path = _log(tmp_path, [_attempt(0, scores)])
    res = ingest_paths([path], db=tmp_db)
    assert res[0].outcome == "failed"
    assert f"{path}:6: {where}: " in str(res[0].error) and reason in str(res[0].error)
    assert rows(tmp_db, "SELECT count(*) FROM scores") == [(0,)]


def test_gate_compares_one_scorer(tmp_path: Path, tmp_db: Path) -> None:
    """``gate --scorer``: the candidate's ratings are lower on every task (worse), its headline score is not."""
    from analytics import gate

    lines = [
        {"record": "benchmark", "benchmark": "b", "scoring": "binary"},
        *({"record": "task", "benchmark": "b", "task_id": f"t{i}"} for i in range(12)),
    ]
    for run, shift in (("base", 0.0), ("cand", -3.0)):
        lines.append({"record": "run", "run_id": run, "benchmark": "b", "agent": run})
        lines += [
            {
                "record": "attempt",
                "run_id": run,
                "task_id": f"t{i}",
                "score": 1,
                "scores": [{"scorer": "rating", "value": 8.0 + shift + (i % 3) * 0.5}],
            }
            for i in range(12)
        ]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert ingest_paths([path], db=tmp_db)[0].outcome == "ingested"
    con = duckdb.connect(str(tmp_db), read_only=True)
    try:
        headline = gate.gate(con, baseline="base", candidate="cand")
        rated = gate.gate(con, baseline="base", candidate="cand", scorer="rating")
        with pytest.raises(ScorerNotFoundError):
            gate.gate(con, baseline="base", candidate="cand", scorer="bleu")
    finally:
        con.close()
    assert headline.verdict == "not worse" and headline.metric == "pass@1"
    assert rated.verdict == "worse" and rated.metric == "mean_score"
    assert rated.test.diff == pytest.approx(-3.0) and gate.report(rated)["scorer"] == "rating"

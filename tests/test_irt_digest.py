"""The IRT data digest (analytics/irt/load.py) read from the runs and their per-(run, task) counts kept at ingest
(issue 33): it changes after every write that changes a benchmark's IRT input (the rows ``load_responses`` gives,
sample numbers aside, as the fit is order-free) and only then, on the demo (file store) and on a generated store
(local lake); the same data ingested in another order gives the same digest. The per-attempt digest it replaces is
kept here as a reference: every write that changes one changes the other."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import store as rdb
from analytics import irt
from store import derived
from store.attempt_update import LateScore, replace_attempts, set_scores
from store.delete import delete_run_con
from tests.conftest import ROOT

# the digest before issue 33: a hash of every attempt of the benchmark
PER_ATTEMPT_SQL = """
SELECT count(*), bit_xor(h), sum(h % 1000000007), count(DISTINCT subject)
FROM (SELECT hash(r.agent, coalesce(r.agent_version, ''), r.run_id, a.task_id, a.sample,
                  coalesce(a.passed, false), coalesce(r.family, ''), r.eval_date) AS h,
             r.agent || coalesce(r.agent_version, '') AS subject
      FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?)
"""
INPUT_COLUMNS = ["subject", "agent", "agent_version", "family", "eval_date", "task_id", "passed"]

State = dict[str, tuple[str, str, list[tuple[Any, ...]]]]


def state(db: str | Path) -> State:
    """Per benchmark: the digest, the per-attempt digest, and the IRT input (sorted rows without sample numbers)."""
    out: State = {}
    with rdb.reader(db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            obs = irt.load_responses(con, benchmark=bench)[INPUT_COLUMNS]
            rows = sorted(tuple(str(v) for v in r) for r in obs.itertuples(index=False))
            old = ":".join(str(v) for v in rdb.query_rows(con, PER_ATTEMPT_SQL, [bench])[0])
            out[bench] = (irt.data_digest(con, benchmark=bench), old, rows)
    return out


def assert_follows(before: State, after: State, changed: set[str], what: str) -> None:
    """The digest changed exactly for the benchmarks whose IRT input changed, and those are ``changed``."""
    for bench in sorted(set(before) | set(after)):
        if bench not in after:  # a benchmark's last run went: nothing left to fit
            assert bench in changed, (what, bench)
            continue
        input_changed = bench not in before or before[bench][2] != after[bench][2]
        assert input_changed == (bench in changed), (what, bench)
        digest_changed = bench not in before or before[bench][0] != after[bench][0]
        assert digest_changed == input_changed, (what, bench)
        if bench in before and before[bench][1] == after[bench][1]:  # the per-attempt digest unchanged: so is this
            assert not digest_changed, (what, bench)


def bench_of(con: Any, attempt_id: int) -> str:
    return str(
        rdb.query_rows(
            con, "SELECT r.benchmark FROM attempts a JOIN runs r USING (run_id) WHERE a.attempt_id = ?", [attempt_id]
        )[0][0]
    )


def writes(db: str | Path) -> None:
    """Each write the IRT input can see (and some it cannot), the digest checked after each."""
    before = state(db)
    with rdb.writer(db) as con:
        (aid, passed, score) = rdb.query_rows(
            con,
            "SELECT attempt_id, passed, score FROM attempts WHERE passed IS NOT NULL AND score IS NOT NULL "
            "ORDER BY attempt_id LIMIT 1",
        )[0]
        bench = bench_of(con, int(aid))
        with rdb.transaction(con):  # a late score that keeps the verdict: not the IRT's input
            set_scores(con, [LateScore(int(aid), float(score) / 2, float(score) / 2, bool(passed))], source="test")
    after = state(db)
    assert_follows(before, after, set(), "late score, same verdict")
    before = after
    with rdb.writer(db) as con, rdb.transaction(con):  # the verdict turned over
        set_scores(con, [LateScore(int(aid), 0.0 if passed else 1.0, None, not passed)], source="test")
    after = state(db)
    assert_follows(before, after, {bench}, "late score, verdict turned")
    before = after
    with rdb.writer(db) as con:  # a pass given to one sample and taken from another of the same run and task
        pair = rdb.query_rows(
            con,
            "SELECT min(attempt_id) FILTER (WHERE passed), min(attempt_id) FILTER (WHERE NOT passed) "
            "FROM attempts GROUP BY run_id, task_id "
            "HAVING count(*) FILTER (WHERE passed) > 0 AND count(*) FILTER (WHERE NOT passed) > 0 "
            "ORDER BY 1 LIMIT 1",
        )
        if pair:
            yes, no = (int(v) for v in pair[0])
            with rdb.transaction(con):
                set_scores(con, [LateScore(yes, 0.0, None, False), LateScore(no, 1.0, None, True)], source="test")
    after = state(db)
    assert_follows(before, after, set(), "verdicts swapped within a (run, task)")
    before = after
    with rdb.writer(db) as con:  # judge labels on a failed attempt: not the IRT's input
        failed = int(rdb.query_rows(con, "SELECT min(attempt_id) FROM attempts WHERE passed = false")[0][0])
        verdict = {"prompt_version": "v1", "model": "m", "verdict": '{"result_correct": false}', "is_failure": True,
                   "failure": None, "raw_output": "", "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0,
                   "created_at": dt.datetime(2026, 1, 1), "attempt_id": failed,
                   "labels": [("E1", "x")]}  # fmt: skip
        derived.replace_judge_outcomes(con, [verdict])
    after = state(db)
    assert_follows(before, after, set(), "judge labels")
    before = after
    with rdb.writer(db) as con:  # replaced attempts (deleted in the replacing transaction)
        gone = int(rdb.query_rows(con, "SELECT max(attempt_id) FROM attempts")[0][0])
        bench = bench_of(con, gone)
        with rdb.transaction(con):
            assert replace_attempts(con, [gone], reason="test", detail={}) == 1
    after = state(db)
    assert_follows(before, after, {bench}, "replaced attempt")
    before = after
    with rdb.writer(db) as con:  # a deleted run
        run_id, bench = rdb.query_rows(con, "SELECT run_id, benchmark FROM runs ORDER BY run_id LIMIT 1")[0]
        delete_run_con(con, str(run_id), actor="test")
    after = state(db)
    assert_follows(before, after, {str(bench)}, "deleted run")


def test_demo_digest_follows_every_write(demo_db: Path) -> None:
    writes(demo_db)


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen")
    cmd = [sys.executable, str(ROOT / "bench" / "gen_logs.py"), "--attempts", "2000", "--runs", "6"]
    cmd += ["--benchmarks", "2", "--out", str(out), "--seed", "5"]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def test_generated_lake_digest_follows_ingest_and_every_write(
    generated_logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.pipeline import ingest_paths

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    db = f"ducklake:sqlite:{tmp_path / 'gen.lake'}"
    files = sorted(generated_logs.glob("*"))
    assert len(files) >= 3
    assert {r.outcome for r in ingest_paths(files[:-1], db=db, jobs=1)} == {"ingested"}
    before = state(db)
    with rdb.reader(db) as con:
        new_bench = {str(r[0]) for r in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs")}
    assert [r.outcome for r in ingest_paths(files[-1:], db=db, jobs=1)] == ["ingested"]
    after = state(db)
    changed = {b for b in after if b not in before or before[b][2] != after[b][2]}
    assert changed and changed <= set(after)  # the new file's runs changed their benchmark's input
    assert_follows(before, after, changed, "ingested file")
    assert new_bench <= set(after)
    writes(db)

    # the same files ingested in the reverse order: other attempt ids, the same digest
    other = f"ducklake:sqlite:{tmp_path / 'rev.lake'}"
    assert {r.outcome for r in ingest_paths(files[::-1], db=other, jobs=1)} == {"ingested"}
    again = state(other)
    fresh = f"ducklake:sqlite:{tmp_path / 'fwd.lake'}"
    assert {r.outcome for r in ingest_paths(files, db=fresh, jobs=1)} == {"ingested"}
    forward = state(fresh)
    assert {b: v[0] for b, v in again.items()} == {b: v[0] for b, v in forward.items()}
    assert {b: v[2] for b, v in again.items()} == {b: v[2] for b, v in forward.items()}

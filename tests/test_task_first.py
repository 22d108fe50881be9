"""``run_task_first`` (migration 011, store/task_first.py): per (run, task), what the Version diff reads, kept by the
writer. After an ingest, a deletion, late scores, replaced attempts, judge labels and rule findings it equals what the
migration's backfill computes from every attempt and label, and the diff's per-task rows read from it equal, bit for
bit, what the former read of each run's attempts and labels gave (kept here as the reference), on the demo and on a
generated store, on a file store and a local lake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import store as rdb
from analytics import diff as rd
from analytics import gate
from analytics.diff import load as diff_load
from store import aggregates
from store.paths import MIGRATIONS_DIR
from tests.migration_support import roll_back
from tests.test_aggregates import assert_rounded, change_attempts, generated_logs  # noqa: F401  (a fixture)

MIGRATION = (MIGRATIONS_DIR / "011_run_task_first.sql").read_text(encoding="utf-8")
BACKFILL = MIGRATION.split("INSERT INTO run_task_first\n")[1].split(";")[0]

# The diff's read of a run before migration 011: one scan of the run's attempts grouped by task, the labels of its id
# range joined for the codes (analytics/diff/load.py as it was).
FORMER_RUN_TASKS = (
    "WITH a AS (SELECT attempt_id, task_id, sample, passed, score, cost_usd, latency_s, input_tokens, "
    "output_tokens, n_tool_calls FROM attempts WHERE run_id = $run), "
    "g AS (SELECT task_id, count(passed) AS n, avg(passed::INT) AS rate, "
    # 0 where the task has no verdict: that row is no outcome (and an integer column stays one)
    "coalesce(arg_min(passed, sample) FILTER (WHERE passed IS NOT NULL), false)::INT AS first, "
    "coalesce(min(sample) FILTER (WHERE passed IS NOT NULL), 0) AS first_sample, "
    "avg(score) FILTER (WHERE passed IS NOT NULL) AS score, "
    "avg(cost_usd) FILTER (WHERE passed IS NOT NULL) AS cost_usd, "
    "avg(latency_s) FILTER (WHERE passed IS NOT NULL) AS latency_s, "
    "avg(input_tokens + output_tokens) FILTER (WHERE passed IS NOT NULL) AS tokens, "
    "avg(n_tool_calls) FILTER (WHERE passed IS NOT NULL) AS steps, "
    "avg(latency_s) AS all_latency_s, avg(input_tokens + output_tokens) AS all_tokens, "
    "min(attempt_id) AS first_attempt FROM a GROUP BY task_id), "
    # the error codes of the task's attempts, from every source (log labels, rules, judge), sorted
    "codes AS (SELECT a.task_id, list_sort(list(DISTINCT e.code)) AS codes FROM error_labels e "
    "JOIN a USING (attempt_id) WHERE e.attempt_id BETWEEN $lo AND $hi GROUP BY a.task_id) "
    "SELECT g.task_id, t.level, t.category, g.n, g.rate, g.first, g.first_sample, g.score, g.cost_usd, "
    "g.latency_s, g.tokens, g.steps, c.codes, g.all_latency_s, g.all_tokens, g.first_attempt, "
    # equal code lists numbered alike, so the frame holds one array per distinct list (``_shared_codes``)
    "dense_rank() OVER (ORDER BY c.codes) AS codes_id "
    "FROM g JOIN runs r ON r.run_id = $run "
    "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = g.task_id "
    "LEFT JOIN codes c ON c.task_id = g.task_id ORDER BY g.task_id"
)


def former_run_tasks(con: Any, run_id: str) -> pd.DataFrame:
    ids = rdb.query_df(
        con, "SELECT min(attempt_id) AS lo, max(attempt_id) AS hi FROM attempts WHERE run_id = ?", [run_id]
    )
    lo, hi = ids["lo"].iloc[0], ids["hi"].iloc[0]
    return rdb.query_df(con, FORMER_RUN_TASKS, {"run": run_id, "lo": int(lo), "hi": int(hi)}).drop(columns="codes_id")


def stored(con: Any) -> pd.DataFrame:
    return rdb.query_df(con, "SELECT * FROM run_task_first ORDER BY run_id, task_id")


def backfilled(con: Any) -> pd.DataFrame:
    df = rdb.query_df(con, f"SELECT * FROM ({BACKFILL}) ORDER BY run_id, task_id")
    df.columns = stored(con).columns
    return df


def check(db: str | Path) -> None:
    """The table equals its backfill; every run's diff rows equal the former read; the gate's log order too."""
    with rdb.reader(db) as con:
        rows = stored(con)
        assert len(rows) > 0 and rows["codes"].notna().any()
        assert_rounded(rows, backfilled(con), "run_task_first")
        runs = [r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id")]
        for run in runs:
            new = diff_load._run_tasks(con, run).reset_index(drop=True)
            old = former_run_tasks(con, run)
            assert_rounded(new, old, f"run {run}")
            tasks = old["task_id"].astype(str).to_numpy()
            former_order = sorted(range(len(tasks)), key=lambda i: (old["first_attempt"].iloc[i], tasks[i]))
            order, _ = gate.task_order(con, run, tasks)
            assert order.tolist() == former_order
            means = diff_load._task_means(con, run).sort_values("task_id", ignore_index=True)
            expected = old[["task_id", "all_latency_s", "all_tokens"]].rename(
                columns={"all_latency_s": "latency_s", "all_tokens": "tokens"}
            )
            assert_rounded(means, expected, f"means {run}")


def test_demo_rows_equal_their_attempts_before_and_after_changes(demo_db: Path) -> None:
    check(demo_db)
    change_attempts(demo_db)
    check(demo_db)
    with rdb.reader(demo_db) as con:  # the diff of a pair still runs on the changed store
        bench = rdb.query_rows(con, "SELECT benchmark FROM runs GROUP BY benchmark HAVING count(*) > 1 LIMIT 1")[0][0]
        pair = rd.default_pair(rd.run_pairs(con, benchmark=bench))
        assert pair is not None
        assert len(rd.compare_runs(con, run_a=pair[0], run_b=pair[1]).tasks) > 0


@pytest.mark.parametrize("backend", ["file", "local lake"])
def test_generated_store_rows_equal_their_attempts_after_ingest_delete_and_update(
    generated_logs: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    from ingest.pipeline import ingest_paths

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    db: str | Path = tmp_path / "gen.duckdb" if backend == "file" else f"ducklake:sqlite:{tmp_path / 'gen.lake'}"
    files = sorted(generated_logs.glob("*"))
    assert {r.outcome for r in ingest_paths(files[:-1], db=db, jobs=1)} == {"ingested"}
    check(db)
    assert [r.outcome for r in ingest_paths(files[-1:], db=db, jobs=1)] == ["ingested"]
    change_attempts(db)
    check(db)


def test_migration_011_backfills_an_older_store(demo_db: Path) -> None:
    """A store at version 10 gets the table from its attempts when a writer first opens it."""
    with rdb.writer(demo_db) as con:
        expected = stored(con)
        assert "run_task_first" in roll_back(con, 10)
    with rdb.writer(demo_db) as con:
        assert rdb.schema_version(con) == rdb.latest_version()
        assert len(expected) > 0
        assert_rounded(stored(con), expected, "backfilled")


def test_refresh_of_every_pair_equals_the_backfill(demo_db: Path) -> None:
    with rdb.writer(demo_db) as con:
        before = stored(con)
        pairs = [(str(r), str(t)) for r, t in rdb.query_rows(con, "SELECT DISTINCT run_id, task_id FROM attempts")]
        with rdb.transaction(con):
            con.execute("DELETE FROM run_task_first")
            aggregates.refresh_pairs(con, pairs, with_stats=False)
        assert_rounded(stored(con), before, "refreshed")


def test_a_deleted_run_takes_its_rows(demo_db: Path) -> None:
    from store.delete import delete_run_con

    with rdb.writer(demo_db) as con:
        run = rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id LIMIT 1")[0][0]
        assert rdb.query_rows(con, "SELECT count(*) FROM run_task_first WHERE run_id = ?", [run])[0][0] > 0
        delete_run_con(con, run, actor="test")
        assert rdb.query_rows(con, "SELECT count(*) FROM run_task_first WHERE run_id = ?", [run])[0][0] == 0

"""Reads for the diff of two runs (the only module of ``analytics.diff`` that queries): the runs of a benchmark, a run's
per-task outcomes, its benchmark and scoring, per-task metric values as the leaderboard computes them."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import compare
from analytics.diff.compute import BASES, RunDiff, pair_tasks, run_diff, values_by_task
from analytics.sqlfiles import load_sql
from store import RunlensError, query_df


def run_pairs(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Runs of a benchmark, newest first, with family and version (for the pickers)."""
    return query_df(
        con,
        "SELECT run_id, agent, family, agent_version, eval_date FROM runs WHERE benchmark = ? "
        "ORDER BY eval_date DESC NULLS LAST, run_id DESC",
        [benchmark],
    )


def task_values(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per task of one run: samples, Pass@1 rate, sample-0 outcome, mean score, cost and latency."""
    return _task_outcomes(con, run_id)


def run_benchmark(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[str, str | None]:
    """``(benchmark, scoring)`` of a run; RunlensError when the run does not exist."""
    rows = query_df(
        con,
        "SELECT r.benchmark, b.scoring FROM runs r LEFT JOIN benchmarks b USING (benchmark) WHERE r.run_id = ?",
        [run_id],
    )
    if rows.empty:
        raise RunlensError(f"no run {run_id!r} in the database")
    scoring = rows["scoring"].iloc[0]
    return str(rows["benchmark"].iloc[0]), None if pd.isna(scoring) else str(scoring)


# Every task of a run from its ``run_task_first`` rows (migration 011, kept at ingest; store/sql/run_task_first.sql
# computes them from the attempts): the outcome columns of ``task_values`` (over the attempts with a verdict), the
# means over every attempt ``metric_values`` adds (latency, tokens) and the task's first attempt id (the gate's log
# order), with the task's level and category. A row per task of the run, not a scan of its attempts and labels. A
# task without an attempt with a verdict has no outcome (``n`` 0) but has its means.
_RUN_TASKS_SQL = (
    "SELECT f.task_id, t.level, t.category, f.n, f.rate, f.first, f.first_sample, f.score, f.cost_usd, "
    "f.latency_s, f.tokens, f.steps, f.codes, f.all_latency_s, f.all_tokens, f.first_attempt, "
    # equal code lists numbered alike, so the frame holds one array per distinct list (``_shared_codes``)
    "dense_rank() OVER (ORDER BY f.codes) AS codes_id "
    "FROM run_task_first f JOIN runs r ON r.run_id = f.run_id "
    "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = f.task_id "
    "WHERE f.run_id = $run ORDER BY f.task_id"
)
_OUTCOME_COLUMNS = [
    "task_id", "level", "category", "n", "rate", "first", "first_sample", "score", "cost_usd", "latency_s",
    "tokens", "steps", "codes",
]  # fmt: skip


def _run_tasks(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Every task of one run (``_RUN_TASKS_SQL``): outcome columns, ``all_latency_s``, ``all_tokens``,
    ``first_attempt``."""
    rows = query_df(con, _RUN_TASKS_SQL, {"run": run_id})
    if rows.empty:
        return pd.DataFrame(columns=[*_OUTCOME_COLUMNS, "all_latency_s", "all_tokens", "first_attempt"])
    return _shared_codes(rows)


def _shared_codes(rows: pd.DataFrame) -> pd.DataFrame:
    """The tasks with equal code lists hold the same array (the first such task's): the same values, but a cached
    diff is pickled and unpickled with each distinct list once instead of an array per task (at 1M 0.06 of the
    0.07 CPU s of a warm rerun's unpickling, growing with the tasks)."""
    if rows.empty:
        return rows.drop(columns="codes_id")
    at = rows["codes_id"].to_numpy(dtype=np.int64) - 1
    numbers, first = np.unique(at, return_index=True)  # the first row of each numbered list
    by_number = np.zeros(at.max() + 1, dtype=np.int64)
    by_number[numbers] = first
    codes = rows["codes"].to_numpy(dtype=object)
    return rows.drop(columns="codes_id").assign(codes=codes[by_number[at]])


def _outcomes_of(rows: pd.DataFrame) -> pd.DataFrame:
    """The outcome rows (tasks with an attempt with a verdict) of ``_run_tasks``."""
    return rows.loc[rows["n"] > 0, _OUTCOME_COLUMNS].reset_index(drop=True)


def _task_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return _outcomes_of(_run_tasks(con, run_id))


def _task_means(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per task of one run, over every attempt (with a verdict or not): mean latency and tokens (``run_task_first``,
    migration 011)."""
    return query_df(
        con,
        "SELECT task_id, all_latency_s AS latency_s, all_tokens AS tokens FROM run_task_first WHERE run_id = ?",
        [run_id],
    )


def compare_runs(con: duckdb.DuckDBPyConnection, *, run_a: str, run_b: str, basis: str = "sample0") -> RunDiff:
    """Pair two runs task by task and test whether their outcomes differ.

    Args:
        con: read connection.
        run_a: the earlier run (before).
        run_b: the later run (after).
        basis: binary outcome per task for flips and McNemar: ``sample0`` or ``majority``.
    """
    return compare_runs_with_values(con, run_a=run_a, run_b=run_b, basis=basis)[0]


def compare_runs_with_values(
    con: duckdb.DuckDBPyConnection, *, run_a: str, run_b: str, basis: str = "sample0"
) -> tuple[RunDiff, dict[str, dict[str, Any]]]:
    """``compare_runs`` and the ``metric_values`` of each run it read (keyed by run id; the benchmark's metric), so
    a caller that also gates the pair (``analytics.gate.diff_and_gate``) reads them once. Each run's values also
    hold ``first_attempt`` ({task: its first attempt id}: the order the run's log recorded its tasks, which the
    sequential gate reads)."""
    if basis not in BASES:
        raise RunlensError(f"basis must be one of {BASES}, got {basis!r}")
    rows = {r: _run_tasks(con, r) for r in (run_a, run_b)}
    a, b = _outcomes_of(rows[run_a]), _outcomes_of(rows[run_b])
    if a.empty or b.empty:
        raise RunlensError(f"no scored attempts in run {run_a if a.empty else run_b!r}")
    tasks = pair_tasks(a, b, basis=basis)
    metric = compare.ranking_metric(run_benchmark(con, run_a)[1])
    values = {}
    for run, got in rows.items():
        means = got[["task_id", "all_latency_s", "all_tokens"]].rename(
            columns={"all_latency_s": "latency_s", "all_tokens": "tokens"}
        )
        values[run] = _values_with(_outcome_rows(con, run), means, metric)
        values[run]["first_attempt"] = dict(
            zip(got["task_id"].astype(str).tolist(), got["first_attempt"].astype(float).tolist(), strict=True)
        )
    return run_diff(a, b, tasks, values, run_a=run_a, run_b=run_b, basis=basis, metric=metric), values


def _outcome_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The run's rows of ``task_outcome_rows.sql`` (the leaderboard's per-task outcomes, from run_task_stats)."""
    return query_df(
        con,
        f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id",
        {"run_ids": [run_id], "exclude_errored": False},
    )


def _values_with(df: pd.DataFrame, means: pd.DataFrame, metric: str) -> dict[str, Any]:
    """``values_by_task`` of per-task outcome rows with the run's means over every attempt (latency, tokens)."""
    return values_by_task(df.merge(means, on="task_id", how="left"), metric)


def metric_values(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    metric: str,
    *,
    scorer: str | None = None,
    threshold: float | None = None,
) -> dict[str, Any]:
    """Per-task values of one run as the leaderboard computes them (``task_outcome_rows.sql``; with ``scorer``, that
    scorer's values and ``threshold`` as its pass mark, as ``analytics.scorers.scorer_outcomes``).

    Returns ``{"value": {task: metric value}, "cost_usd", "latency_s", "tokens", "steps" (tool calls): {...}, "n": {task: samples}}``:
    the metric is c/n (Pass@1 per task, attempts without a verdict count as failures, as on the leaderboard) or
    the mean score; cost, latency, tokens and steps are means over the task's samples.
    """
    if scorer is not None:
        from analytics.scorers import scorer_outcomes

        df = scorer_outcomes(con, run_ids=[run_id], scorer=scorer, threshold=threshold)
    else:
        df = _outcome_rows(con, run_id)
    return _values_with(df, _task_means(con, run_id), metric)

"""Reads for the diff of two runs (the only module of ``analytics.diff`` that queries): the runs of a benchmark, a run's
per-task outcomes, its benchmark and scoring, per-task metric values as the leaderboard computes them."""

from __future__ import annotations

from typing import Any

import duckdb
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


def _task_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    # The run's attempts are read once (the scan keeps only this run's rows); its error codes are joined on those
    # attempts' ids. A subquery per task over error_labels JOIN attempts read both tables whole: 0.4 s a run at
    # 1M attempts, growing with the store.
    return query_df(
        con,
        "WITH a AS (SELECT attempt_id, task_id, sample, passed, score, cost_usd, latency_s, input_tokens, "
        "output_tokens, n_tool_calls FROM attempts WHERE run_id = $run), "
        # the error codes of the task's attempts, from every source (log labels, rules, judge), sorted
        "codes AS (SELECT a.task_id, list_sort(list(DISTINCT e.code)) AS codes FROM error_labels e "
        "JOIN a USING (attempt_id) GROUP BY a.task_id) "
        "SELECT a.task_id, t.level, t.category, count(*) AS n, avg(a.passed::INT) AS rate, "
        "arg_min(a.passed, a.sample)::INT AS first, min(a.sample) AS first_sample, "
        "avg(a.score) AS score, avg(a.cost_usd) AS cost_usd, avg(a.latency_s) AS latency_s, "
        "avg(a.input_tokens + a.output_tokens) AS tokens, avg(a.n_tool_calls) AS steps, any_value(c.codes) AS codes "
        "FROM a JOIN runs r ON r.run_id = $run "
        "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id "
        "LEFT JOIN codes c ON c.task_id = a.task_id "
        "WHERE a.passed IS NOT NULL GROUP BY a.task_id, t.level, t.category ORDER BY a.task_id",
        {"run": run_id},
    )


def _task_means(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per task of one run, over every attempt (with a verdict or not): mean latency and tokens."""
    return query_df(
        con,
        "SELECT task_id, avg(latency_s) AS latency_s, avg(input_tokens + output_tokens) AS tokens "
        "FROM attempts WHERE run_id = ? GROUP BY task_id",
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
    a caller that also gates the pair (``analytics.gate.diff_and_gate``) reads them once."""
    if basis not in BASES:
        raise RunlensError(f"basis must be one of {BASES}, got {basis!r}")
    a, b = _task_outcomes(con, run_a), _task_outcomes(con, run_b)
    if a.empty or b.empty:
        raise RunlensError(f"no scored attempts in run {run_a if a.empty else run_b!r}")
    tasks = pair_tasks(a, b, basis=basis)
    metric = compare.ranking_metric(run_benchmark(con, run_a)[1])
    values = {r: metric_values(con, r, metric) for r in (run_a, run_b)}
    return run_diff(a, b, tasks, values, run_a=run_a, run_b=run_b, basis=basis, metric=metric), values


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
        df = query_df(
            con,
            f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id",
            {"run_ids": [run_id], "exclude_errored": False},
        )
    df = df.merge(_task_means(con, run_id), on="task_id", how="left")
    return values_by_task(df, metric)

"""Reads for the diff of two runs (the only module of ``analytics.diff`` that queries): the runs of a benchmark, a run's
per-task outcomes, its benchmark and scoring, per-task metric values as the leaderboard computes them."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import compare
from analytics.diff.compute import BASES, RunDiff, pair_tasks, run_diff, values_by_task
from analytics.sqlfiles import load_sql, run_task_aggregates
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


# One read of a run's attempts gives, per task, the outcome columns of ``task_values`` (over the attempts with a
# verdict), the means over every attempt ``metric_values`` adds (latency, tokens) and the task's first attempt id
# (the gate's log order): the former three reads each scanned the run's attempts. The attempts are grouped first and
# the tasks' details and codes joined to the groups (not to every attempt); the codes come from the labels of the
# run's attempts, the labels' scan kept to the run's id range (a constant the scan prunes by). A task without an
# attempt with a verdict has no outcome row (``n`` 0) but has its means.
_RUN_TASKS_SQL = (
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
_OUTCOME_COLUMNS = [
    "task_id", "level", "category", "n", "rate", "first", "first_sample", "score", "cost_usd", "latency_s",
    "tokens", "steps", "codes",
]  # fmt: skip


def _run_tasks(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Every task of one run (``_RUN_TASKS_SQL``): outcome columns, ``all_latency_s``, ``all_tokens``,
    ``first_attempt``."""
    ids = query_df(con, "SELECT min(attempt_id) AS lo, max(attempt_id) AS hi FROM attempts WHERE run_id = ?", [run_id])
    lo, hi = ids["lo"].iloc[0], ids["hi"].iloc[0]
    if pd.isna(lo):
        return pd.DataFrame(columns=[*_OUTCOME_COLUMNS, "all_latency_s", "all_tokens", "first_attempt"])
    return _shared_codes(query_df(con, _RUN_TASKS_SQL, {"run": run_id, "lo": int(lo), "hi": int(hi)}))


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
    """Per task of one run, over every attempt (with a verdict or not): mean latency and tokens."""
    return run_task_aggregates(con, run_id, "avg(latency_s) AS latency_s, avg(input_tokens + output_tokens) AS tokens")


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

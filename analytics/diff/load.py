"""Reads for the diff of two runs (the only module of ``analytics.diff`` that queries): the runs of a benchmark, a run's
per-task outcomes, its benchmark and scoring, per-task metric values as the leaderboard computes them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import compare
from analytics.diff.arrays import pair_arrays, run_values, split_pair
from analytics.diff.compute import BASES, RunDiff, run_diff_of, values_by_task
from analytics.runs.compute import HELD_SQL, RUN_STATE_SQL, with_completeness
from analytics.sqlfiles import load_sql
from store import RunlensError, query_df, query_rows
from store.retries import IS_SUPERSEDED_SQL


def run_pairs(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Runs of a benchmark, newest first, with family and version (for the pickers), ``is_superseded``: a retry
    superseded the run (``store.retries``, the leaderboard's rule; ``without_superseded`` leaves them out), and
    ``is_complete`` with the columns it is read from (log_status, completed, total: the leaderboard's rule,
    ``runs.with_completeness``; ``incomplete_note`` says it of a pair). One statement."""
    runs = query_df(
        con,
        f"SELECT r.run_id, r.agent, r.family, r.agent_version, r.eval_date, {IS_SUPERSEDED_SQL} AS is_superseded, "
        f"{RUN_STATE_SQL}, {HELD_SQL} AS held "  # the attempts held: only of a log that counts its samples
        "FROM runs r WHERE r.benchmark = ? ORDER BY r.eval_date DESC NULLS LAST, r.run_id DESC",
        [benchmark],
    )
    held = runs.pop("held")
    counted = {str(r): int(h) for r, h in zip(runs["run_id"], held, strict=True) if pd.notna(h)}
    return with_completeness(runs, counted)


def task_values(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Per task of one run: samples, Pass@1 rate, sample-0 outcome, mean score, cost and latency."""
    return _task_outcomes(con, run_id)


def run_benchmark(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[str, str | None]:
    """``(benchmark, scoring)`` of a run; RunlensError when the run does not exist."""
    return run_benchmarks(con, (run_id,))[run_id]


def run_benchmarks(con: duckdb.DuckDBPyConnection, run_ids: tuple[str, ...]) -> dict[str, tuple[str, str | None]]:
    """``run_benchmark`` of each run, in one statement; RunlensError naming the first run that does not exist."""
    rows = query_rows(
        con,
        "SELECT r.run_id, r.benchmark, b.scoring FROM runs r LEFT JOIN benchmarks b USING (benchmark) "
        "WHERE list_contains($runs, r.run_id)",
        {"runs": list(run_ids)},
    )
    found = {str(run): (str(bench), None if scoring is None else str(scoring)) for run, bench, scoring in rows}
    for run_id in run_ids:
        if run_id not in found:
            raise RunlensError(f"no run {run_id!r} in the database")
    return found


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
    sequential gate reads). The values are ``TaskColumn``s on one index of the pair's task ids (mappings task ->
    value, as ``metric_values`` gives them)."""
    if basis not in BASES:
        raise RunlensError(f"basis must be one of {BASES}, got {basis!r}")
    rows = query_df(
        con,
        _PAIR_SQL.format(outcome_rows=load_sql("task_outcome_rows")),
        {"a": run_a, "b": run_b, "run_ids": [run_a, run_b], "exclude_errored": False},
    )
    names, a, b, lists = split_pair(rows)
    for run, side in ((run_a, a), (run_b, b)):
        if not side.has_outcome.any():
            raise RunlensError(f"no scored attempts in run {run!r}")
    tasks, at, code_ids = pair_arrays(names, a, b, lists, basis=basis)
    benchmarks = run_benchmarks(con, (run_a, run_b))
    metric = compare.ranking_metric(benchmarks[run_a][1])
    values = {run_a: run_values(names, a, metric), run_b: run_values(names, b, metric)}
    values[run_a]["benchmark"] = benchmarks[run_a]  # for the gate of the pair (``gate.diff_and_gate``)
    values[run_b]["benchmark"] = benchmarks[run_b]
    diff = run_diff_of(
        tasks,
        values,
        n_only=(
            int(np.count_nonzero(a.has_outcome & ~b.has_outcome)),
            int(np.count_nonzero(b.has_outcome & ~a.has_outcome)),
        ),
        run_a=run_a,
        run_b=run_b,
        basis=basis,
        metric=metric,
    )
    return replace(diff, task_rank=at, code_ids=code_ids, code_lists=lists), values


# Both runs' rows in one statement: per (run, task) the run_task_first row (migration 011; ``in_f``, its outcome
# columns, the means over every attempt, the first attempt id, the code list as JSON text) beside the leaderboard's
# per-task row (task_outcome_rows.sql over run_task_stats; ``in_s``, columns prefixed v_), and run A's task's level
# and category (the only ones the diff shows). Missing integers are 0 (the flags say the row is absent), so the
# columns keep the types the former per-run frames had; the successes ``v_c`` are DOUBLE, the float64 pandas made of
# task_outcome_rows.sql's HUGEINT, without converting 128-bit integers (0.01 of 0.3 CPU s at 10M). Each run's rows
# are read by an equality on the run (a scan skips the other runs' row groups; an OR of the two does not); the task
# ids are numbered and sorted in Python (``arrays.split_pair``: cheaper than a window over every row), and so are the
# code lists (equal JSON, equal list).
_PAIR_SQL = """
WITH f AS (
    SELECT *, true AS in_f FROM run_task_first WHERE run_id = $a
    UNION ALL
    SELECT *, true AS in_f FROM run_task_first WHERE run_id = $b AND run_id <> $a
),
s AS (SELECT *, true AS in_s FROM (
{outcome_rows}
)),
j AS (
    SELECT run_id, task_id, coalesce(f.in_f, false) AS in_f, coalesce(f.n, 0) AS n, f.rate,
           coalesce(f.first, 0) AS first, coalesce(f.first_sample, 0) AS first_sample, f.score, f.cost_usd,
           f.latency_s, f.tokens, f.steps, f.all_latency_s, f.all_tokens,
           coalesce(f.first_attempt, 0) AS first_attempt, to_json(f.codes) AS codes,
           coalesce(s.in_s, false) AS in_s, coalesce(s.n, 0) AS v_n, s.c::DOUBLE AS v_c, s.score AS v_score,
           s.steps AS v_steps, s.cost_usd AS v_cost_usd
    FROM f FULL JOIN s USING (run_id, task_id)
)
SELECT j.run_id = $a AS is_a, j.run_id = $b AS is_b, j.task_id, t.level, t.category, j.* EXCLUDE (run_id, task_id)
FROM j
-- run A's tasks, joined on the run too (an equality: a condition on j alone in ON makes the join a nested loop)
LEFT JOIN (SELECT $a AS run_id, task_id, level, category FROM tasks
           WHERE benchmark = (SELECT benchmark FROM runs WHERE run_id = $a)) t
    ON t.run_id = j.run_id AND t.task_id = j.task_id
"""


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

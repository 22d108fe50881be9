"""The leaderboard's reads: per (run, task) outcomes of the runs a filter selects, and the benchmark's scoring and
pass threshold. The only module of ``analytics.leaderboard`` that queries (the runs themselves: ``analytics.runs``).
"""

from __future__ import annotations

from typing import TypedDict, Unpack

import duckdb
import numpy as np
import pandas as pd

from analytics import scorers
from analytics.runs import load_runs
from analytics.sqlfiles import load_sql
from store import ALL_RUNS, QueryError, RunFilter, query_df

# task_outcome_rows.sql numbered: the runs get integer codes in their keys' order, the tasks their order in the
# benchmark's ``tasks`` table (a small read), so the rows come as integers sorted by integers and each key becomes a
# Python string once (at 10M attempts: 13 runs and 66,667 tasks instead of 867k x 2 strings, no sort of text keys).
_KEYS = """
SELECT 0 AS kind, (row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS ix, run_id AS key
FROM (SELECT DISTINCT unnest($run_ids) AS run_id)
UNION ALL
SELECT 1, (row_number() OVER (ORDER BY task_id) - 1)::INTEGER, task_id FROM tasks WHERE benchmark = $benchmark
"""
_ROWS = """
WITH sel AS ({rows}
), rk AS (
    SELECT run_id, (row_number() OVER (ORDER BY run_id) - 1)::INTEGER AS run_ix
    FROM (SELECT DISTINCT unnest($run_ids) AS run_id)
), tk AS (
    SELECT task_id, (row_number() OVER (ORDER BY task_id) - 1)::INTEGER AS task_ix FROM tasks WHERE benchmark = $benchmark
)
SELECT run_ix, task_ix, n, c, score, steps, cost_usd
FROM sel JOIN rk USING (run_id) LEFT JOIN tk USING (task_id)
ORDER BY run_ix, task_ix
"""


def _coded_outcomes(con: duckdb.DuckDBPyConnection, params: dict[str, object], benchmark: str | None) -> pd.DataFrame:
    """``task_outcome_rows.sql``'s frame in (run, task) order (the same columns and dtypes) read as integer codes and their keys; a
    row whose task is not in the benchmark's ``tasks`` table has no code: then the text keys are read instead."""
    return _coded_read(con, params, benchmark)[0]


def _arrays(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> dict[str, np.ndarray]:
    """One parameterised statement's columns as numpy arrays, without a pandas frame (``query_df``'s errors): at
    10M attempts the 867k (run, task) rows went DuckDB -> pandas -> numpy, and the frame was dropped at once. A
    column with a null comes as a masked array."""
    try:
        return dict(con.execute(sql, params).fetchnumpy())
    except duckdb.Error as exc:
        raise QueryError(str(exc), sql, params) from exc


def _float_column(values: np.ndarray) -> np.ndarray:
    """A float column as ``query_df`` gives it: NaN where the database has a null."""
    if isinstance(values, np.ma.MaskedArray):
        return np.ma.filled(values.astype(np.float64), np.nan)
    return values


def _coded_read(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], benchmark: str | None
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``_coded_outcomes`` and each row's task code (its task's place among the benchmark's task ids in their
    order; None when the text keys were read). The rows are read straight into numpy arrays and the frame built
    once from them (a column added at a time copied every column again at each consolidation: 0.7 s at 867k
    rows; the pandas frame of the integer rows, dropped at once, was a third of the read)."""
    keys = query_df(con, _KEYS, {"run_ids": params["run_ids"], "benchmark": benchmark})
    rows = _arrays(con, _ROWS.format(rows=load_sql("task_outcome_rows")), {**params, "benchmark": benchmark})
    masked = [np.ma.getmask(rows[col]) for col in ("run_ix", "task_ix", "n")]
    if any(np.any(mask) for mask in masked):  # a task not in the tasks table: no code
        return query_df(con, f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id", params), None
    columns: dict[str, object] = {}
    for kind, (col, ix) in enumerate((("run_id", "run_ix"), ("task_id", "task_ix"))):
        part = keys[keys["kind"] == kind]
        lookup = np.empty(len(part), dtype=object)
        lookup[part["ix"].to_numpy(dtype=np.int64)] = part["key"].to_numpy(dtype=object)
        codes = np.asarray(rows[ix], dtype=np.int64)
        columns[col] = lookup[codes] if len(codes) else np.empty(0, dtype=object)
    columns["n"] = np.asarray(rows["n"])
    for col in ("c", "score", "steps", "cost_usd"):
        columns[col] = _float_column(rows[col])
    return pd.DataFrame(columns), np.asarray(rows["task_ix"], dtype=np.int64)


class OutcomeOptions(TypedDict, total=False):
    """The keywords of ``task_outcomes`` and ``coded_task_outcomes`` (see ``task_outcomes``)."""

    runs: pd.DataFrame | None
    exclude_errored: bool
    scorer: str | None
    threshold: float | None


def task_outcomes(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS, **options: Unpack[OutcomeOptions]
) -> pd.DataFrame:
    """One row per (run, task), ordered by run and task: samples, successes, mean score, tool calls, cost, and
    the task's level and category. ``scorer`` reads that scorer's values (``analytics.scorers``; ``threshold``
    is its pass mark, None for no pass rate) instead of the headline score.

    The aggregation happens in DuckDB, so only runs x tasks rows reach pandas; the task's level and category are
    read once per task and attached here (cheaper than one text value per row from the database). ``runs`` is
    the result of ``runs.load_runs`` for the same filter, when the caller has it already. ``exclude_errored``
    leaves errored attempts (status ``crashed``) out, as Inspect's accuracy does; by default they count as
    failures.
    """
    return coded_task_outcomes(con, run_filter, **options)[0]


def coded_task_outcomes(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    runs: pd.DataFrame | None = None,
    exclude_errored: bool = False,
    scorer: str | None = None,
    threshold: float | None = None,
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``task_outcomes`` and each row's task code: the place of its task id among the benchmark's task ids in
    their order (so the codes sort as the ids do), or None when the rows were read by their text keys (a scorer's
    values, a task missing from the ``tasks`` table). With codes, a task's level and category are attached by
    its code instead of hashing every row's task id (0.2 s at 867k rows)."""
    if runs is None:
        runs = load_runs(con, run_filter)
    params = {"run_ids": runs["run_id"].astype(str).tolist(), "exclude_errored": bool(exclude_errored)}
    codes: np.ndarray | None = None
    if scorer is not None:
        ids = params["run_ids"]
        out = scorers.scorer_outcomes(
            con, run_ids=ids, scorer=scorer, threshold=threshold, exclude_errored=bool(exclude_errored)
        )
    else:
        out, codes = _coded_read(con, params, run_filter.benchmark)
    if codes is not None:  # in task-id order, as the codes count
        sql = "SELECT task_id, level, category FROM tasks WHERE benchmark = ? ORDER BY task_id"
        tasks = query_df(con, sql, [run_filter.benchmark])
        for col in ("level", "category"):
            out[col] = tasks[col].to_numpy(dtype=object)[codes]
        return out, codes
    tasks = query_df(con, "SELECT task_id, level, category FROM tasks WHERE benchmark = ?", [run_filter.benchmark])
    at = pd.Index(tasks["task_id"]).get_indexer(out["task_id"])
    for col in ("level", "category"):
        values = tasks[col].to_numpy(dtype=object)
        out[col] = np.where(at >= 0, values[np.maximum(at, 0)] if len(values) else None, None)
    return out, None


def benchmark_threshold(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> float:
    """The benchmark's pass threshold (0.5 when unknown)."""
    rows = query_df(con, "SELECT pass_threshold FROM benchmarks WHERE benchmark = ?", [benchmark])
    return 0.5 if rows.empty else float(rows["pass_threshold"].iloc[0])


def benchmark_scoring(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str | None:
    """The benchmark's scoring (``binary``, ``graded``, ``continuous``), None when unknown."""
    rows = query_df(con, "SELECT scoring FROM benchmarks WHERE benchmark = ?", [benchmark])
    return None if rows.empty else str(rows["scoring"].iloc[0])


def ranked_score(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, scorer: str | None
) -> tuple[str | None, str | None, float | None]:
    """The score a leaderboard ranks: ``(scorer, scoring, threshold)``. Without a scorer: the headline score and
    the benchmark's scoring (no threshold). With one: its checked name (``scorers.check_scorer``), its scale and
    its pass mark (1.0 for a 0/1 scorer, the benchmark's threshold for a continuous one on a continuous
    benchmark, else 0.5; None for a scorer on its own scale)."""
    scoring = benchmark_scoring(con, benchmark=benchmark)
    threshold: float | None = None
    if scorer is not None:
        scorer = scorers.check_scorer(con, benchmark=benchmark, scorer=scorer)
        scoring = scorers.scorer_scale(con, benchmark=benchmark, scorer=scorer)
        is_continuous = benchmark_scoring(con, benchmark=benchmark) == "continuous"  # else its 1.0 is for 0/1 values
        cut = benchmark_threshold(con, benchmark=benchmark) if is_continuous else 0.5
        threshold = {"binary": 1.0, "continuous": cut}.get(scoring)
    return scorer, scoring, threshold

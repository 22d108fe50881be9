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

# The runs asked for and the benchmark's tasks (with their level and category), each in id order, and their codes in
# the kept (run, task) rows (migrations 012-013): the rows come as integers, each key becomes a Python string once (at
# 10M attempts: 13 runs and 66,667 tasks instead of 867k x 2 strings, no text joined or sorted). One statement: each
# costs a lake its catalog reads. A run without rows has no code; a task in no run's rows has none either.
_KEYS = """
SELECT 0 AS kind, k.run_id AS key, rc.run_code AS code, NULL AS level, NULL AS category
FROM (SELECT DISTINCT unnest($run_ids) AS run_id) k LEFT JOIN tmf_run_codes rc ON rc.run_id = k.run_id
UNION ALL
SELECT 1, t.task_id, tc.task_code, t.level, t.category
FROM tasks t LEFT JOIN tmf_task_codes tc ON tc.benchmark = t.benchmark AND tc.task_id = t.task_id
WHERE t.benchmark = $benchmark
ORDER BY kind, key
"""
# task_outcome_rows.sql's columns from the runs' kept rows (run_task_board, migration 013: run_task_stats's values
# under the codes); {runs}: the runs' codes as a constant list of parameters, which a lake's scan skips other runs'
# files and row groups by. No order: the rows are put in (run, task) order by their places (a store's already are).
_ROWS = """
SELECT run_code, task_code,
       CASE WHEN $exclude_errored THEN n_kept ELSE n_scored END                       AS n,
       CASE WHEN $exclude_errored THEN n_kept_passed ELSE n_scored_passed END         AS c,
       CASE WHEN $exclude_errored THEN score_mean_kept ELSE score_mean END            AS score,
       CASE WHEN $exclude_errored THEN tool_calls_mean_kept ELSE tool_calls_mean_scored END AS steps,
       CASE WHEN $exclude_errored THEN cost_usd_mean_kept ELSE cost_usd_mean_scored END AS cost_usd
FROM run_task_board
WHERE run_code IN ({runs}) AND CASE WHEN $exclude_errored THEN n_kept ELSE n_scored END > 0
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


def _places(codes: np.ndarray, of: np.ndarray) -> np.ndarray:
    """The place in ``codes`` (keys' codes, -1 for none) of each of ``of``'s codes (-1: a code ``codes`` lacks), by a
    table indexed by code (codes are small integers: their store's runs or tasks)."""
    known = codes >= 0
    top = max(int(codes.max()) if known.any() else -1, int(of.max()) if len(of) else -1)
    table = np.full(top + 1, -1, dtype=np.int64)
    table[codes[known]] = np.flatnonzero(known)
    return table[of] if len(of) else np.empty(0, dtype=np.int64)


def _coded_read(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], benchmark: str | None
) -> tuple[pd.DataFrame, np.ndarray | None, dict[str, np.ndarray]]:
    """``_coded_outcomes``, each row's task code (its task's place among the benchmark's task ids in their order;
    None when the text keys were read) and the benchmark's tasks' ``level`` and ``category`` in that order (empty
    when the text keys were read). The rows are the runs' kept rows on integer codes (``run_task_board``), read
    straight into numpy arrays (no text joined: at 10M attempts the joins of 867k rows' run and task ids to their
    places were most of the read), each code mapped to its key's place, the frame built once from the arrays. A row
    whose task is not in the benchmark's ``tasks`` table has no place: then the text keys are read instead."""
    keys = query_df(con, _KEYS, {"run_ids": params["run_ids"], "benchmark": benchmark})
    is_task = keys["kind"].to_numpy() == 1
    ids = keys["key"].to_numpy(dtype=object)
    codes = keys["code"].to_numpy(dtype=np.float64, na_value=-1.0).astype(np.int64)
    runs, tasks = ~is_task, is_task  # each kind's rows in id order: a key's place is its row among its kind's
    run_codes = sorted({int(c) for c in codes[runs] if c >= 0})
    marks = ", ".join(f"$r{i}" for i in range(len(run_codes))) or "NULL"
    values = {"exclude_errored": params["exclude_errored"], **{f"r{i}": c for i, c in enumerate(run_codes)}}
    rows = _arrays(con, _ROWS.format(runs=marks), values)
    run_ix = _places(codes[runs], np.asarray(rows["run_code"], dtype=np.int64))
    task_ix = _places(codes[tasks], np.asarray(rows["task_code"], dtype=np.int64))
    if (task_ix < 0).any() or (run_ix < 0).any():  # a task not in the tasks table: no place
        return query_df(con, f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id", params), None, {}
    key = run_ix * max(int(tasks.sum()), 1) + task_ix
    order = None if bool((key[1:] > key[:-1]).all()) else np.argsort(key, kind="stable")

    def ordered(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    run_ix, task_ix = ordered(run_ix), ordered(task_ix)
    columns: dict[str, object] = {
        "run_id": ids[runs][run_ix] if len(run_ix) else np.empty(0, dtype=object),
        "task_id": ids[tasks][task_ix] if len(task_ix) else np.empty(0, dtype=object),
        "n": ordered(np.asarray(rows["n"])),
        "c": ordered(np.asarray(rows["c"], dtype=np.float64)),  # HUGEINT in the text read: pandas' float
    }
    for col in ("score", "steps", "cost_usd"):
        columns[col] = ordered(_float_column(rows[col]))
    described = {col: keys[col].to_numpy(dtype=object)[tasks] for col in ("level", "category")}
    # copy=False: the arrays become the frame's columns as they are (consolidating the float columns into one block
    # copied them all: 0.04-0.1 CPU s at 867k rows)
    return pd.DataFrame(columns, copy=False), task_ix, described


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
        out, codes, described = _coded_read(con, params, run_filter.benchmark)
    if codes is not None:  # in task-id order, as the codes count; the frame's columns kept as they are (no copy)
        more = {col: described[col][codes] for col in ("level", "category")}
        return pd.DataFrame({**{col: out[col].to_numpy() for col in out.columns}, **more}, copy=False), codes
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

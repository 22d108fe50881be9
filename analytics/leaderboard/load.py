"""The leaderboard's reads: per (run, task) outcomes of the runs a filter selects, and the benchmark's scoring and
pass threshold. The only module of ``analytics.leaderboard`` that queries (the runs themselves: ``analytics.runs``).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from analytics import scorers
from analytics.runs import load_runs
from analytics.sqlfiles import load_sql
from store import ALL_RUNS, RunFilter, query_df


def task_outcomes(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    runs: pd.DataFrame | None = None,
    exclude_errored: bool = False,
    scorer: str | None = None,
    threshold: float | None = None,
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
    if runs is None:
        runs = load_runs(con, run_filter)
    params = {"run_ids": runs["run_id"].astype(str).tolist(), "exclude_errored": bool(exclude_errored)}
    if scorer is not None:
        ids = params["run_ids"]
        out = scorers.scorer_outcomes(
            con, run_ids=ids, scorer=scorer, threshold=threshold, exclude_errored=bool(exclude_errored)
        )
    else:
        out = query_df(con, load_sql("task_outcomes"), params)
    tasks = query_df(con, "SELECT task_id, level, category FROM tasks WHERE benchmark = ?", [run_filter.benchmark])
    at = pd.Index(tasks["task_id"]).get_indexer(out["task_id"])
    for col in ("level", "category"):
        values = tasks[col].to_numpy(dtype=object)
        out[col] = np.where(at >= 0, values[np.maximum(at, 0)] if len(values) else None, None)
    return out


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

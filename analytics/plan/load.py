"""The plan's reads (the runs and per-task outcomes are ``analytics.runs`` and ``analytics.leaderboard``'s): the
benchmark's scoring and the within-task variances of a run's repeated samples. The only module of
``analytics.plan`` that queries."""

from __future__ import annotations

import duckdb
import pandas as pd

from analytics import compare
from analytics.sqlfiles import run_task_aggregates
from store import query_df


def benchmark_is_binary(con: duckdb.DuckDBPyConnection, benchmark: str) -> bool:
    """Whether the benchmark ranks by Pass@1 (binary scoring, or unknown)."""
    rows = query_df(con, "SELECT scoring FROM benchmarks WHERE benchmark = ?", [benchmark])
    return rows.empty or compare.ranking_metric(None if rows.empty else str(rows["scoring"].iloc[0])) == "pass@1"


def within_task_variances(con: duckdb.DuckDBPyConnection, run: str) -> pd.DataFrame:
    """Per task of ``run``: the unbiased variance of its scored samples (``v``) and their number (``n``)."""
    return run_task_aggregates(con, run, "var_samp(score) AS v, count(*) AS n", where="score IS NOT NULL")

"""Scorers: which scores a benchmark's attempts have (the ``scores`` table), one chosen for a report, its scale, and
the metrics Inspect computed for it (``results.scores`` of the log, kept in the run's extra).

An attempt has one headline score (``attempts.score``, on [0, 1]); every scorer of an Inspect log (and every key
of a dict score) is a row of ``scores`` on its own scale. A report given a scorer reads that scorer's current
revision instead of the headline; a name the benchmark does not have is an error that lists the ones it has.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import duckdb
import pandas as pd

from analytics.sqlfiles import load_sql
from store import QueryError, RunlensError, query_df, query_rows


class ScorerNotFoundError(RunlensError):
    """The scorer asked for is not among the benchmark's scores (the message lists those it has)."""


def available_scorers(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> list[str]:
    """The scorer names of the benchmark's attempts (current revision), sorted; none from a Parquet export written
    before the store kept every score (it has no ``scores`` table)."""
    try:
        # most stores hold no per-scorer rows (native logs carry one score an attempt): asked first, as the join
        # below costs a read of the attempts' file list even when ``scores`` is empty (0.04 s at 10M attempts)
        if not query_rows(con, "SELECT 1 FROM scores WHERE is_current LIMIT 1"):
            return []
        rows = query_rows(
            con,
            "SELECT DISTINCT s.scorer FROM scores s JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) "
            "WHERE r.benchmark = ? AND s.is_current ORDER BY 1",
            [benchmark],
        )
    except QueryError as exc:
        if isinstance(exc.__cause__, duckdb.CatalogException):
            return []
        raise
    return [str(r[0]) for r in rows]


def check_scorer(con: duckdb.DuckDBPyConnection, *, benchmark: str, scorer: str) -> str:
    """``scorer`` itself when the benchmark has it; a dict key alone (``fluency`` for ``multi/fluency``) when only
    one scorer has that key.

    Raises:
        ScorerNotFoundError: the benchmark has no such score; the message lists the ones it has.
    """
    names = available_scorers(con, benchmark=benchmark)
    if scorer in names:
        return scorer
    keyed = [n for n in names if "/" in n and n.split("/", 1)[1] == scorer]
    if len(keyed) == 1:
        return keyed[0]
    have = ", ".join(names) if names else "none (its logs carry one score per attempt: the headline)"
    raise ScorerNotFoundError(f"unknown scorer {scorer!r} for benchmark {benchmark!r}; scorers: {have}")


def scorer_scale(con: duckdb.DuckDBPyConnection, *, benchmark: str, scorer: str) -> str:
    """``binary`` when every value of the scorer is 0 or 1, ``continuous`` within [0, 1], else ``raw`` (a rating
    on its own scale: ranked by its mean, with no pass rate)."""
    rows = query_rows(
        con,
        "SELECT bool_and(s.value IN (0, 1)), bool_and(s.value BETWEEN 0 AND 1) FROM scores s "
        "JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) "
        "WHERE r.benchmark = ? AND s.scorer = ? AND s.is_current AND s.value IS NOT NULL",
        [benchmark, scorer],
    )
    is_binary, is_unit = rows[0] if rows else (None, None)
    if is_binary is None or is_binary:
        return "binary"
    return "continuous" if is_unit else "raw"


def scorer_outcomes(
    con: duckdb.DuckDBPyConnection,
    *,
    run_ids: Sequence[str],
    scorer: str,
    threshold: float | None,
    exclude_errored: bool = False,
) -> pd.DataFrame:
    """``task_outcomes`` columns (run_id, task_id, n, c, score, steps, cost_usd) from one scorer's current values:
    ``c`` counts values at or above ``threshold`` (None: no pass rate, c = 0). An attempt that errored or hit a
    limit without that score counts 0, as the headline does; a completed attempt without it is left out."""
    params = {
        "run_ids": list(run_ids),
        "scorer": scorer,
        "threshold": math.inf if threshold is None else float(threshold),
        "exclude_errored": bool(exclude_errored),
    }
    return query_df(con, load_sql("task_outcomes_scorer"), params)

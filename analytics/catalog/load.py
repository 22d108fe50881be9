"""What the database holds, read: the runs per benchmark and agent, counts, names. The only module of
``analytics.catalog`` that queries."""

from __future__ import annotations

import duckdb

from analytics.catalog.compute import Catalog, catalog_from
from store import ALL_RUNS, RunFilter, RunlensError, query_df, query_rows, with_run_filter

ATTEMPTS_SQL = "SELECT coalesce(sum(n_attempts), 0) FROM run_judge_counts"


# the store's attempts as ``attempt_count`` sums them, beside the per-(benchmark, agent) rows: one statement (on a
# lake each statement reads its tables' catalog entries, about 0.01 CPU s whatever it computes)
CATALOG_SQL = f"""
SELECT benchmark, agent, min(eval_date) AS d0, max(eval_date) AS d1, count(*) AS n, bool_or(is_demo) AS demo,
       ({ATTEMPTS_SQL}) AS n_attempts
FROM runs GROUP BY benchmark, agent ORDER BY benchmark, agent
"""


def catalog(con: duckdb.DuckDBPyConnection) -> Catalog:
    """Filter options and headline counts (``attempt_count`` for the store's attempts), in one statement."""
    df = query_df(con, CATALOG_SQL)
    if df.empty:  # no run: the attempts' count still comes from the kept counts
        return catalog_from(df, attempt_count(con))
    return catalog_from(df.drop(columns="n_attempts"), int(df["n_attempts"].iloc[0]))


def attempt_count(con: duckdb.DuckDBPyConnection) -> int:
    """The store's attempts, summed from the per-run counts kept at ingest (``run_judge_counts``, one row per run):
    ``count(*)`` of ``attempts`` opened every data file of the table (450 at 10M attempts: 0.04 CPU s of the
    sidebar's first read after each change; tests/test_scale_equal.py compares the two)."""
    return int(query_rows(con, ATTEMPTS_SQL)[0][0])


def filtered_counts(con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS) -> tuple[int, int]:
    """(runs, attempts) in the view the sidebar's filters select (the sidebar's counts)."""
    sql = with_run_filter(
        "SELECT count(DISTINCT r.run_id), count(a.run_id) FROM runs r LEFT JOIN attempts a USING (run_id) "
        "WHERE $run_filter"
    )
    n_runs, n_attempts = query_rows(con, sql, run_filter.params())[0]
    return int(n_runs), int(n_attempts)


def filtered_run_count(con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS) -> int:
    """Runs in the view the sidebar's filters select, from the runs table alone (the sidebar's count: its cost
    does not grow with the attempts; ``filtered_counts`` counts those too, by reading every attempt of the view)."""
    sql = with_run_filter("SELECT count(*) FROM runs r WHERE $run_filter")
    return int(query_rows(con, sql, run_filter.params())[0][0])


def default_benchmark(con: duckdb.DuckDBPyConnection) -> str | None:
    """The benchmark a report shows when none is named: the one with the most runs (ties by name), for every
    report alike (IRT, TMF); None for an empty database."""
    rows = query_rows(con, "SELECT benchmark FROM runs GROUP BY benchmark ORDER BY count(*) DESC, benchmark LIMIT 1")
    return rows[0][0] if rows else None


def benchmark_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every declared benchmark, by name (those without runs included)."""
    return [r[0] for r in query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY benchmark")]


def require_benchmark(con: duckdb.DuckDBPyConnection, benchmark: str) -> str:
    """``benchmark`` when the database declares it, else a RunlensError naming the ones it has."""
    names = benchmark_names(con)
    if benchmark not in names:
        have = ", ".join(names) or "none"
        raise RunlensError(f"no benchmark named {benchmark!r} (the database has: {have})")
    return benchmark

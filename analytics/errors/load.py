"""errors, loaded: failed attempts and their codes per (run, level, category) from the store, aggregated in
DuckDB (the only module of the feature that queries)."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pandas as pd

from analytics.errors.compute import chosen_sources, table_of_cells
from analytics.sqlfiles import load_sql
from store import ALL_RUNS, RunFilter, query_df, query_rows

# The bit of each label source in the aggregates' source sets (run_task_codes, run_code_pairs: migration 008).
SOURCE_BITS = {"label": 1, "rule": 2, "judge": 4}


def sources_mask(sources: Sequence[str] | str | None) -> int:
    """The chosen sources (``chosen_sources``: None is all) as a set of bits."""
    return sum(SOURCE_BITS[s] for s in set(chosen_sources(sources) or SOURCE_BITS))


def error_cells(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    sources: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Failed attempts per (run, level, category, code), aggregated in DuckDB."""
    return query_df(con, load_sql("error_cells"), run_filter.params() | {"sources_mask": sources_mask(sources)})


def failed_cells(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
) -> pd.DataFrame:
    """Attempts and failed attempts per (run, level, category), with the run's agent and date."""
    return query_df(con, load_sql("error_failed"), run_filter.params())


def error_table(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    sources: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """One row per (run, slice): a column per code, n_errors, n_total, n_failed, errors_per_failed, shares.

    Every AD-Bench code gets a column (0 when absent); other codes get one when some failed attempt has them.
    """
    runs = failed_cells(con, run_filter)
    if runs.empty:
        return pd.DataFrame()
    cells = error_cells(con, run_filter, sources=sources)
    return table_of_cells(runs, cells)


def cooccurrence(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    sources: Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """Failed attempts carrying both codes, summed over the runs the filter keeps (its ``run_ids`` choose runs):
    code_a, code_b, n."""
    df = query_df(con, load_sql("error_cooccurrence"), run_filter.params() | {"sources_mask": sources_mask(sources)})
    if df.empty:
        return pd.DataFrame(columns=["code_a", "code_b", "n"])
    return df.groupby(["code_a", "code_b"], as_index=False)["n"].sum()


def error_attempts(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str,
    code: str | None = None,
    code_b: str | None = None,
    slice_name: str = "all",
    sources: Sequence[str] | str | None = None,
    limit: int = 500,
) -> pd.DataFrame:
    """The failed attempts behind a bar or cell: run, task, sample, level, category, all their codes."""
    level = slice_name.split("=", 1)[1] if slice_name.startswith("level=") else None
    category = slice_name.split("=", 1)[1] if slice_name.startswith("category=") else None
    ids = query_df(con, "SELECT min(attempt_id) AS lo, max(attempt_id) AS hi FROM attempts WHERE run_id = ?", [run_id])
    lo, hi = (0, -1) if pd.isna(ids["lo"].iloc[0]) else (int(ids["lo"].iloc[0]), int(ids["hi"].iloc[0]))
    return query_df(
        con,
        load_sql("error_attempts"),
        {
            "run_id": run_id,
            "code": code,
            "code_b": code_b,
            "level": level,
            "category": category,
            "sources": chosen_sources(sources),
            "limit": int(limit),
            "lo": lo,
            "hi": hi,
        },
    )


def rule_counts(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """(code, findings) of the stored rule findings, by code."""
    return [
        (str(c), int(n))
        for c, n in query_rows(
            con, "SELECT code, count(*) FROM error_labels WHERE source = 'rule' GROUP BY code ORDER BY code"
        )
    ]

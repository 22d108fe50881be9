"""The analytics queries kept as files in ``analytics/sql/`` (the store's own queries live in ``store/sql/``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

import store

SQL_DIR = Path(__file__).resolve().parent / "sql"


def load_sql(name: str) -> str:
    """Text of ``analytics/sql/<name>.sql``, with the one run-filter condition where it says ``$run_filter``."""
    sql = store.load_sql(name, folder=SQL_DIR)
    return store.with_run_filter(sql) if "$run_filter" in sql else sql


def run_task_aggregates(
    con: duckdb.DuckDBPyConnection, run_id: str, aggregates: str, *, where: str | None = None
) -> pd.DataFrame:
    """One row per task of one run: ``task_id`` and the ``aggregates`` (SQL over its attempts, e.g. ``avg(score)
    AS score``; code's own constants, never user input), over the attempts matching ``where`` if given."""
    condition = f" AND ({where})" if where else ""
    return store.query_df(
        con, f"SELECT task_id, {aggregates} FROM attempts WHERE run_id = ?{condition} GROUP BY task_id", [run_id]
    )

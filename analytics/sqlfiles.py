"""The analytics queries kept as files in ``analytics/sql/`` (the store's own queries live in ``store/sql/``)."""

from __future__ import annotations

from pathlib import Path

import store

SQL_DIR = Path(__file__).resolve().parent / "sql"


def load_sql(name: str) -> str:
    """Text of ``analytics/sql/<name>.sql``, with the one run-filter condition where it says ``$run_filter``."""
    sql = store.load_sql(name, folder=SQL_DIR)
    return store.with_run_filter(sql) if "$run_filter" in sql else sql

"""Executing SQL: transactions, parameterised statements, and the SQL files of the store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from store.errors import QueryError

if TYPE_CHECKING:  # pandas costs ~0.6 s to import: only the callers of query_df (which DuckDB serves) pay it
    import pandas as pd

SQL_DIR = Path(__file__).resolve().parent / "sql"


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection, *, own: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """``BEGIN`` ... ``COMMIT``, or ``ROLLBACK`` and re-raise on any exception.

    With ``own=False`` the block joins the transaction the caller already opened (nothing is begun or ended).
    """
    if not own:
        yield con
        return
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.TransactionException):  # a failed COMMIT has already rolled back
            con.execute("ROLLBACK")
        raise


def load_sql(name: str, *, folder: Path = SQL_DIR) -> str:
    """Text of ``<folder>/<name>.sql`` (the store's own queries in ``store/sql`` by default)."""
    return (folder / f"{name}.sql").read_text(encoding="utf-8")


def query_df(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
) -> pd.DataFrame:
    """Run one parameterised statement and return a DataFrame; errors carry SQL and params."""
    try:
        return con.execute(sql, params or []).df()
    except duckdb.Error as exc:
        raise QueryError(str(exc), sql, params) from exc


def query_rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    """Run one parameterised statement and return its rows as tuples."""
    try:
        return con.execute(sql, params or []).fetchall()
    except duckdb.Error as exc:
        raise QueryError(str(exc), sql, params) from exc

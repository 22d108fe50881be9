"""Executing SQL: transactions, parameterised statements, and the SQL files of the store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from store.errors import QueryError

if TYPE_CHECKING:  # pandas costs ~0.6 s to import: only the callers of query_df (which DuckDB serves) pay it
    import numpy as np
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


def insert_over_attempts(
    con: duckdb.DuckDBPyConnection,
    table: str,
    attempts_sql: str,
    labels_sql: str,
    params: dict[str, object] | None = None,
    *,
    order_by: str = "",
    sql_of: str = "",
) -> None:
    """``INSERT INTO table`` the rows of its SELECT (``store/sql/<table>.sql``, a name from the store's own list,
    never user input) over the attempts ``attempts_sql`` selects and the labels ``labels_sql`` selects: one
    statement, the SELECT a subquery under the CTEs ``_rl_agg_attempts`` and ``_rl_agg_labels``, which DuckDB inlines
    with filters and projections pushed down; ``order_by`` (column names) orders the rows as they are written;
    ``sql_of``: the table whose SELECT it is, when ``table`` is another one (a temporary table of its columns)."""
    order = f" ORDER BY {order_by}" if order_by else ""
    con.execute(
        f"INSERT INTO {table} WITH _rl_agg_attempts AS ({attempts_sql}), _rl_agg_labels AS ({labels_sql}) "
        f"SELECT * FROM ({load_sql(sql_of or table)}){order}",
        params or {},
    )


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


def query_number_columns(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
) -> dict[str, np.ndarray]:
    """The columns of one parameterised statement of number columns as numpy arrays, as ``query_df`` gives them
    (NULL: NaN; an integer column with a NULL as floats), without a DataFrame: converted from DuckDB's Arrow batches,
    where ``fetchnumpy`` cost more for the 867k (run, task) rows of a benchmark at 10M attempts (the Leaderboard's
    0.13-0.16 against 0.10 CPU s; TMF's 0.082 against 0.049: BENCHMARKS.md "TMF first render at ten million, ninth
    pass").

    Raises:
        QueryError: the statement failed (with its SQL and parameters), or a column is not of numbers.
    """
    import numpy as np
    import pyarrow as pa

    try:
        table = con.execute(sql, params or []).to_arrow_table()
    except duckdb.Error as exc:
        raise QueryError(str(exc), sql, params) from exc
    out = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise QueryError(f"column {name}: expected numbers, got {kind}", sql, params)
        if column.null_count:  # as ``np.ma.filled(values.astype(float), np.nan)``
            column = column.cast(pa.float64())
        out[name] = np.asarray(column.to_numpy())
    return out

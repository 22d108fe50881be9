"""The one gateway to DuckDB: paths, migrations, reader and writer connections, SQL execution.

Concurrency design (build-and-swap, see README "Concurrency"):
    DuckDB lets one process hold a database file read-write, and readers in other processes cannot
    open it meanwhile. Runlens therefore keeps two files:

    * ``<db>``       the primary database; only writers (ingest, judge, IRT fit cache, rule labels)
                     open it, one at a time, waiting with retry if another writer holds it;
    * ``<db>.read``  a published snapshot; every reader (dashboard pages, ``python -m analytics``)
                     opens it read-only for the duration of one query batch.

    When a writer session ends it checkpoints the primary and atomically replaces the snapshot
    (copy to a temporary file, fsync, ``os.replace``). A reader that already has the old snapshot
    open keeps reading the old inode; the next rerun sees the new data. Readers never take the
    primary's lock, so the dashboard never shows a lock error while an ingest runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = PROJECT_ROOT / "data" / "schema.sql"
MIGRATIONS_DIR = PROJECT_ROOT / "data" / "migrations"
SQL_DIR = Path(__file__).resolve().parent / "sql"
DEFAULT_DB = PROJECT_ROOT / "data" / "runlens.duckdb"
SNAPSHOT_SUFFIX = ".read"
LOCK_WAIT_S = 120.0


class RunlensError(Exception):
    """Base class of the project's own errors (pages catch these, not bare Exception)."""


class QueryError(RunlensError):
    """A SQL statement failed; carries the statement and its parameters."""

    def __init__(self, message: str, sql: str, params: Sequence[Any] | dict[str, Any] | None) -> None:
        super().__init__(f"{message}\n-- SQL:\n{sql.strip()}\n-- params: {params!r}")
        self.reason = message
        self.sql = sql
        self.params = params


class DatabaseBusyError(RunlensError):
    """Another process held the database lock for longer than we were willing to wait."""


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """Return the database path: the argument, else env ``RUNLENS_DB``, else ``data/runlens.duckdb``."""
    if db:
        return Path(db)
    env = os.environ.get("RUNLENS_DB")
    return Path(env) if env else DEFAULT_DB


def is_parquet_folder(path: Path) -> bool:
    """True for a folder written by ``export-parquet`` (it holds a ``runlens-parquet.json`` marker)."""
    return path.is_dir() and (path / "runlens-parquet.json").is_file()


def snapshot_path(db_path: Path) -> Path:
    """Path of the published read-only snapshot of ``db_path``."""
    return db_path.with_name(db_path.name + SNAPSHOT_SUFFIX)


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def _connect_with_retry(path: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + wait_s
    delay = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                if _is_lock_error(exc):
                    raise DatabaseBusyError(f"{path}: database is locked by another process") from exc
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


# ---------------------------------------------------------------------------------------------
# Schema and migrations
# ---------------------------------------------------------------------------------------------


def migrations() -> list[tuple[int, str, str]]:
    """All migrations as ``(version, name, sql)`` sorted by version."""
    out = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        version = int(path.name.split("_", 1)[0])
        out.append((version, path.stem, path.read_text(encoding="utf-8")))
    return out


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in ``meta`` (0 for an empty database)."""
    has_meta = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchall()[0][0]
    if not has_meta:
        return 0
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    return int(rows[0][0]) if rows else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations, each in its own transaction; return the resulting version."""
    current = schema_version(con)
    for version, name, sql in migrations():
        if version <= current:
            continue
        with transaction(con):
            con.execute(sql)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), (?, ?)",
                [str(version), f"migration:{name}", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())],
            )
        current = version
    return current


def latest_version() -> int:
    """The newest migration's version number."""
    return max(v for v, _, _ in migrations())


# ---------------------------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------------------------


WRITER_CHECKPOINT_THRESHOLD = "256MB"


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
        con.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def writer(
    db: str | os.PathLike[str] | None = None, *, wait_s: float = LOCK_WAIT_S, publish_snapshot: bool = True
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the primary database read-write (migrated), and publish a snapshot when done.

    Callers open their own transactions; the snapshot is published only when the block exits
    without an exception.
    """
    path = resolve_db_path(db)
    if is_parquet_folder(path):
        raise RunlensError(
            f"{path} is a Parquet folder (read-only); write to a DuckDB file and export it again "
            "with `python -m analytics export-parquet`"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect_with_retry(path, read_only=False, wait_s=wait_s)
    try:
        # Checkpoint every 256 MB of write-ahead log, not DuckDB's 16 MB: a checkpoint after nearly every ingested
        # file rewrote the partly filled last row groups each time (a third of ingest time); none at all until
        # the publish made that one final checkpoint spill to disk under the ingest memory limit (BENCHMARKS.md).
        # Every commit is durable in the write-ahead log either way; the next open replays it after a crash.
        con.execute(f"SET checkpoint_threshold = '{WRITER_CHECKPOINT_THRESHOLD}'")
        migrate(con)
        yield con
        if publish_snapshot:
            publish(con, path)
    finally:
        con.close()


def publish(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Checkpoint the primary and atomically replace its read snapshot."""
    con.execute("CHECKPOINT")
    snap = snapshot_path(path)
    tmp = snap.with_name(snap.name + f".tmp{os.getpid()}")
    shutil.copyfile(path, tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, snap)


def ensure_snapshot(db: str | os.PathLike[str] | None = None) -> Path:
    """Make sure a readable snapshot exists (creating and migrating the DB if needed)."""
    path = resolve_db_path(db)
    if is_parquet_folder(path):
        return path  # a Parquet folder is its own (read-only) snapshot
    snap = snapshot_path(path)
    if snap.exists():
        return snap
    with writer(path):
        pass
    return snap


@contextlib.contextmanager
def reader(db: str | os.PathLike[str] | None = None, *, wait_s: float = 30.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the published snapshot read-only (creating it if the DB has none yet).

    A folder written by ``python -m analytics export-parquet`` is opened as an in-memory DuckDB with a view
    per table over its Parquet files (see analytics/parquet.py).
    """
    if is_parquet_folder(resolve_db_path(db)):
        from analytics import parquet

        pcon = parquet.connect(resolve_db_path(db))
        try:
            yield pcon
        finally:
            pcon.close()
        return
    snap = ensure_snapshot(db)
    con = _connect_with_retry(snap, read_only=True, wait_s=wait_s)
    try:
        yield con
    finally:
        con.close()


def db_version(db: str | os.PathLike[str] | None = None) -> str:
    """A token that changes whenever new data is published (for cache keys)."""
    if is_parquet_folder(resolve_db_path(db)):
        from analytics import parquet

        return parquet.folder_version(resolve_db_path(db))
    snap = snapshot_path(resolve_db_path(db))
    try:
        st = snap.stat()
    except FileNotFoundError:
        return "missing"
    return f"{st.st_mtime_ns}:{st.st_size}"


# ---------------------------------------------------------------------------------------------
# Executing SQL
# ---------------------------------------------------------------------------------------------


def load_sql(name: str) -> str:
    """Text of ``analytics/sql/<name>.sql``."""
    return (SQL_DIR / f"{name}.sql").read_text(encoding="utf-8")


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


@dataclass(frozen=True)
class DbInfo:
    """What the shell needs to know about the database."""

    path: Path
    is_empty: bool
    is_demo: bool
    n_runs: int
    n_attempts: int


def db_info(con: duckdb.DuckDBPyConnection, path: Path) -> DbInfo:
    """Counts and the demo flag of an open database."""
    n_runs, n_demo, n_attempts = query_rows(
        con,
        "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM runs WHERE is_demo),"
        " (SELECT count(*) FROM attempts)",
    )[0]
    return DbInfo(
        path=path,
        is_empty=n_runs == 0,
        is_demo=n_runs > 0 and n_demo > 0,
        n_runs=int(n_runs),
        n_attempts=int(n_attempts),
    )

"""``store.reader(db)``, ``store.writer(db)`` and the other module-level calls: each opens the store at ``db``
(``store.open``) and asks it. The backends (store/backends/) hold how each kind of store does it."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb

from store.backends import LOCK_WAIT_S, Store
from store.backends import open as open_store
from store.lake import Lake
from store.paths import Location

# DuckDB's memory in this process's sessions (``limit_memory``): (memory_limit, temp_directory), or None
_memory: list[tuple[str, str] | None] = [None]


def limit_memory(limit_bytes: int | None, temp_directory: str | os.PathLike[str] | None = None) -> None:
    """Hold the DuckDB instance each of this process's sessions (``reader``, ``writer``) runs in to ``limit_bytes``
    (DuckDB's ``memory_limit``; None: sessions opened from now on are left as DuckDB sets them, 80 % of the
    machine's memory by default). Beyond it DuckDB spills what
    it can (sorts, joins, aggregates) to ``temp_directory`` (default: a folder of this process under the system's
    temporary folder) and fails a statement that still does not fit with its out-of-memory error. The dashboard sets
    it from its memory budget (ui/shell.py, ``ingest.workers.server_duckdb_bytes``): a search that scans ten million
    attempts held 19.9 GB of the server's memory without it (BENCHMARKS.md)."""
    if limit_bytes is None:
        _memory[0] = None
        return
    spill = temp_directory or Path(tempfile.gettempdir()) / f"runlens-spill-{os.getpid()}"
    _memory[0] = (f"{max(int(limit_bytes) // 2**20, 1)}MiB", str(spill))


def memory_limit() -> str | None:
    """The DuckDB memory limit of this process's sessions (``limit_memory``), e.g. '3072MiB'; None: DuckDB's default."""
    return None if _memory[0] is None else _memory[0][0]


def _limited(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` with this process's limit applied to its instance (a global setting: every session of the instance)."""
    if _memory[0] is not None:
        limit, spill = _memory[0]
        con.execute("SET memory_limit = ?", [limit])
        if con.execute("SELECT current_setting('temp_directory')").fetchone() != (spill,):
            # an instance that has spilled already keeps the folder it spills to
            with contextlib.suppress(duckdb.Error):
                con.execute("SET temp_directory = ?", [spill])
    return con


@contextlib.contextmanager
def reader(
    db: Location | Store = None, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the store's published data (``Store.reader``): the snapshot of a DuckDB file, a
    Parquet folder's views, a lake at its newest snapshot or at ``as_of``; within this process's memory limit
    (``limit_memory``).

    Raises:
        RunlensError: ``as_of`` on a store without time travel (a DuckDB file or a Parquet folder).
    """
    with open_store(db).reader(wait_s=wait_s, as_of=as_of) as con:
        yield _limited(con)


@contextlib.contextmanager
def writer(
    db: Location | Store = None,
    *,
    wait_s: float = LOCK_WAIT_S,
    publish_snapshot: bool = True,
    short_session: bool = False,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store's one read-write session, migrated, published when it ends (``Store.writer``), within this
    process's memory limit (``limit_memory``).

    Args:
        db: the store (see ``store.open``).
        wait_s: how long to wait for another writer before raising ``DatabaseBusyError``.
        publish_snapshot: publish the read snapshot at the end.
        short_session: this session is short (one small upload): while it waits for the lock, a writer that
            finishes may leave its publish to it, so a burst of uploads publishes once (README "Concurrency").

    Raises:
        DatabaseBusyError: another writer kept the lock for longer than ``wait_s``.
        RunlensError: the store is read-only (a Parquet folder).
    """
    with open_store(db).writer(wait_s=wait_s, publish_snapshot=publish_snapshot, short_session=short_session) as con:
        yield _limited(con)


def publish(con: duckdb.DuckDBPyConnection, db: Location | Store) -> None:
    """Publish when the current writer session of ``db`` ends, even if its block raises (``Store.publish``).

    Raises:
        RunlensError: the calling thread holds no writer session of a DuckDB file ``db``.
    """
    open_store(db).publish(con)


def publish_now(con: duckdb.DuckDBPyConnection, db: Location | Store) -> bool:
    """Publish now, from inside a writer session (``Store.publish_now``); True when the snapshot was replaced."""
    return open_store(db).publish_now(con)


def ensure_snapshot(db: Location | Store = None) -> Path | Lake:
    """Make sure readable, current published data exists, creating and migrating the store if needed."""
    return open_store(db).ensure_snapshot()


def db_version(db: Location | Store = None) -> str:
    """A token that changes whenever new data is published (for cache keys; a lake's snapshot id)."""
    return open_store(db).version()

"""``store.reader(db)``, ``store.writer(db)`` and the other module-level calls: each opens the store at ``db``
(``store.open``) and asks it. The backends (store/backends/) hold how each kind of store does it."""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractContextManager
from pathlib import Path

import duckdb

from store.backends import LOCK_WAIT_S, Store
from store.backends import open as open_store
from store.lake import Lake
from store.paths import Location


def reader(
    db: Location | Store = None, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """A read-only connection to the store's published data (``Store.reader``): the snapshot of a DuckDB file, a
    Parquet folder's views, a lake at its newest snapshot or at ``as_of``.

    Raises:
        RunlensError: ``as_of`` on a store without time travel (a DuckDB file or a Parquet folder).
    """
    return open_store(db).reader(wait_s=wait_s, as_of=as_of)


def writer(
    db: Location | Store = None,
    *,
    wait_s: float = LOCK_WAIT_S,
    publish_snapshot: bool = True,
    short_session: bool = False,
) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
    """The store's one read-write session, migrated, published when it ends (``Store.writer``).

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
    return open_store(db).writer(wait_s=wait_s, publish_snapshot=publish_snapshot, short_session=short_session)


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

"""A lake's writer session: the writer lock (a PostgreSQL advisory lock for a team store, the ``flock`` of the
catalog file for a local lake), retries of a commit that met DuckLake's conflict, and who committed what
(``store/lake.py`` holds the lake itself: locations, extensions, connections, snapshots)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duckdb

from store.errors import DatabaseBusyError
from store.lake import Lake, _catalog, _psycopg, alias

LOCK_KEY = int.from_bytes(hashlib.sha256(b"runlens writer session").digest()[:8], "big", signed=True)
RETRY_MAX = 8  # commit attempts on a DuckLake conflict (with a maintenance job or a writer outside Runlens)


@dataclass
class _Held:
    pg: Any  # the psycopg connection that holds the advisory lock
    depth: int


_HELD: dict[tuple[str, int], _Held] = {}
_HELD_GUARD = threading.Lock()


@contextlib.contextmanager
def session_lock(lake: Lake, *, wait_s: float) -> Iterator[None]:
    """Hold the lake's writer lock (a PostgreSQL advisory lock; for a SQLite lake the ``flock`` of
    ``<catalog>.lock``, as for a DuckDB file) for the block; re-entrant in one thread.

    Raises:
        DatabaseBusyError: another writer held it for longer than ``wait_s``.
        LakeError: PostgreSQL cannot be reached.
    """
    if lake.is_local:
        from store import writelock

        try:
            state = writelock.acquire(lake.catalog_file, wait_s=wait_s, queue=False)
        except writelock.LockTimeout as exc:
            raise DatabaseBusyError(
                f"{lake.label}: another writer held the lake for longer than {wait_s:.0f} s"
            ) from exc
        try:
            yield
        finally:
            writelock.release(state)
        return
    key = (lake.conninfo, threading.get_ident())
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None:
            held.depth += 1
    if held is not None:
        try:
            yield
        finally:
            held.depth -= 1
        return
    psycopg = _psycopg()
    # closing the connection ends the PostgreSQL session: the advisory lock goes with it. A blocking wait in
    # PostgreSQL's lock queue lets writers in first come, first served, the moment the holder ends (no polling);
    # lock_timeout bounds the wait.
    with _catalog(lake) as pg:
        pg.execute("SELECT set_config('lock_timeout', %s, false)", [f"{max(1, round(wait_s * 1000))}ms"])
        try:
            pg.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        except psycopg.errors.LockNotAvailable as exc:
            raise DatabaseBusyError(
                f"{lake.label}: another writer held the lake for longer than {wait_s:.0f} s"
            ) from exc
        with _HELD_GUARD:
            _HELD[key] = _Held(pg, 1)
        try:
            yield
        finally:
            with _HELD_GUARD:
                del _HELD[key]


def is_conflict(exc: BaseException) -> bool:
    """True for DuckLake's commit conflict (another commit touched what this transaction changed)."""
    return isinstance(exc, duckdb.TransactionException) or "conflict" in str(exc).lower()


def backoff_s(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based) of a conflicting commit: exponential, capped at 2 s."""
    return float(min(0.05 * 2 ** (attempt - 1), 2.0))


def set_commit_message(con: duckdb.DuckDBPyConnection, message: str, extra: dict[str, Any]) -> None:
    """Record who committed what in the current transaction's DuckLake snapshot (``snapshots()`` shows it)."""
    author = os.environ.get("RUNLENS_USER") or os.environ.get("USER") or os.environ.get("LOGNAME") or "unknown"
    con.execute(
        f"CALL {alias(con)}.set_commit_message(?, ?, extra_info => ?)",
        [author, message, json.dumps(extra, sort_keys=True)],
    )

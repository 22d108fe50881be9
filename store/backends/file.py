"""The DuckDB file store: one file, its published read snapshot, the writer lock, publishing.

Concurrency design (build-and-swap behind a writer lock, see README "Concurrency"):
    DuckDB lets one process hold a database file read-write, and readers in other processes cannot
    open it meanwhile. Runlens therefore keeps two files:

    * ``<db>``       the primary database; only writers (ingest, judge, IRT fit cache, rule labels)
                     open it, one session at a time under an exclusive ``flock`` on ``<db>.lock``
                     (store/writelock.py), waiting with retry if another writer holds it;
    * ``<db>.read``  a published snapshot; every reader (dashboard pages, ``python -m analytics``)
                     opens it read-only for the duration of one query batch.

    When a writer session ends it numbers the primary's state (a generation), checkpoints, closes its
    connection and, still holding the lock, copies the file to a temporary one, fsyncs it and renames it
    over the snapshot unless that already holds a later generation. A reader that already has the old
    snapshot open keeps reading the old inode; the next rerun sees the new data. Readers never take the
    primary's lock, so the dashboard never shows a lock error while an ingest runs. A writer that ends while
    a short session waits may leave its publish to it (one publish per burst) and waits for it; a marker
    ``<db>.pending`` lets the next reader or writer publish what a killed writer committed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from store import paths, writelock
from store.backends.base import LOCK_WAIT_S, RawLocation, Store, register
from store.errors import DatabaseBusyError, RunlensError, StoreVersionError
from store.migrate import StoreInfo, describe, migrate
from store.paths import legacy_default_notice, pending_path, snapshot_path
from store.query import transaction

PUBLISH_MAX_DEFER_S = 20.0  # default of RUNLENS_PUBLISH_MAX_DEFER_S (see publish_max_defer_s)


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def _is_newer_storage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "created with an newer version of duckdb" in text or "created with a newer version of duckdb" in text


def _newer_storage_message(path: Path) -> str:
    return (
        f"{path} was written by a newer DuckDB than the {duckdb.__version__} Runlens uses (requirements.txt says why "
        "it is pinned), and DuckDB cannot read a newer storage format. Demo data: delete the file (and its .read "
        "snapshot); the app rebuilds it on the next start. Your own data: with the newer DuckDB run "
        "`EXPORT DATABASE 'folder'`, then `python -m ingest` the logs again or, in DuckDB "
        f"{duckdb.__version__}, `IMPORT DATABASE 'folder'` into a new file."
    )


def written_by_newer_duckdb(path: Path) -> bool:
    """True when the DuckDB file at ``path`` has a storage version newer than the pinned DuckDB reads.

    Only a copy of the file's first block (its header) is opened: opening the primary itself outside the writer
    would drop a writer's lock on it (README "Concurrency").
    """
    try:
        with path.open("rb") as f:
            header = f.read(4096)
    except OSError:
        return False
    if header[8:12] != b"DUCK":
        return False
    with tempfile.TemporaryDirectory(prefix="runlens-header-") as folder:
        probe = Path(folder) / "header.duckdb"
        probe.write_bytes(header)
        try:
            duckdb.connect(str(probe), read_only=True).close()
        except duckdb.Error as exc:
            return _is_newer_storage(exc)
    return False


def set_aside_newer_file(path: Path) -> Path | None:
    """Rename a database a newer DuckDB wrote (and its snapshot) to ``<name>.newer-duckdb[.read]`` so a new one can
    be made in its place; return the new name, or None when the file is readable (nothing is deleted)."""
    if not written_by_newer_duckdb(path):
        return None
    held = _enter(path, wait_s=LOCK_WAIT_S, queue=False)  # no writer may be using it meanwhile
    try:
        target = path.with_name(path.name + ".newer-duckdb")
        moves = [(snapshot_path(path), Path(f"{target}.read")), (Path(f"{path}.wal"), Path(f"{target}.wal"))]
        for src, dst in [*moves, (path, target)]:
            if src.exists():
                os.replace(src, dst)
    finally:
        writelock.release(held)
    return target


def _connect_with_retry(path: Path, *, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + wait_s
    delay = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if _is_newer_storage(exc):
                raise StoreVersionError(_newer_storage_message(path)) from exc
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                if _is_lock_error(exc):
                    raise DatabaseBusyError(f"{path}: database is locked by another process") from exc
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


WRITER_CHECKPOINT_THRESHOLD = "256MB"


@contextlib.contextmanager
def writer(
    db: str | os.PathLike[str],
    *,
    wait_s: float = LOCK_WAIT_S,
    publish_snapshot: bool = True,
    short_session: bool = False,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the primary database read-write (migrated) under the writer lock, and publish a snapshot when done.

    The lock (``<db>.lock``, see store/writelock.py) is held from before the connection opens until the
    snapshot is published, so writer sessions never overlap, in any process or thread; the same thread may nest
    sessions (the outermost one publishes). Callers open their own transactions; the snapshot is published only
    when the block exits without an exception (or after ``publish(con, path)``, whatever the exit).

    Args:
        db: the database file.
        wait_s: how long to wait for another writer before raising ``DatabaseBusyError``.
        publish_snapshot: publish the read snapshot at the end.
        short_session: this session is short (one small upload): while it waits for the lock, a writer that
            finishes may leave its publish to it, so a burst of uploads publishes once (README "Concurrency").

    Raises:
        DatabaseBusyError: another writer kept the lock for longer than ``wait_s``.
    """
    path = Path(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    state = _enter(path, wait_s=wait_s, queue=short_session)
    deferred: Generation | None = None
    try:
        # Marked before the first commit: a writer killed from here on leaves the marker, and the next reader or
        # writer publishes what it committed (ensure_snapshot) instead of the dashboards lagging until an upload.
        has_marked = state.depth == 1 and _mark_pending(path)
        con = _open_writer(path, wait_s=max(wait_s - (time.monotonic() - started), 0.0))
        is_ok = False
        try:
            yield con
            is_ok = True
        finally:
            if state.depth > 1:  # nested: the outermost session publishes
                state.publish_requested |= publish_snapshot and is_ok
                con.close()
            else:
                deferred = _end_session(path, con, state, is_ok=is_ok, publish_snapshot=publish_snapshot)
                if has_marked and not (state.publish_requested or (publish_snapshot and is_ok)):
                    _clear_pending(path)  # the caller asked for no publish: do not let a reader make one
    finally:
        writelock.release(state)
    if deferred is not None:
        _await_publish(path, deferred, wait_s=wait_s)


def _enter(path: Path, *, wait_s: float, queue: bool) -> writelock._Holder:
    try:
        return writelock.acquire(path, wait_s=wait_s, queue=queue)
    except writelock.LockTimeout as exc:
        raise DatabaseBusyError(f"{path}: database is locked by another writer") from exc


def _create_whole(path: Path) -> None:
    """Make a new, empty database at ``path`` whole or not at all (the caller holds the writer lock).

    DuckDB creates the file first and writes its header after: a process killed in between left an empty file that
    no later open accepts ("exists, but it is not a valid DuckDB database file"). The file is made under a
    temporary name and renamed into place once DuckDB has closed it. An empty file left by such a kill (with no
    write-ahead log beside it) holds nothing: it is replaced. Any other file is left for DuckDB to judge.
    """
    try:
        if path.stat().st_size > 0 or Path(f"{path}.wal").exists():
            return
    except FileNotFoundError:
        pass
    making = path.with_name(f".{path.name}.creating")
    for leftover in (making, Path(f"{making}.wal")):  # from a process killed while it made the file
        leftover.unlink(missing_ok=True)
    duckdb.connect(str(making)).close()
    os.replace(making, path)


def _open_writer(path: Path, *, wait_s: float) -> duckdb.DuckDBPyConnection:
    """A read-write connection to the primary, migrated (the caller holds the writer lock)."""
    _create_whole(path)
    con = _connect_with_retry(path, read_only=False, wait_s=wait_s)
    try:
        # Checkpoint every 256 MB of write-ahead log, not DuckDB's 16 MB: a checkpoint after nearly every ingested
        # file rewrote the partly filled last row groups each time (a third of ingest time); none at all until
        # the publish made that one final checkpoint spill to disk under the ingest memory limit (BENCHMARKS.md).
        # Every commit is durable in the write-ahead log either way; the next open replays it after a crash.
        con.execute(f"SET checkpoint_threshold = '{WRITER_CHECKPOINT_THRESHOLD}'")
        migrate(con)
    except BaseException:
        con.close()
        raise
    return con


def _end_session(
    path: Path, con: duckdb.DuckDBPyConnection, state: writelock._Holder, *, is_ok: bool, publish_snapshot: bool
) -> Generation | None:
    """Close the outermost session's connection and publish (or leave the publish to a queued writer).

    Returns the generation to wait for when the publish was left to a writer queued behind this one.
    """
    wanted = state.publish_requested or (publish_snapshot and is_ok)
    try:
        generation = seal(con) if wanted else None
    finally:
        con.close()  # before the copy: no handle on the primary but DuckDB's own, and DuckDB's one is gone now
    if generation is None:
        return None
    if _may_leave_publish(path) and is_ok:
        return generation  # a short session is queued: it publishes this generation with its own
    publish_file(path, generation)
    return None


def _may_leave_publish(path: Path) -> bool:
    """True when a short session waits for the lock and no other one does (that one could get the lock first,
    and this session's data would wait for its whole length), and the snapshot has not lagged for too long."""
    return (
        writelock.has_waiters(path)
        and not writelock.has_waiters(path, is_short=False)
        and _pending_age_s(path) < publish_max_defer_s()
    )


@dataclass(frozen=True)
class Generation:
    """Which state of which primary a snapshot holds: ``meta`` keys ``store_id`` and ``generation``.

    ``store_id`` is drawn when a database first publishes, so a snapshot left over from another (deleted or
    restored) primary never counts as newer; ``number`` grows by one with every writer session that publishes.
    """

    store_id: str
    number: int

    def is_newer_than(self, other: Generation | None) -> bool:
        """True unless ``other`` is the same store at this generation or a later one."""
        return other is None or other.store_id != self.store_id or self.number > other.number


def seal(con: duckdb.DuckDBPyConnection) -> Generation:
    """Give the primary's current state the next generation number and checkpoint it (writer sessions only)."""
    with transaction(con):
        meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('store_id', 'generation')").fetchall())
        generation = Generation(meta.get("store_id") or uuid.uuid4().hex, int(meta.get("generation") or 0) + 1)
        con.execute(
            "INSERT OR REPLACE INTO meta VALUES ('store_id', ?), ('generation', ?)",
            [generation.store_id, str(generation.number)],
        )
    con.execute("CHECKPOINT")
    return generation


def snapshot_generation(snap: Path) -> Generation | None:
    """The generation a snapshot file holds; None when it is missing, unreadable or older than generations."""
    if not snap.exists():
        return None
    # A private in-memory DuckDB: duckdb.connect(snap) could hand back this process's cached instance of a file
    # already replaced (an open reader keeps the old inode), and would report an old generation.
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"ATTACH '{_sql_quote(snap)}' AS rl_snap (READ_ONLY)")
        meta = dict(
            con.execute("SELECT key, value FROM rl_snap.meta WHERE key IN ('store_id', 'generation')").fetchall()
        )
    except duckdb.Error:
        return None
    finally:
        con.close()
    if "store_id" not in meta or "generation" not in meta:
        return None
    return Generation(meta["store_id"], int(meta["generation"]))


def _sql_quote(path: Path) -> str:
    return str(path).replace("'", "''")


def publish_file(path: Path, generation: Generation) -> bool:
    """Copy the closed, checkpointed primary to ``<db>.read`` atomically, unless that holds ``generation`` or later.

    Only for the holder of the writer lock after its connection is closed (the copy opens the primary, which
    would release a DuckDB lock held by this process). Returns True when the snapshot was replaced.
    """
    snap = snapshot_path(path)
    if not generation.is_newer_than(snapshot_generation(snap)):
        _clear_pending(path)
        return False
    tmp = snap.with_name(snap.name + f".tmp{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        shutil.copyfile(path, tmp)
        if not _swap_in(tmp, snap, generation):
            return False
    finally:
        tmp.unlink(missing_ok=True)
    _clear_pending(path)
    return True


def _swap_in(tmp: Path, snap: Path, generation: Generation) -> bool:
    """fsync the copy ``tmp`` and rename it over the snapshot, unless the snapshot already holds ``generation`` or
    a later one: checked again just before the rename, so whatever happened during a slow copy, the snapshot never
    goes back in time."""
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    if not generation.is_newer_than(snapshot_generation(snap)):
        return False
    os.replace(tmp, snap)
    _fsync_dir(snap.parent)
    return True


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)  # makes the rename itself durable
    finally:
        os.close(fd)


def publish(con: duckdb.DuckDBPyConnection, path: str | os.PathLike[str]) -> None:
    """Publish the snapshot when the current writer session ends, even if its block raises.

    For sessions opened with ``publish_snapshot=False`` that want a publish whatever happens (the judge saves
    partial work on an interrupt). The copy itself waits for the session's end, when the connection is closed;
    a long-lived session that must publish midway uses ``publish_now``.

    Raises:
        RunlensError: the calling thread holds no writer session of ``path``.
    """
    state = writelock.held_here(Path(path))
    if state is None:
        raise RunlensError(f"{path}: publish() needs an open writer session (store.writer)")
    state.publish_requested = True


def publish_now(con: duckdb.DuckDBPyConnection, path: str | os.PathLike[str]) -> bool:
    """Publish the snapshot now, from inside a writer session, through DuckDB itself (``COPY FROM DATABASE``).

    About eight times slower than the file copy made at the session's end (BENCHMARKS.md), but it never opens
    the primary outside the connection. Returns True when the snapshot was replaced.

    Raises:
        RunlensError: the calling thread holds no writer session of ``path``.
    """
    if writelock.held_here(Path(path)) is None:
        raise RunlensError(f"{path}: publish_now() needs an open writer session (store.writer)")
    generation = seal(con)
    snap = snapshot_path(Path(path))
    tmp = snap.with_name(snap.name + f".tmp{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.unlink(missing_ok=True)
    try:
        name = con.execute("SELECT current_database()").fetchall()[0][0]
        con.execute(f"ATTACH '{_sql_quote(tmp)}' AS rl_publish")
        try:
            con.execute(f'COPY FROM DATABASE "{name}" TO rl_publish')
        finally:
            con.execute("DETACH rl_publish")
        return _swap_in(tmp, snap, generation)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)


def publish_max_defer_s() -> float:
    """How long the snapshot may lag while writers leave their publish to queued ones (``RUNLENS_PUBLISH_MAX_DEFER_S``)."""
    return float(os.environ.get("RUNLENS_PUBLISH_MAX_DEFER_S") or PUBLISH_MAX_DEFER_S)


def _mark_pending(path: Path) -> bool:
    """Create the pending marker unless it exists (True when created here)."""
    try:  # an existing marker keeps its older time: that bounds how long publishes are deferred
        os.close(os.open(pending_path(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except FileExistsError:
        return False
    return True


def _clear_pending(path: Path) -> None:
    pending_path(path).unlink(missing_ok=True)


def _pending_age_s(path: Path) -> float:
    try:
        return time.time() - pending_path(path).stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _await_publish(path: Path, generation: Generation, *, wait_s: float) -> None:
    """After leaving the publish to a queued writer: return once the snapshot holds ``generation``.

    If the queue drains without that publish (the queued writer died, or failed), take the lock back and publish,
    so a crash never leaves the snapshot behind the data this session committed.

    Raises:
        DatabaseBusyError: not published within ``wait_s`` (the data is committed; a later writer publishes it).
    """
    snap = snapshot_path(path)
    deadline = time.monotonic() + wait_s
    seen: tuple[int, int] | None = None
    while True:
        stamp = _stamp(snap)
        if stamp != seen:  # read the generation only when the file changed
            seen = stamp
            if not generation.is_newer_than(snapshot_generation(snap)):
                return
        if _publish_if_idle(path, generation):
            return
        if time.monotonic() > deadline:
            raise DatabaseBusyError(
                f"{path}: committed, but the read snapshot was not republished within {wait_s:.0f} s "
                "(another writer holds the lock); the next writer session publishes it"
            )
        time.sleep(writelock.POLL_MAX_S)


def _stamp(snap: Path) -> tuple[int, int] | None:
    try:
        st = snap.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def _publish_if_idle(path: Path, generation: Generation | None, *, wait_s: float = LOCK_WAIT_S) -> bool:
    """Take the writer lock if nobody holds or awaits it, and publish unless the snapshot is already at
    ``generation`` (None: publish whatever is pending). False when the lock was busy."""
    state = writelock.try_acquire(path)
    if state is None:
        return False
    try:
        if generation is not None and not generation.is_newer_than(snapshot_generation(snapshot_path(path))):
            return True
        if generation is None and not pending_path(path).exists():
            return True
        # A full session: a writer that died may have left commits in the write-ahead log, which only DuckDB replays.
        con = _open_writer(path, wait_s=wait_s)
        try:
            sealed = seal(con)
        finally:
            con.close()
        publish_file(path, sealed)
    finally:
        writelock.release(state)
    return True


def ensure_snapshot(db: str | os.PathLike[str]) -> Path:
    """Make sure a readable, current snapshot exists (creating and migrating the DB if needed); return its path.

    A pending marker with the writer lock free means a writer died between its commits and its publish: publish
    now, so readers do not lag behind committed data until some unrelated upload.
    """
    path = Path(db)
    snap = snapshot_path(path)
    if snap.exists():
        if pending_path(path).exists():
            with contextlib.suppress(OSError, duckdb.Error, RunlensError):  # a read-only folder: read what there is
                _publish_if_idle(path, None, wait_s=1.0)  # a page load does not wait for a stray DuckDB lock
        return snap
    with writer(path):
        pass
    return snap


@contextlib.contextmanager
def reader(
    db: str | os.PathLike[str], *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the published snapshot read-only (creating it if the DB has none yet).

    Raises:
        RunlensError: ``as_of`` (a DuckDB file keeps only its latest state).
    """
    if as_of not in (None, ""):
        raise RunlensError(
            f"{db}: --as-of (time travel) needs a team store (DuckLake); a DuckDB file keeps only its latest state"
        )
    path = Path(db)
    ensure_snapshot(path)
    con = _connect_with_retry(snapshot_path(path), read_only=True, wait_s=wait_s)
    try:
        yield con
    finally:
        con.close()


def db_version(db: str | os.PathLike[str]) -> str:
    """A token that changes whenever a new snapshot is published (for cache keys)."""
    snap = snapshot_path(Path(db))
    try:
        st = snap.stat()
    except FileNotFoundError:
        return "missing"
    return f"{st.st_mtime_ns}:{st.st_size}"


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


CATALOG_ALIAS = "runlens"  # the snapshot's name in the SQL console's sandbox


@register
class FileStore(Store):
    """A DuckDB file (``<db>``) and its published read snapshot (``<db>.read``): any path no other backend claims."""

    is_fallback = True

    def __init__(self, location: RawLocation) -> None:
        self._path = Path(location)  # type: ignore[arg-type]  # claims() took no Lake

    @classmethod
    def claims(cls, location: RawLocation) -> bool:
        return isinstance(location, (str, os.PathLike))

    @property
    def location(self) -> Path:
        return self._path

    def reader(
        self, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
    ) -> contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]:
        return reader(self._path, wait_s=wait_s, as_of=as_of)

    def writer(
        self, *, wait_s: float = LOCK_WAIT_S, publish_snapshot: bool = True, short_session: bool = False
    ) -> contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]:
        return writer(self._path, wait_s=wait_s, publish_snapshot=publish_snapshot, short_session=short_session)

    def sandbox(self, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        snap = self.ensure_snapshot()
        con = duckdb.connect(":memory:", config=config)
        try:
            con.execute("SET enable_progress_bar = false")  # it prints to stdout (the answer travels apart anyway)
            # The snapshot is attached before external access is switched off (it is itself a file).
            con.execute(f"ATTACH {_sql_literal(str(snap))} AS {CATALOG_ALIAS} (READ_ONLY)")
            con.execute(f"USE {CATALOG_ALIAS}")
            con.execute("SET enable_external_access = false")
            # An attached file stays on allowed_paths, so read_blob('<snapshot>') would still read it: switch off
            # the local file system itself (the attached database keeps its open handle).
            con.execute("SET disabled_filesystems = 'LocalFileSystem'")
            con.execute("SET lock_configuration = true")
        except BaseException:
            con.close()
            raise
        return con

    def ensure_snapshot(self) -> Path:
        return ensure_snapshot(self._path)

    def version(self) -> str:
        return db_version(self._path)

    def publish(self, con: duckdb.DuckDBPyConnection) -> None:
        publish(con, self._path)

    def publish_now(self, con: duckdb.DuckDBPyConnection) -> bool:
        return publish_now(con, self._path)

    def caption(self) -> str | None:
        return legacy_default_notice(self._path)

    def exists(self) -> bool:
        return self._path.exists()

    def sidecar_path(self, suffix: str) -> Path:
        return self._path.with_name(self._path.name + suffix)

    @property
    def takes_demo_data(self) -> bool:
        return True

    def prepare(self) -> StoreInfo:
        """Create or migrate the file; read the published snapshot when it is current (opening a writer would
        republish it, a full copy of the database, on every start)."""
        info = None
        if snapshot_path(self._path).exists():
            with self.reader() as con:
                info = describe(con)
        if info is None or not info.is_current:  # only an older schema needs the writer (it migrates, republishes)
            with self.writer() as con:
                info = describe(con)
        return info

    def set_aside_unreadable(self) -> Path | None:
        """The default file a DuckDB newer than the pinned one wrote is renamed aside (``set_aside_newer_file``) so
        a new one can be made; its new name, or None."""
        if self._path.resolve() != paths.DEFAULT_DB.resolve():
            return None
        return set_aside_newer_file(self._path)

    def search_index_path(self, suffix: str) -> Path | None:
        return self._path.with_name(self._path.name + suffix)

    def open_search_source(self, index: Path) -> tuple[duckdb.DuckDBPyConnection, str]:
        con = duckdb.connect(str(index))
        return con, f"ATTACH {_sql_literal(str(snapshot_path(self._path)))} AS src (READ_ONLY)"

"""A DuckLake store: catalog in PostgreSQL (the team store) or in a local SQLite file (the local lake), data as
Parquet in a folder or on S3-compatible storage.

Locations (``--db`` / ``RUNLENS_DB``):

* ``ducklake:postgres:<libpq connection string>``, e.g. ``ducklake:postgres:dbname=runlens host=db.internal
  user=runlens``: the team store, for writers on several machines;
* ``ducklake:sqlite:<path of the catalog file>``, e.g. ``ducklake:sqlite:data/runlens.lake``: one machine, no
  server. The catalog is a SQLite file in WAL mode (readers in other processes read while a writer commits), its
  Parquet files go to ``<catalog>.files/`` beside it, and writer sessions take the same ``flock`` as a DuckDB file
  store (``<catalog>.lock``, store/writelock.py) instead of PostgreSQL's advisory lock. A small upload writes a
  few Parquet files and one catalog transaction: nothing is copied, whatever the store's size (docs/scale.md).

The data path comes from ``RUNLENS_LAKE_DATA_PATH`` (a local folder or ``s3://bucket/prefix``); when unset, the path
stored in the lake is used (creating a PostgreSQL lake needs it; a SQLite lake uses ``<catalog>.files/``). S3 credentials come from ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION`` and ``AWS_ENDPOINT_URL`` (MinIO, R2, Ceph, a local test server).

How the single-file store's guarantees carry over (docs/scale.md):

* **One writer session at a time per lake**, across machines: a PostgreSQL advisory lock held by the session
  (``pg_advisory_lock`` on its own connection; PostgreSQL drops it when the process dies). Under it, ids taken as
  ``max + 1`` and the content-hash check of an upload cannot race, so two uploads of one file cannot both go in,
  and DuckLake's own commit conflicts (which it does not raise for read-then-write) never arise between Runlens
  writers. A session is short: one upload holds it for its own validation and commit, whatever the lake's size. (The session lock, commit retries and messages: store/lake_session.py.)
* **Readers never wait**: each commit is a DuckLake snapshot; a reader attaches the lake read-only, pinned to one
  snapshot id (``as_of``), so a page shows one consistent state and a link can show it again tomorrow.
* **Extensions from PyPI only** (store/lake_extensions.py): ``ducklake``, ``postgres_scanner``, ``sqlite_scanner``
  and ``httpfs`` are loaded from the binaries the ``duckdb-extension-*`` packages ship (by their paths in the
  process's shared instance, else through an extension folder of links: ``_new_instance``); nothing is downloaded at
  run time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb

from store.errors import LakeError
from store.lake_extensions import EXTENSIONS, extension_dir, s3_secret, shipped_binary, sql_literal

PREFIX = "ducklake:"
ALIAS = "runlens_lake"  # the attached catalog's name in every lake connection
LAKE_FILES_SUFFIX = ".files"  # a SQLite lake's default data folder: <catalog><suffix>/


@dataclass(frozen=True)
class Lake:
    """A DuckLake location: its catalog and (optionally) the data path to use."""

    conninfo: str  # the libpq connection string after ``ducklake:postgres:``, or the SQLite catalog's absolute path
    data_path: str | None = None
    catalog: str = "postgres"  # or "sqlite"

    def __str__(self) -> str:
        return f"{PREFIX}{self.catalog}:{self.conninfo}"

    @property
    def is_local(self) -> bool:
        """A SQLite-catalogued lake: one machine, no server, writer sessions under a file lock."""
        return self.catalog == "sqlite"

    @property
    def catalog_file(self) -> Path:
        """The SQLite catalog's path (local lakes only)."""
        return Path(self.conninfo)

    @property
    def label(self) -> str:
        """The location without secrets (a ``password=...`` is masked), for messages and pages."""
        if self.is_local:
            return str(self)
        if self.conninfo.startswith(("postgres://", "postgresql://")):  # libpq's URI form: user:password@host
            url = urlsplit(self.conninfo)
            if url.password is not None:
                netloc = url.netloc.replace(f":{url.password}@", ":***@", 1)
                return f"{PREFIX}postgres:{url._replace(netloc=netloc).geturl()}"
            return f"{PREFIX}postgres:{self.conninfo}"
        parts = [("password=***" if p.lower().startswith("password=") else p) for p in self.conninfo.split()]
        return f"{PREFIX}postgres:{' '.join(parts)}"


def is_lake(db: object) -> bool:
    """True for a DuckLake location (a ``ducklake:`` string)."""
    return isinstance(db, Lake) or (isinstance(db, str) and db.startswith(PREFIX))


def parse(db: str | Lake) -> Lake:
    """The lake a ``ducklake:postgres:...`` or ``ducklake:sqlite:...`` location names (data path from
    ``RUNLENS_LAKE_DATA_PATH``; a SQLite lake's default is ``<catalog>.files/``).

    Raises:
        LakeError: not a PostgreSQL- or SQLite-catalogued DuckLake location.
    """
    if isinstance(db, Lake):
        return db
    rest = db[len(PREFIX) :]
    if rest.startswith("sqlite:"):
        file = rest[len("sqlite:") :].strip()
        if not file:
            raise LakeError(f"{db!r}: the SQLite catalog's path is empty (e.g. ducklake:sqlite:data/runlens.lake)")
        catalog = Path(file).expanduser().resolve()
        default_data = str(catalog.with_name(catalog.name + LAKE_FILES_SUFFIX))
        return Lake(str(catalog), os.environ.get("RUNLENS_LAKE_DATA_PATH") or default_data, "sqlite")
    if not rest.startswith("postgres:"):
        raise LakeError(
            f"{db!r}: a lake is `ducklake:postgres:<libpq connection string>` (a team store, e.g. "
            "ducklake:postgres:dbname=runlens host=localhost) or `ducklake:sqlite:<catalog file>` (one machine, e.g. "
            "ducklake:sqlite:data/runlens.lake); other DuckLake catalogs are not supported"
        )
    conninfo = rest[len("postgres:") :].strip()
    if not conninfo:
        raise LakeError(f"{db!r}: the PostgreSQL connection string is empty (e.g. dbname=runlens host=localhost)")
    return Lake(conninfo, os.environ.get("RUNLENS_LAKE_DATA_PATH") or None)


# --- connections ------------------------------------------------------------------------------------------------


@dataclass
class _Engine:
    con: duckdb.DuckDBPyConnection
    pid: int
    s3: tuple[str, ...]


_ENGINES: dict[str, _Engine] = {}  # one DuckDB instance per lake (its catalog's connection string)
_ENGINE_GUARD = threading.Lock()
_ATTACHED = itertools.count()


def _s3_env() -> tuple[str, ...]:
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL")
    return tuple(os.environ.get(k, "") for k in keys)


def _extensions_of(lake: Lake | None) -> tuple[str, ...]:
    """The extensions a session of ``lake`` loads: a local lake with its data on the local disk needs only
    ``ducklake`` and ``sqlite_scanner`` (each LOAD costs 0.1-0.5 s of a fresh process, an upload's start-up)."""
    if lake is None or not lake.is_local or "://" in (lake.data_path or ""):
        return tuple(EXTENSIONS)
    return ("ducklake", "sqlite_scanner")


def _new_instance(config: dict[str, Any] | None = None, lake: Lake | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB instance with the lake's extensions loaded.

    Without ``config``: the process's shared instance, which runs only Runlens' own statements. Its extensions are
    loaded by the absolute path of the binaries inside their installed packages, without DuckDB's signature check,
    which hashes the whole binary at every load: 0.21 CPU s for ducklake and sqlite_scanner (70 MB), paid by every
    process that opens a lake (the app's start, each upload) for binaries as trusted as the ``duckdb`` module the
    interpreter loaded from the same site-packages. So nothing else can be loaded unchecked, it loads nothing by
    name: autoloading is off and no extension folder is searched.

    With ``config`` (the SQL console's instance, which runs a user's statements), and for a team store (PyPI's
    postgres binary is named ``postgres``, and DuckDB takes an extension's name from its file's), DuckDB checks every
    signature and the extensions come through ``extension_dir``'s links, named as DuckDB expects.
    """
    names = _extensions_of(lake)
    trusted = config is None and all(EXTENSIONS[name][1] == name for name in names)
    settings: dict[str, Any] = (
        {"allow_unsigned_extensions": True, "autoinstall_known_extensions": False, "autoload_known_extensions": False}
        if trusted
        else {
            "extension_directory": str(extension_dir()),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": True,
            **(config or {}),
        }
    )
    con = duckdb.connect(":memory:", config=settings)
    try:
        for name in names:
            con.execute(f"LOAD {sql_literal(str(shipped_binary(name)))}" if trusted else f"LOAD {name}")
        if "httpfs" in names:
            s3_secret(con)
    except BaseException:
        con.close()
        raise
    return con


def _engine(lake: Lake) -> duckdb.DuckDBPyConnection:
    """This process's DuckDB instance for sessions of ``lake``, extensions loaded (once per process).

    Each session is a cursor of it with the lake attached under its own name, so sessions pinned to different
    snapshots (pages of different visitors) live side by side. One instance per lake: a lookup that fails in one
    (DuckDB then searches every attached catalog) never touches another lake's attachments, whose server may be
    gone. A forked child makes its own.
    """
    with _ENGINE_GUARD:
        engine = _ENGINES.get(lake.conninfo)
        if engine is None or os.getpid() != engine.pid:
            engine = _ENGINES[lake.conninfo] = _Engine(_new_instance(lake=lake), os.getpid(), _s3_env())
        elif _s3_env() != engine.s3 and "httpfs" in _extensions_of(lake):  # the AWS variables changed since
            s3_secret(engine.con)
            engine.s3 = _s3_env()
        return engine.con


def connect(
    lake: Lake, *, read_only: bool, as_of: int | dt.datetime | None = None, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose default catalog is the lake (attached for this session only: ``close`` it).

    Args:
        read_only: attach read-only (readers).
        as_of: pin the attachment to a snapshot id or to the snapshot current at a time (time travel).
        config: DuckDB settings of an instance of its own (the SQL console's limits); without it the session is
            a cursor of this process's shared instance.

    Raises:
        LakeError: the catalog or the data cannot be reached (the message names the location, without password).
    """
    con = _new_instance(config, lake) if config is not None else _engine(lake).cursor()
    alias = ALIAS if config is not None else f"{ALIAS}_{next(_ATTACHED)}"
    try:
        options = []
        if lake.data_path:
            options.append(f"DATA_PATH {sql_literal(_folder(lake.data_path))}")
        if read_only:
            options.append("READ_ONLY")
        if isinstance(as_of, dt.datetime):
            options.append(f"SNAPSHOT_TIME {sql_literal(as_of.isoformat())}")
        elif as_of is not None:
            options.append(f"SNAPSHOT_VERSION {int(as_of)}")
        suffix = f" ({', '.join(options)})" if options else ""
        if lake.is_local and not read_only:
            _prepare_sqlite_catalog(lake.catalog_file)
        con.execute(f"ATTACH {sql_literal(str(lake))} AS {alias}{suffix}")
        con.execute(f"USE {alias}")
    except duckdb.Error as exc:
        con.close()
        if "data_path is not set" in str(exc):
            raise LakeError(
                f"{lake.label}: this catalog holds no lake yet; set RUNLENS_LAKE_DATA_PATH (a folder, or "
                "s3://bucket/prefix) for its data, and the first ingest creates it"
            ) from exc
        raise LakeError(f"{lake.label}: {_first_line(exc)}") from exc
    except BaseException:
        con.close()
        raise
    return con


@dataclass
class _Pinned:
    """A read-only attachment of one snapshot of a lake in the shared instance, reused by every reader of it."""

    alias: str
    users: int = 0
    last_used: float = 0.0


POOL_SIZE = 4  # snapshots of a lake kept attached per process (the pages of a few visitors; older ones go)
POOL_IDLE_S = 120.0  # and none is kept unused for longer
_POOL: dict[tuple[str, str | None, int], _Pinned] = {}
_POOL_ALIASES: dict[str, _Pinned] = {}
_POOL_PID = 0
_POOL_GUARD = threading.Lock()


def pinned_reader(lake: Lake, snapshot: int) -> tuple[duckdb.DuckDBPyConnection, bool]:
    """A read-only session on ``snapshot`` of the lake, and whether its attachment is new (``close`` it).

    Attaching costs tens of milliseconds of catalog reads; a snapshot never changes, so its attachment is kept
    and shared: the many reads of one page run (all pinned to one snapshot) attach once.

    Raises:
        LakeError: the catalog or the data cannot be reached.
    """
    global _POOL_PID
    engine = _engine(lake)
    key = (lake.conninfo, lake.data_path, int(snapshot))
    with _POOL_GUARD:
        if os.getpid() != _POOL_PID:  # a forked child has its own instance, without the parent's attachments
            _POOL.clear()
            _POOL_ALIASES.clear()
            _POOL_PID = os.getpid()
        entry = _POOL.get(key)
        is_new = entry is None
        if entry is None:
            attach = connect(lake, read_only=True, as_of=int(snapshot))
            try:
                entry = _Pinned(alias(attach))
            finally:
                attach.execute("USE memory")
                attach.close()  # the cursor goes; the attachment stays in the instance
            _POOL[key] = _POOL_ALIASES[entry.alias] = entry
        entry.users += 1
        entry.last_used = time.monotonic()
        if is_new:
            _evict(engine, lake.conninfo)
    con = engine.cursor()
    try:
        con.execute(f"USE {entry.alias}")
    except BaseException:
        con.close()
        _release(entry)
        raise
    return con, is_new


def _evict(engine: duckdb.DuckDBPyConnection, conninfo: str, *, older_than: int | None = None) -> None:
    """Detach idle attachments of one lake from its instance: the least recently used beyond POOL_SIZE, those idle
    for POOL_IDLE_S, and those of snapshots older than ``older_than`` (the caller holds _POOL_GUARD).

    An attachment must not outlive its snapshot: once ``maintain`` expires it, any failed name lookup in the
    instance (DuckDB searches every attached catalog for suggestions) would fail on it.
    """
    now = time.monotonic()
    idle = sorted((e.last_used, k) for k, e in _POOL.items() if k[0] == conninfo and e.users == 0)
    n_held = sum(1 for k in _POOL if k[0] == conninfo)
    surplus = {k for _, k in idle[: max(0, n_held - POOL_SIZE)]}
    for last_used, key in idle:
        expired = older_than is not None and key[2] < older_than
        if expired or key in surplus or now - last_used > POOL_IDLE_S:
            entry = _POOL.pop(key)
            del _POOL_ALIASES[entry.alias]
            with contextlib.suppress(duckdb.Error):
                engine.execute(f"DETACH {entry.alias}")


def detach_idle(lake: Lake) -> None:
    """Detach every idle snapshot attachment of ``lake`` in this process (``maintain`` does it before expiring
    snapshots: an attachment is detached while its snapshot and files still exist, never left to go stale in the
    instance that runs the expiry and the clean-up). Sessions in use keep theirs."""
    with _POOL_GUARD:
        if os.getpid() == _POOL_PID:
            _evict(_engine(lake), lake.conninfo, older_than=sys.maxsize)


def _release(entry: _Pinned) -> None:
    with _POOL_GUARD:
        entry.users -= 1


def close(con: duckdb.DuckDBPyConnection) -> None:
    """End a session made by ``connect``: detach its lake (from the shared instance) and close the connection."""
    try:
        name = alias(con)
        pinned = _POOL_ALIASES.get(name)
        if pinned is not None:  # a shared snapshot attachment: it stays for the next reader
            _release(pinned)
        elif name != ALIAS:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")  # a session that raised mid-transaction
            con.execute("USE memory")
            con.execute(f"DETACH {name}")
    except duckdb.Error:
        pass  # the connection is unusable: closing it is all that is left
    finally:
        con.close()


# Every commit writes a Parquet file per table it adds rows to, and every statement on a table lists that table's
# files from the catalog (with their column statistics, which grow with the count of files in the whole lake): a
# lake fed by small uploads would make every page slower with every upload until someone ran ``maintain``. A writer
# session therefore ends by merging the small files of one table once that table has SMALL_FILES of them: about
# SMALL_FILES + (tables written) files below SMALL_FILE_BYTES a session (more once, for the backlog of a store
# written before this), nothing at all for most sessions, time travel unchanged (DuckLake's merge keeps each
# snapshot's rows and their row ids). Files of a large ingest (megabytes each) are left to ``maintain``, which merges
# every file below DuckLake's target size.
SMALL_FILE_BYTES = 1024 * 1024
SMALL_FILES = 16


def merge_small_files(con: duckdb.DuckDBPyConnection) -> str | None:
    """Merge the small files of the table with the most of them, when it has at least SMALL_FILES (a writer session
    with no transaction open); the table merged, or None."""
    name = alias(con)
    rows = con.execute(
        f"SELECT t.table_name FROM __ducklake_metadata_{name}.ducklake_data_file f "
        f"JOIN __ducklake_metadata_{name}.ducklake_table t USING (table_id) "
        "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND f.file_size_bytes < ? "
        "GROUP BY t.table_name HAVING count(*) >= ? ORDER BY count(*) DESC, t.table_name LIMIT 1",
        [SMALL_FILE_BYTES, SMALL_FILES],
    ).fetchall()
    if not rows:
        return None
    table = str(rows[0][0])
    con.execute(
        "CALL ducklake_merge_adjacent_files(?, ?, schema => 'main', max_file_size => ?)",
        [name, table, SMALL_FILE_BYTES],
    ).fetchall()
    return table


# Long texts are looked up by their hash (a step's result_hash), and hashes are random: in the Parquet files of one
# ingest every row group spans every hash, so a lookup read the hash column of the whole table (0.3-0.55 CPU s at
# 10M attempts). The ingest writes each file's texts sorted by hash, and a lake keeps the texts table in row
# groups of this many rows, so a lookup reads only the row group of each file whose hash range holds it.
TEXTS_ROW_GROUP_ROWS = 2048
# Steps are read by attempt (a drilldown's page, search's check of a few hundred candidate attempts in page order):
# in DuckDB's default row groups (122,880 rows, about 24,500 attempts) a read of a few attempts decoded the text
# columns of every row group that holds one; row groups of this many rows (about 3,300 attempts) are an eighth of
# that (a search chunk's read of steps at 10M: 0.11-0.15 -> 0.05 s), and the writer buffers an eighth as much.
# BENCHMARKS.md "Steps in smaller row groups".
STEPS_ROW_GROUP_ROWS = 16_384
# each table's ``parquet_row_group_size`` (a DuckLake option of the table, kept in its catalog)
ROW_GROUP_ROWS = {"texts": TEXTS_ROW_GROUP_ROWS, "steps": STEPS_ROW_GROUP_ROWS}
_ROW_GROUPS_SET: set[str] = set()  # the lakes (by label) this process has seen keep the options


def keep_row_groups(con: duckdb.DuckDBPyConnection, label: str) -> None:
    """Set the lake's ``parquet_row_group_size`` of each table of ``ROW_GROUP_ROWS`` that has none (a lake written
    before keeps its files as they are; what it writes from now on takes the option); once per process and lake.
    ``con``: a writer session."""
    if label in _ROW_GROUPS_SET:
        return
    name = alias(con)
    have = {
        str(entry)
        for (entry,) in con.execute(
            "SELECT scope_entry FROM ducklake_options(?) WHERE option_name = 'parquet_row_group_size' "
            "AND scope = 'TABLE'",
            [name],
        ).fetchall()
    }
    for table, rows in ROW_GROUP_ROWS.items():
        if f"main.{table}" not in have:
            con.execute(
                "CALL ducklake_set_option(?, 'parquet_row_group_size', ?, table_name => ?)", [name, rows, table]
            )
    _ROW_GROUPS_SET.add(label)


def rewrite_texts_ordered(con: duckdb.DuckDBPyConnection) -> int:
    """Rewrite a lake's texts file by file, each file's rows sorted by hash in the row groups of
    ``keep_row_groups``: the layout the ingest now writes, for a store whose texts were written before it (its
    lookups then read one row group per file). Memory is bounded by one data file (a sort of the whole table
    spilled gigabytes at 10M attempts); returns the rows rewritten. Runs in the caller's writer transaction: the
    rows are deleted and each former file read again (its Parquet stays until the lake's old files are cleaned)."""
    files = [
        str(r[0])
        for r in con.execute("SELECT data_file FROM ducklake_list_files(current_database(), 'texts')").fetchall()
    ]
    deleted = con.execute(
        "SELECT count(*) FROM ducklake_list_files(current_database(), 'texts') WHERE delete_file IS NOT NULL"
    ).fetchall()[0][0]
    if deleted:
        raise LakeError("texts has deleted rows in its files: rewrite it with the lake's own compaction first")
    con.execute("DELETE FROM texts")
    n = 0
    for path in files:
        con.execute("INSERT INTO texts SELECT text_hash, text FROM read_parquet(?) ORDER BY text_hash", [path])
        n += int(con.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchall()[0][0])
    return n


def alias(con: duckdb.DuckDBPyConnection) -> str:
    """The name the session's lake is attached under (its default catalog)."""
    return str(con.execute("SELECT current_database()").fetchall()[0][0])


def _folder(path: str) -> str:
    if "://" in path:
        return path.rstrip("/") + "/"
    folder = Path(path).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder) + "/"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def is_lake_connection(con: duckdb.DuckDBPyConnection) -> bool:
    """True when ``con``'s default catalog is a DuckLake (a connection made by ``connect``)."""
    rows = con.execute("SELECT type FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    return bool(rows) and rows[0][0] == "ducklake"


def insert_snapshot_column(con: duckdb.DuckDBPyConnection) -> str | None:
    """The column that gives, on a row of any table ``con`` reads, the snapshot whose commit inserted it (DuckLake's
    virtual ``snapshot_id``: a filter on it reads only the files that commit wrote), or None when ``con`` is not a
    lake's (a DuckDB file keeps no such thing)."""
    return "snapshot_id" if is_lake_connection(con) else None


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    """The snapshot id ``con`` reads (its pinned one, or the newest at attach time for a reader)."""
    return int(con.execute(f"SELECT id FROM {alias(con)}.current_snapshot()").fetchall()[0][0])


SQLITE_BUSY_MS = 30_000  # how long a SQLite catalog connection of ours waits for another's write


def _prepare_sqlite_catalog(path: Path) -> None:
    """Create a new SQLite catalog file in WAL mode before DuckLake first attaches it: with WAL, readers in other
    processes go on reading while a writer commits (the rollback journal would make them wait or fail). An
    existing catalog is left as it is, but for what a process killed while it made the file left: an empty file, or
    a hot rollback journal beside it (killed while SQLite switched the file to WAL), which only a read-write open
    rolls back (every read-only open failed with "attempt to write a readonly database")."""
    try:
        if path.stat().st_size > 0 and not _journal(path).exists():
            return
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=SQLITE_BUSY_MS / 1000)  # read-write: SQLite rolls back a hot journal here
    try:
        is_empty = not db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if is_empty and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode = WAL")
    finally:
        db.close()


def _journal(path: Path) -> Path:
    """SQLite's rollback journal of the database file ``path``."""
    return path.with_name(path.name + "-journal")


@contextlib.contextmanager
def _sqlite_catalog(lake: Lake) -> Iterator[sqlite3.Connection | None]:
    """A read-only SQLite connection to a local lake's catalog; None when the file does not exist yet."""
    if not lake.catalog_file.exists():
        yield None
        return
    if _journal(lake.catalog_file).exists():  # perhaps left hot by a killed writer: a read-only open cannot roll back
        with contextlib.suppress(sqlite3.Error, OSError):  # (no write permission: the read-only open says why)
            _prepare_sqlite_catalog(lake.catalog_file)
    try:
        db = sqlite3.connect(f"{lake.catalog_file.as_uri()}?mode=ro", uri=True, timeout=SQLITE_BUSY_MS / 1000)
    except sqlite3.Error as exc:
        raise LakeError(f"{lake.label}: {_first_line(exc)}") from exc
    try:
        yield db
    except sqlite3.Error as exc:
        raise LakeError(f"{lake.label}: {_first_line(exc)}") from exc
    finally:
        db.close()


@contextlib.contextmanager
def _catalog(lake: Lake) -> Iterator[Any]:
    """A psycopg connection to the lake's PostgreSQL catalog (autocommit); its errors name the lake."""
    psycopg = _psycopg()
    try:
        with psycopg.connect(lake.conninfo, autocommit=True, connect_timeout=10) as pg:
            yield pg
    except psycopg.Error as exc:
        raise LakeError(f"{lake.label}: {_first_line(exc)}") from exc


def _sqlite_time(text: str) -> dt.datetime:
    """A snapshot time as DuckLake writes it into SQLite (``2026-11-26 00:53:12.83118+00``)."""
    stamp = dt.datetime.fromisoformat(text.strip())
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


def snapshot_range(lake: Lake) -> tuple[int, int] | None:
    """The lake's oldest and newest snapshot ids, straight from the catalog (cheap: no DuckDB attach); None before
    the lake exists."""
    if lake.is_local:
        with _sqlite_catalog(lake) as db:
            if db is None:
                return None
            if not db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ducklake_snapshot'"
            ).fetchone():
                return None
            found = db.execute("SELECT min(snapshot_id), max(snapshot_id) FROM ducklake_snapshot").fetchone()
            return (int(found[0]), int(found[1])) if found and found[1] is not None else None
    with _catalog(lake) as pg:
        row = pg.execute("SELECT to_regclass('ducklake_snapshot') IS NOT NULL").fetchone()
        if not row or not row[0]:
            return None
        found = pg.execute("SELECT min(snapshot_id), max(snapshot_id) FROM ducklake_snapshot").fetchone()
        return (int(found[0]), int(found[1])) if found and found[1] is not None else None


def refresh(lake: Lake) -> tuple[int, int] | None:
    """``snapshot_range``, after detaching this process's idle attachments of snapshots older than the oldest
    (expired by ``maintain``, perhaps in another process): a stale one would break name lookups in the instance.
    Every session starts with it."""
    found = snapshot_range(lake)
    if found is not None:
        with _POOL_GUARD:
            if os.getpid() == _POOL_PID:
                _evict(_engine(lake), lake.conninfo, older_than=found[0])
    return found


def snapshot_id(lake: Lake) -> int | None:
    """The lake's newest snapshot id; None before the lake exists."""
    found = snapshot_range(lake)
    return None if found is None else found[1]


def resolve_as_of(lake: Lake, as_of: int | dt.datetime) -> tuple[int, dt.datetime]:
    """The snapshot ``as_of`` names (an id, or the last one committed at or before a time) and its commit time.

    Raises:
        LakeError: no such snapshot (an id past the newest, or a time before the lake existed).
    """
    row = _sqlite_as_of(lake, as_of) if lake.is_local else _postgres_as_of(lake, as_of)
    if row is None:
        raise LakeError(f"{lake.label}: no snapshot {'at or before ' if isinstance(as_of, dt.datetime) else ''}{as_of}")
    return int(row[0]), row[1]


def _sqlite_as_of(lake: Lake, as_of: int | dt.datetime) -> tuple[int, dt.datetime] | None:
    with _sqlite_catalog(lake) as db:
        if db is None:
            return None
        if not isinstance(as_of, dt.datetime):
            found = db.execute(
                "SELECT snapshot_id, snapshot_time FROM ducklake_snapshot WHERE snapshot_id = ?", [int(as_of)]
            ).fetchone()
            return None if found is None else (int(found[0]), _sqlite_time(found[1]))
        # times are text in SQLite, with trailing zeros of the fraction dropped: compared as times here
        best: tuple[int, dt.datetime] | None = None
        for snapshot, text in db.execute("SELECT snapshot_id, snapshot_time FROM ducklake_snapshot"):
            at = _sqlite_time(text)
            if at <= as_of and (best is None or int(snapshot) > best[0]):
                best = (int(snapshot), at)
        return best


def _postgres_as_of(lake: Lake, as_of: int | dt.datetime) -> tuple[Any, Any] | None:
    with _catalog(lake) as pg:
        if isinstance(as_of, dt.datetime):
            row = pg.execute(
                "SELECT snapshot_id, snapshot_time FROM ducklake_snapshot WHERE snapshot_time <= %s "
                "ORDER BY snapshot_id DESC LIMIT 1",
                [as_of],
            ).fetchone()
        else:
            row = pg.execute(
                "SELECT snapshot_id, snapshot_time FROM ducklake_snapshot WHERE snapshot_id = %s", [as_of]
            ).fetchone()
    return None if row is None else (row[0], row[1])


def parse_as_of(text: str | int | dt.datetime | None) -> int | dt.datetime | None:
    """``--as-of`` / ``?as_of=``: a snapshot id (digits) or an ISO timestamp (UTC when it gives no zone).

    Raises:
        LakeError: neither.
    """
    if text is None or isinstance(text, (int, dt.datetime)):
        return text
    value = text.strip()
    if not value:
        return None
    if value.isdigit():
        return int(value)
    try:
        stamp = dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise LakeError(f"--as-of {value!r}: give a snapshot id (e.g. 42) or a time (e.g. 2026-11-24T09:00)") from exc
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


def _psycopg() -> Any:
    import psycopg  # lazily: only a team store needs it

    return psycopg

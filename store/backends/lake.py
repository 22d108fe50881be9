"""DuckLake stores: the local lake (``ducklake:sqlite:<catalog file>``, the default) and the team store
(``ducklake:postgres:<libpq string>``); store/lake.py holds the DuckLake plumbing (catalog, extensions, the writer
session's lock, pinned snapshots). Every commit is a snapshot readers see at once: there is nothing to publish."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from store import lake, lake_session, paths
from store.backends.base import LOCK_WAIT_S, RawLocation, Store, register
from store.lake import LakeError
from store.migrate import latest_version, migrate, schema_version

# A lake's (catalog, data path) -> the first snapshot ``LakeStore.ensure_snapshot`` found at this code's schema (a
# later one is too: migrations only move forward)
_CURRENT: dict[tuple[str, str | None], int] = {}


@register
class LakeStore(Store):
    """A DuckLake: catalog in SQLite (one machine) or PostgreSQL (a team), data as Parquet in a folder or on S3."""

    supports_as_of = True

    def __init__(self, location: RawLocation) -> None:
        self._lake = lake.parse(location if isinstance(location, lake.Lake) else str(location))

    @classmethod
    def claims(cls, location: RawLocation) -> bool:
        return lake.is_lake(location if isinstance(location, lake.Lake) else str(location))

    @property
    def location(self) -> lake.Lake:
        return self._lake

    @property
    def label(self) -> str:
        return self._lake.label

    @contextlib.contextmanager
    def writer(
        self, *, wait_s: float = LOCK_WAIT_S, publish_snapshot: bool = True, short_session: bool = False
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """The session holds the lake's writer lock (PostgreSQL's advisory lock, or a local lake's flock)."""
        with lake_session.session_lock(self._lake, wait_s=wait_s):
            lake.refresh(self._lake)
            con = lake.connect(self._lake, read_only=False)
            try:
                migrate(con)
                lake.keep_row_groups(con, self._lake.label)
                yield con
                try:
                    lake.merge_small_files(con)
                except duckdb.Error as exc:
                    raise LakeError(
                        f"{self._lake.label}: the session's work is committed, but merging small data files failed "
                        f"(they stay as they are; `python -m analytics maintain` merges them): {exc}"
                    ) from exc
            finally:
                lake.close(con)

    @contextlib.contextmanager
    def reader(
        self, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """Attached read-only at its newest snapshot, or at ``as_of`` (a snapshot id or a time)."""
        when = lake.parse_as_of(as_of)
        found = lake.refresh(self._lake)
        if found is None:  # a new catalog: the first reader creates the lake
            self.ensure_snapshot()
            found = lake.refresh(self._lake) or (0, 0)
        snapshot = found[1] if when is None else lake.resolve_as_of(self._lake, when)[0]
        con, _ = lake.pinned_reader(self._lake, snapshot)
        try:
            if when is not None:
                self._refuse_older(snapshot, con)
            elif not self._is_current(snapshot, con):  # an older Runlens made it (asked once per lake in a process)
                lake.close(con)
                with self.writer():  # migrates
                    pass
                con, _ = lake.pinned_reader(self._lake, int(lake.snapshot_id(self._lake) or 0))
            yield con
        finally:
            lake.close(con)

    def sandbox(self, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        """With external access off, only the lake's own data folder stays readable (DuckLake reads its Parquet
        files lazily), and the catalog connection stays open."""
        self.ensure_snapshot()
        con = lake.connect(self._lake, read_only=True, config={**config, "autoload_known_extensions": False})
        try:
            con.execute("SET enable_progress_bar = false")
            data_path = con.execute(
                f"SELECT value FROM __ducklake_metadata_{lake.alias(con)}.ducklake_metadata WHERE key = 'data_path'"
            ).fetchall()
            if data_path:  # a folder, or an s3:// prefix (httpfs paths are checked against it the same way)
                con.execute("SET allowed_directories = [?]", [data_path[0][0]])
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
        except BaseException:
            con.close()
            raise
        return con

    def ensure_snapshot(self) -> lake.Lake:
        """A new lake, or one older than this code, is created and migrated by a writer session; a lake is its own
        snapshot."""
        snapshot = lake.snapshot_id(self._lake)
        if snapshot is None or not self._is_current(snapshot):
            with self.writer():  # creates, or migrates
                pass
        return self._lake

    def _is_current(self, snapshot: int, con: duckdb.DuckDBPyConnection | None = None) -> bool:
        """Whether ``snapshot`` is at this code's schema (read on ``con`` when it is given, pinned to it). Pages read
        pinned snapshots (``reader(as_of=...)``), which never migrate: a lake an older Runlens wrote is migrated by
        ``ensure_snapshot``, when the dashboard prepares it, or its pages would read tables without the columns this
        code expects; a time-travel read of a snapshot older than the migration is refused by ``reader``. Asked once
        per lake in a process (a later snapshot is current too: migrations only move forward)."""
        return self._older_version(snapshot, con) is None

    def _older_version(self, snapshot: int, con: duckdb.DuckDBPyConnection | None = None) -> int | None:
        """The schema version of ``snapshot`` when it is older than this code's, else None (``_is_current``; read on
        ``con`` when it is given, pinned to it)."""
        key = (self._lake.conninfo, self._lake.data_path)
        if snapshot >= _CURRENT.get(key, snapshot + 1):
            return None
        if con is not None:
            version = schema_version(con)
        else:
            con, _ = lake.pinned_reader(self._lake, snapshot)
            try:
                version = schema_version(con)
            finally:
                lake.close(con)
        if version < latest_version():
            return version
        _CURRENT[key] = min(snapshot, _CURRENT.get(key, snapshot))
        return None

    def version(self) -> str:
        return f"snapshot:{lake.snapshot_id(self._lake)}"

    def set_commit_message(self, con: duckdb.DuckDBPyConnection, message: str, extra: dict[str, Any]) -> None:
        lake_session.set_commit_message(con, message, extra)

    def resolve_as_of(self, as_of: str | int | dt.datetime) -> tuple[int, dt.datetime]:
        when = lake.parse_as_of(as_of)
        if when is None:
            raise LakeError("--as-of: give a snapshot id (e.g. 42) or a time (e.g. 2026-11-24T09:00)")
        found = lake.resolve_as_of(self._lake, when)
        self._refuse_older(found[0])
        return found

    def _refuse_older(self, snapshot: int, con: duckdb.DuckDBPyConnection | None = None) -> None:
        """A time-travel read of a snapshot an older Runlens wrote (before this code's migrations) is refused with a
        sentence saying so, not left to fail on the first column it lacks (a Binder Error); a pinned read never
        migrates, and a past snapshot cannot be.

        Raises:
            LakeError: ``snapshot`` is at an older schema version than this code's.
        """
        version = self._older_version(snapshot, con)
        if version is None:
            return
        raise LakeError(
            f"{self._lake.label}: snapshot {snapshot} predates this Runlens's schema (schema version {version}; this "
            f"version reads {latest_version()}): time travel reads the snapshots written since this Runlens "
            "migrated the lake (a read of the latest data migrates it)"
        )

    def caption(self) -> str | None:
        if self._lake.is_local:
            return f"Local lake {self._lake.catalog_file}"
        return f"Team store {self._lake.label.removeprefix(f'{lake.PREFIX}postgres:')}"

    def sidecar_path(self, suffix: str) -> Path:
        digest = hashlib.sha256(self._lake.conninfo.encode()).hexdigest()[:12]
        return paths.PROJECT_ROOT / "data" / f"lake-{digest}{suffix}"

    @property
    def takes_demo_data(self) -> bool:
        """Only the default local lake, as only the default file (a team's shared store gets none)."""
        return self._lake.is_local and self._lake.catalog_file == paths.DEFAULT_LAKE.resolve()

    def rewrite_texts_ordered(self) -> int:
        """``store.lake.rewrite_texts_ordered`` in one writer transaction (``doctor --rewrite-texts``)."""
        from store.query import transaction

        with self.writer() as con, transaction(con):
            return lake.rewrite_texts_ordered(con)

    def maintain(self, cutoff: dt.datetime) -> tuple[int, int, int, int]:
        """Write inlined rows to Parquet, merge small files, expire snapshots older than ``cutoff`` and delete the
        files only those used (and orphans older than it): tables flushed, merged; snapshots expired; files
        removed."""
        lake.detach_idle(self._lake)
        with self.writer() as con:
            alias = lake.alias(con)
            flushed = con.execute(f"CALL ducklake_flush_inlined_data('{alias}')").fetchall()
            merged = con.execute(f"CALL ducklake_merge_adjacent_files('{alias}')").fetchall()
            expired = con.execute(f"CALL ducklake_expire_snapshots('{alias}', older_than => ?)", [cutoff]).fetchall()
            removed = con.execute(f"CALL ducklake_cleanup_old_files('{alias}', older_than => ?)", [cutoff]).fetchall()
            orphans = con.execute(
                f"CALL ducklake_delete_orphaned_files('{alias}', older_than => ?)", [cutoff]
            ).fetchall()
        return len(flushed), len(merged), len(expired), len(removed) + len(orphans)

    def search_index_path(self, suffix: str) -> Path | None:
        """A local lake's index sits beside its catalog; a team store has none."""
        catalog = self._lake.catalog_file
        return catalog.with_name(catalog.name + suffix) if self._lake.is_local else None

    def open_search_source(self, index: Path) -> tuple[duckdb.DuckDBPyConnection, str]:
        """Load the lake's extensions into the index's connection; attach the lake as ``src`` (read-only, at its
        newest snapshot)."""
        con = duckdb.connect(
            str(index),
            config={"extension_directory": str(lake.extension_dir()), "autoinstall_known_extensions": False},
        )
        try:
            for name in ("ducklake", "sqlite_scanner"):
                con.execute(f"LOAD {name}")
        except BaseException:
            con.close()
            raise
        data = f", DATA_PATH {_literal(self._lake.data_path)}" if self._lake.data_path else ""
        return con, f"ATTACH {_literal(str(self._lake))} AS src (READ_ONLY{data})"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

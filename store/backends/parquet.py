"""A Parquet folder written by ``python -m analytics export-parquet``: read in place, never written (store/parquet.py
reads its marker and makes the views)."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from store import parquet
from store.backends.base import LOCK_WAIT_S, RawLocation, Store, register
from store.errors import RunlensError
from store.lake import is_lake
from store.paths import PARQUET_MARKER


@register
class ParquetStore(Store):
    """A folder holding a ``runlens-parquet.json`` marker: an in-memory DuckDB with one view per table."""

    view_sql_names_paths = True  # its views are read_parquet('<folder>/...'): their SQL names a server path

    def __init__(self, location: RawLocation) -> None:
        self._path = Path(location)  # type: ignore[arg-type]  # claims() took no Lake

    @classmethod
    def claims(cls, location: RawLocation) -> bool:
        if not isinstance(location, (str, os.PathLike)) or is_lake(str(location)):
            return False
        folder = Path(location)
        return folder.is_dir() and (folder / PARQUET_MARKER).is_file()

    @property
    def location(self) -> Path:
        return self._path

    @contextlib.contextmanager
    def reader(
        self, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        if as_of not in (None, ""):
            raise RunlensError(
                f"{self._path}: --as-of (time travel) needs a team store (DuckLake); a DuckDB file keeps only its "
                "latest state"
            )
        con = parquet.connect(self._path)
        try:
            yield con
        finally:
            con.close()

    def writer(
        self, *, wait_s: float = LOCK_WAIT_S, publish_snapshot: bool = True, short_session: bool = False
    ) -> contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise RunlensError(
            f"{self._path} is a Parquet folder (read-only); write to a DuckDB file and export it again "
            "with `python -m analytics export-parquet`"
        )

    def sandbox(self, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect(":memory:", config=config)
        try:
            con.execute("SET enable_progress_bar = false")  # it prints to stdout (the answer travels apart anyway)
            # Views over its files, which stay readable through allowed_directories once external access is off
            # (every other path is refused); the views read their files lazily, so that is the engine's bound.
            marker = parquet.attach_views(con, self._path)
            location = str(marker.get("location") or self._path.resolve()).rstrip("/") + "/"
            con.execute("SET allowed_directories = [?]", [location])
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
        except BaseException:
            con.close()
            raise
        return con

    def ensure_snapshot(self) -> Path:
        return self._path  # its own (read-only) snapshot

    def version(self) -> str:
        return parquet.folder_version(self._path)

    def exists(self) -> bool:
        return self._path.exists()

    def sidecar_path(self, suffix: str) -> Path:
        return self._path.with_name(self._path.name + suffix)

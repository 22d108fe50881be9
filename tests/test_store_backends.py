"""store.open: the registry picks the backend that claims a location; a new backend registers with one line."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

import store as rdb
from store import backends
from store.backends.file import FileStore
from store.backends.lake import LakeStore
from store.backends.parquet import ParquetStore
from store.lake import Lake


def test_each_location_is_opened_by_the_backend_that_claims_it(tmp_path: Path) -> None:
    assert type(rdb.open(tmp_path / "a.duckdb")) is FileStore
    assert type(rdb.open(str(tmp_path / "a.duckdb"))) is FileStore
    lake = rdb.open(f"ducklake:sqlite:{tmp_path / 'a.lake'}")
    assert type(lake) is LakeStore and str(lake) == f"ducklake:sqlite:{tmp_path / 'a.lake'}"
    assert type(rdb.open(Path("ducklake:postgres:dbname=x host=h"))) is LakeStore  # argparse's type=Path
    assert type(rdb.open(Lake("dbname=x"))) is LakeStore
    folder = tmp_path / "export"
    folder.mkdir()
    assert type(rdb.open(folder)) is FileStore  # a folder without the marker is no Parquet store
    (folder / "runlens-parquet.json").write_text("{}")
    assert type(rdb.open(folder)) is ParquetStore
    assert rdb.open(lake) is lake and rdb.open(str(lake)) == lake


def test_the_module_level_calls_ask_the_store(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    with rdb.writer(db) as con:
        con.execute("INSERT INTO meta VALUES ('probe', 'x')")
    assert rdb.db_version(db) == rdb.open(db).version() != "missing"
    with rdb.reader(rdb.open(db)) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'probe'").fetchall() == [("x",)]
    assert rdb.resolve_db_path(str(db)) == db


class MemoryStore(rdb.Store):
    """A store of its own: ``memory:<name>``, one in-memory DuckDB per name, written and read in this process."""

    databases: dict[str, duckdb.DuckDBPyConnection] = {}

    def __init__(self, location: Any) -> None:
        self.name = str(location).removeprefix("memory:")

    @classmethod
    def claims(cls, location: Any) -> bool:
        return str(location).startswith("memory:")

    @property
    def location(self) -> Path:
        return Path(f"memory:{self.name}")

    def _con(self) -> duckdb.DuckDBPyConnection:
        if self.name not in self.databases:
            con = self.databases[self.name] = duckdb.connect(":memory:")
            rdb.migrate(con)
        return self.databases[self.name]

    @contextlib.contextmanager
    def reader(self, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None) -> Iterator[Any]:
        yield self._con().cursor()

    @contextlib.contextmanager
    def writer(self, *, wait_s: float = 0, publish_snapshot: bool = True, short_session: bool = False) -> Any:
        yield self._con().cursor()

    def sandbox(self, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        return self._con().cursor()

    def ensure_snapshot(self) -> Path:
        self._con()
        return self.location

    def version(self) -> str:
        return str(self._con().execute("SELECT count(*) FROM runs").fetchall()[0][0])


@pytest.fixture
def memory_backend() -> Iterator[None]:
    backends.register(MemoryStore)  # the one registration line a new backend needs
    try:
        yield
    finally:
        backends.unregister(MemoryStore)
        MemoryStore.databases.clear()


def test_a_backend_registered_with_one_line_is_opened_by_store_open(memory_backend: None, tmp_path: Path) -> None:
    found = rdb.open("memory:team")
    assert type(found) is MemoryStore and str(found) == "memory:team"
    assert type(rdb.open(tmp_path / "a.duckdb")) is FileStore  # the others still claim their own
    with rdb.writer("memory:team") as con:  # the module-level calls reach it like any store
        con.execute("INSERT INTO meta VALUES ('probe', 'x')")
    with rdb.reader("memory:team") as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'probe'").fetchall() == [("x",)]
    assert rdb.describe(rdb.open("memory:team").sandbox({}).cursor()).is_current
    with pytest.raises(rdb.RunlensError, match="needs a team store"):  # what it does not override: the defaults
        found.resolve_as_of("1")


def test_without_its_registration_the_location_is_a_file(tmp_path: Path) -> None:
    assert type(rdb.open("memory:team")) is FileStore  # any path no other backend claims

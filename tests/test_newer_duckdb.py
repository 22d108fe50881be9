"""A database file written by a newer DuckDB (2.0.0, before the pin to 1.5.5): named in a clear error, and the
default demo database is moved aside and rebuilt at the app's start (nothing deleted)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from store import paths
from store.backends.file import written_by_newer_duckdb
from tests.conftest import ROOT

# The first 140 bytes of a database DuckDB 2.0.0 created (the rest of its 4 KiB header block is zeros): checksum,
# "DUCK", storage version 999, "v2.0.0" and the source id. DuckDB reads the version before anything else.
DUCKDB_2_HEADER = bytes.fromhex(
    "041fccdb688e8ef64455434be703000000000000000000000000000000000000000000000000000000000000000000000000"
    "000076322e302e30000000000000000000000000000000000000000000000000000064353463626265336466000000000000"
    "000000000000000000000000000000000000000000000000d43b13d7b19df16ffad85c042035c6b4"
)


def newer_file(path: Path) -> Path:
    path.write_bytes(DUCKDB_2_HEADER + bytes(4096 - len(DUCKDB_2_HEADER)) + bytes(8192))
    return path


def test_a_newer_file_is_named_in_the_error_and_recognised(tmp_path: Path, tmp_db: Path) -> None:
    db = newer_file(tmp_path / "old.duckdb")
    assert written_by_newer_duckdb(db) and not written_by_newer_duckdb(tmp_db)
    with pytest.raises(rdb.RunlensError, match="written by a newer DuckDB"), rdb.writer(db):
        pass


def test_the_default_demo_database_is_moved_aside_and_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = newer_file(tmp_path / "runlens.duckdb")
    newer_file(tmp_path / "runlens.duckdb.read")
    monkeypatch.setattr(paths, "DEFAULT_DB", db)
    monkeypatch.setenv("RUNLENS_DB", str(db))
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    aside = tmp_path / "runlens.duckdb.newer-duckdb"
    assert aside.read_bytes()[: len(DUCKDB_2_HEADER)] == DUCKDB_2_HEADER  # kept, not deleted
    assert Path(f"{aside}.read").exists()
    with rdb.reader(db) as con:  # a new database in its place
        assert rdb.describe(con).is_current

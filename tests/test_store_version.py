"""A database file from a newer DuckDB (2.0.0 files, before the 1.5.5 pin) gets a message saying what to do."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import store
from store.backends import file as connect

# What DuckDB 1.5.5 raises on a file written by DuckDB 2.0.0 (recorded from the real pair of versions: a 2.0.0 file's
# storage version is 999, and DuckDB checksums the header, so no test can forge one with 1.5.5 alone).
REAL_MESSAGE = (
    "IO Error: Trying to read a database file with version number 999, but we can only read versions between 64 "
    "and 68.\nThe database file was created with an newer version of DuckDB.\n\nNewer DuckDB version might introduce "
    "backward incompatible changes (possibly guarded by compatibility settings).\nSee the storage page for migration "
    "strategy and more information: https://duckdb.org/internals/storage"
)


def test_newer_storage_gets_a_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> duckdb.DuckDBPyConnection:
        raise duckdb.IOException(REAL_MESSAGE)

    (tmp_path / "old.duckdb").write_bytes(bytes(12288))  # the file exists: only opening it is refused
    monkeypatch.setattr(connect.duckdb, "connect", refuse)
    with pytest.raises(store.StoreVersionError) as info, store.writer(tmp_path / "old.duckdb"):
        pass
    text = str(info.value)
    assert str(tmp_path / "old.duckdb") in text and duckdb.__version__ in text
    assert "EXPORT DATABASE" in text and "delete the file" in text
    assert isinstance(info.value, store.RunlensError)  # pages and CLIs show it as a message, not a traceback


def test_other_io_errors_pass_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> duckdb.DuckDBPyConnection:
        raise duckdb.IOException("IO Error: Cannot open file: Permission denied")

    monkeypatch.setattr(connect.duckdb, "connect", refuse)
    with pytest.raises(duckdb.IOException, match="Permission denied"), store.writer(tmp_path / "x.duckdb"):
        pass

"""A local lake's SQLite catalog that a killed process left half-written (an empty file, or a hot rollback journal:
killed while SQLite switched the new file to WAL) is rolled back and made a WAL catalog by the next writer, and a
reader is not refused ("attempt to write a readonly database": a read-only open cannot roll a journal back)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import store as rdb

# A process that writes a transaction big enough to spill pages into the file, then is killed before its commit:
# the file holds half-written pages and its rollback journal is hot.
KILLED_WRITE = textwrap.dedent(
    """
    import os, signal, sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA cache_size = 2")
    db.execute("BEGIN")
    db.execute("CREATE TABLE junk (x BLOB)")
    db.executemany("INSERT INTO junk VALUES (?)", [(bytes(1024),)] * 2000)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _mode(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        db.close()


def test_a_catalog_with_a_hot_journal_is_rolled_back_and_made_a_lake(tmp_path: Path) -> None:
    catalog = tmp_path / "store.lake"
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(catalog)], check=False, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert catalog.stat().st_size > 0 and (tmp_path / "store.lake-journal").stat().st_size > 0
    lake = f"ducklake:sqlite:{catalog}"
    with rdb.reader(lake) as con:  # nothing there yet, and no "readonly database"
        assert con is not None
    with rdb.writer(lake):
        pass
    assert _mode(catalog) == "wal"
    with rdb.reader(lake) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall() == [(0,)]


def test_an_empty_catalog_file_is_made_a_wal_lake(tmp_path: Path) -> None:
    catalog = tmp_path / "store.lake"
    catalog.touch()  # killed right after the file was made
    with rdb.writer(f"ducklake:sqlite:{catalog}"):
        pass
    assert _mode(catalog) == "wal" and not os.path.exists(f"{catalog}-journal")

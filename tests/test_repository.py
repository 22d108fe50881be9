"""The repository holds source, not data a run produced: no DuckDB database, lake catalog or store sidecar file is
tracked (a database committed by mistake once sat among the test fixtures, untouched by any test)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT

DUCKDB_MAGIC = b"DUCK"  # a DuckDB database file has it at byte 8
SQLITE_MAGIC = b"SQLite format 3\x00"  # a local lake's catalog
SIDECARS = (".lock", ".queue", ".read", ".wal", ".search", ".pending")


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def test_no_database_or_store_file_is_tracked() -> None:
    tracked = _tracked()
    assert len(tracked) > 100  # the listing worked
    found = []
    for name in tracked:
        path = ROOT / name
        if not path.is_file():
            continue
        with path.open("rb") as f:
            head = f.read(16)
        if head[8:12] == DUCKDB_MAGIC or head == SQLITE_MAGIC or name.endswith(SIDECARS):
            found.append(name)
    assert found == []

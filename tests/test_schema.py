"""The migration path and data/schema.sql describe the same catalog."""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb
import pytest

import store as rdb

migrate_module = importlib.import_module("store.migrate")  # the module (``store.migrate`` is also its function)


def catalog(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    cols = con.execute(
        "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, column_name"
    ).fetchall()
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
    constraints = con.execute(
        "SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() ORDER BY ALL"
    ).fetchall()
    return cols + views + constraints


def test_migrating_an_empty_database_equals_the_schema(tmp_path: Path) -> None:
    migrated = duckdb.connect(str(tmp_path / "migrated.duckdb"))
    version = rdb.migrate(migrated)
    assert version == rdb.latest_version() == rdb.schema_version(migrated)
    fresh = duckdb.connect(str(tmp_path / "fresh.duckdb"))
    fresh.execute(rdb.SCHEMA_FILE.read_text())
    assert catalog(migrated) == catalog(fresh)


def test_migrate_is_idempotent(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "x.duckdb"))
    first = rdb.migrate(con)
    assert rdb.migrate(con) == first
    rows = con.execute("SELECT key FROM meta WHERE key LIKE 'migration:%' ORDER BY 1").fetchall()
    assert len(rows) == len(rdb.migrations())


def test_writer_publishes_a_read_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "db.duckdb"
    with rdb.writer(path) as con:
        con.execute("INSERT INTO meta VALUES ('probe', 'yes')")
    assert rdb.snapshot_path(path).exists()
    with rdb.reader(path) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'probe'").fetchall() == [("yes",)]


def test_pending_migrations_go_in_together_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All pending migrations are one transaction: when the last one fails, the store keeps the version it had and
    none of the earlier pending migrations' tables; without it, they all go in."""
    con = duckdb.connect(str(tmp_path / "x.duckdb"))
    real = rdb.migrations()
    early = [m for m in real if m[0] <= 3]
    monkeypatch.setattr(migrate_module, "migrations", lambda: early)
    assert rdb.migrate(con) == 3
    broken = [*real, (real[-1][0] + 1, "999_broken", "CREATE TABLE later_table (x INTEGER); SELECT * FROM no_table;")]
    monkeypatch.setattr(migrate_module, "migrations", lambda: broken)
    with pytest.raises(duckdb.CatalogException, match="no_table"):
        rdb.migrate(con)
    assert rdb.schema_version(con) == 3
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "reviews" not in tables and "later_table" not in tables  # 004's table, and the broken one's
    keys = {r[0] for r in con.execute("SELECT key FROM meta WHERE key LIKE 'migration:%'").fetchall()}
    assert keys == {f"migration:{name}" for _, name, _ in early}
    monkeypatch.setattr(migrate_module, "migrations", lambda: real)
    assert rdb.migrate(con) == rdb.latest_version() == rdb.schema_version(con)
    keys = {r[0] for r in con.execute("SELECT key FROM meta WHERE key LIKE 'migration:%'").fetchall()}
    assert keys == {f"migration:{name}" for _, name, _ in real}

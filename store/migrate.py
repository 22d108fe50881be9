"""The schema's versions: migrations in data/migrations applied in order, each in its own transaction."""

from __future__ import annotations

import time
from dataclasses import dataclass

import duckdb

from store.paths import MIGRATIONS_DIR
from store.query import transaction


def migrations() -> list[tuple[int, str, str]]:
    """All migrations as ``(version, name, sql)`` sorted by version."""
    out = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        version = int(path.name.split("_", 1)[0])
        out.append((version, path.stem, path.read_text(encoding="utf-8")))
    return out


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in ``meta`` (0 for an empty database)."""
    has_meta = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchall()[0][0]
    if not has_meta:
        return 0
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    return int(rows[0][0]) if rows else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations, each in its own transaction; return the resulting version."""
    current = schema_version(con)
    for version, name, sql in migrations():
        if version <= current:
            continue
        with transaction(con):
            con.execute(sql)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?), (?, ?)",
                [str(version), f"migration:{name}", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())],
            )
        current = version
    return current


def latest_version() -> int:
    """The newest migration's version number."""
    return max(v for v, _, _ in migrations())


@dataclass(frozen=True)
class StoreInfo:
    """What the app needs to know about a store before showing it."""

    schema_version: int
    is_current: bool  # at the newest schema version (else a writer must migrate it)
    n_runs: int  # 0 when not current: the tables may not exist yet
    n_demo_runs: int

    @property
    def is_empty(self) -> bool:
        """No run at all (a new store: the app seeds the demo dataset)."""
        return self.n_runs == 0


def describe(con: duckdb.DuckDBPyConnection) -> StoreInfo:
    """Schema version and run counts of an open store (reader or writer connection)."""
    version = schema_version(con)
    if version < latest_version():
        return StoreInfo(version, False, 0, 0)
    n_runs, n_demo = con.execute("SELECT count(*), count(*) FILTER (WHERE is_demo) FROM runs").fetchall()[0]
    return StoreInfo(version, True, int(n_runs), int(n_demo))

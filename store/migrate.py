"""The schema's versions: migrations in data/migrations applied in order, the pending ones in one transaction."""

from __future__ import annotations

import re
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
    try:  # not information_schema: on a team store it lists every attached catalog (0.1 s a call)
        rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    except duckdb.CatalogException:
        return 0  # no meta table: a new database
    return int(rows[0][0]) if rows else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations in order, all of them in one transaction; return the resulting version.

    One transaction, not one per migration: a new store (ten migrations) pays for one commit instead of ten (on a
    lake each commit writes catalog rows and snapshots: 2.5 CPU s for a fresh local lake in ten, once per ingest
    into a new store), and a store is never left between two versions; a failing migration leaves the store at
    the version it had. ``meta`` records each migration's name and the version reached.

    On a DuckLake (store/lake.py) the constraints it cannot hold are left out of the DDL (``lake_ddl``); the
    writer keeps them and ``python -m analytics doctor`` checks them on both stores.
    """
    from store.lake import is_lake_connection

    current = schema_version(con)
    pending = [(version, name, sql) for version, name, sql in migrations() if version > current]
    if not pending:
        return current
    on_lake = is_lake_connection(con)
    applied = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with transaction(con):
        for _, _, sql in pending:
            con.execute(lake_ddl(sql) if on_lake else sql)
        set_meta(
            con,
            {"schema_version": str(pending[-1][0]), **{f"migration:{name}": applied for _, name, _ in pending}},
        )
    return pending[-1][0]


def set_meta(con: duckdb.DuckDBPyConnection, values: dict[str, str]) -> None:
    """Set ``meta`` keys inside the caller's transaction (delete and insert: DuckLake has no INSERT OR REPLACE)."""
    keys = list(values)
    con.execute("DELETE FROM meta WHERE list_contains(?, key)", [keys])
    con.executemany("INSERT INTO meta VALUES (?, ?)", [[k, v] for k, v in values.items()])


_PRIMARY_KEY_LINE = re.compile(r",\s*PRIMARY\s+KEY\s*\([^)]*\)", re.IGNORECASE)
_PRIMARY_KEY = re.compile(r"\s+PRIMARY\s+KEY\b", re.IGNORECASE)
_CHECK = re.compile(r"\s+CHECK\s*\(", re.IGNORECASE)


def lake_ddl(sql: str) -> str:
    """A migration's SQL without what DuckLake rejects: PRIMARY KEY and CHECK constraints (NOT NULL and DEFAULT
    stay). The writer validates every value first, and ``doctor`` checks keys and domains on both stores."""
    sql = _PRIMARY_KEY_LINE.sub("", sql)
    sql = _PRIMARY_KEY.sub(" NOT NULL", sql)  # a key column is never null
    out, pos = [], 0
    for match in _CHECK.finditer(sql):
        if match.start() < pos:
            continue
        depth, end = 1, match.end()
        while depth:  # skip to the parenthesis that closes CHECK (
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            end += 1
        out.append(sql[pos : match.start()])
        pos = end
    out.append(sql[pos:])
    return "".join(out)


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

"""Moving a store between backends (a DuckDB file and a team store, either way) and a team store's maintenance.

``copy_store`` is ``python -m analytics migrate-store``: every table of the source, streamed in Arrow batches
into an empty target in one transaction, then checked table by table (row count and an order-free digest of
every row) -- nothing is left half-copied, and a mismatch raises. ``maintain`` is ``python -m analytics
maintain`` on a team store (docs/scale.md: what it gives up).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from store.backends import open as open_store
from store.errors import RunlensError
from store.paths import Location
from store.query import transaction

BATCH_ROWS = 100_000
SKIPPED_META = ("store_id", "generation")  # the single-file store's publish bookkeeping, not data


@dataclass(frozen=True)
class TableCheck:
    """One table after the copy: rows and digest on both sides."""

    table: str
    n_source: int
    n_target: int
    digest_source: str
    digest_target: str

    @property
    def ok(self) -> bool:
        return self.n_source == self.n_target and self.digest_source == self.digest_target


def base_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The store's tables (not views), in creation order."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' "
        "AND NOT internal ORDER BY table_oid"
    ).fetchall()
    return [r[0] for r in rows]


def table_digest(con: duckdb.DuckDBPyConnection, table: str) -> tuple[int, str]:
    """Row count and an order-free digest of every row (the sum of the rows' hashes; meta without its publish
    bookkeeping)."""
    n, digest = con.execute(
        f'SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0) FROM "{table}" t{_data_rows(table)}'
    ).fetchall()[0]
    return int(n), str(digest)


def _data_rows(table: str) -> str:
    """The WHERE clause that leaves the single-file store's publish bookkeeping out of ``meta`` (not data)."""
    listed = ", ".join(f"'{key}'" for key in SKIPPED_META)
    return f" WHERE key NOT IN ({listed})" if table == "meta" else ""


def copy_store(
    source: Location, target: Location, *, progress: Callable[[str, int], None] | None = None
) -> list[TableCheck]:
    """Copy every table of ``source`` into ``target`` (created if new; it must hold no runs), in one transaction,
    then compare rows and digests of every table.

    Raises:
        RunlensError: the target already holds data, the schemas differ, or a table does not match after the copy
            (the copy is then rolled back).
    """
    src_loc, dst_loc = open_store(source), open_store(target)
    if str(src_loc) == str(dst_loc):
        raise RunlensError(f"{src_loc}: source and target are the same store")
    with src_loc.reader() as src, dst_loc.writer() as dst:
        tables = base_tables(src)
        missing = sorted(set(tables) - set(base_tables(dst)))
        if missing:
            raise RunlensError(f"{dst_loc}: has no table {', '.join(missing)} (schemas differ: upgrade Runlens)")
        held = [t for t in tables if t != "meta" and dst.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]]
        if held:
            raise RunlensError(f"{dst_loc}: not empty ({', '.join(held)} hold rows); migrate into a new store")
        checks: list[TableCheck] = []
        with transaction(dst):
            for table in tables:
                _copy_table(src, dst, table, progress)
            for table in tables:
                n_src, d_src = table_digest(src, table)
                n_dst, d_dst = table_digest(dst, table)
                checks.append(TableCheck(table, n_src, n_dst, d_src, d_dst))
            bad = [c.table for c in checks if not c.ok]
            if bad:
                raise RunlensError(f"{dst_loc}: {', '.join(bad)} differ after the copy; nothing was kept")
            dst_loc.set_commit_message(dst, f"migrate-store from {src_loc.label}", {"source": src_loc.label})
    return checks


def _copy_table(
    src: duckdb.DuckDBPyConnection,
    dst: duckdb.DuckDBPyConnection,
    table: str,
    progress: Callable[[str, int], None] | None,
) -> None:
    columns = [r[0] for r in src.execute(f'DESCRIBE "{table}"').fetchall()]
    names = ", ".join(f'"{c}"' for c in columns)
    if table == "meta":  # the target's own schema rows are replaced by the source's
        dst.execute("DELETE FROM meta")
    batches = src.execute(f'SELECT {names} FROM "{table}"{_data_rows(table)}').to_arrow_reader(BATCH_ROWS)
    n = 0
    for batch in batches:
        dst.register("_rl_copy", batch)
        try:
            dst.execute(f'INSERT INTO "{table}" ({names}) SELECT {names} FROM _rl_copy')
        finally:
            dst.unregister("_rl_copy")
        n += batch.num_rows
        if progress is not None:
            progress(table, n)


@dataclass(frozen=True)
class Maintenance:
    """What one ``maintain`` did: files merged and removed, snapshots expired."""

    flushed_tables: int
    merged_tables: int
    expired_snapshots: int
    removed_files: int
    seconds: float


def maintain(location: Location, *, keep: dt.timedelta = dt.timedelta(days=7)) -> Maintenance:
    """Compact a team store: write inlined rows to Parquet, merge small files, expire snapshots older than
    ``keep`` (time travel before then is given up) and delete the files only those snapshots used.

    Runs in a writer session (uploads wait for it, seconds at 1M attempts; BENCHMARKS.md).

    Raises:
        RunlensError: the store is a DuckDB file (it has none of this to do; DuckDB checkpoints on its own).
    """
    store = open_store(location)
    started = time.perf_counter()
    flushed, merged, expired, removed = store.maintain(dt.datetime.now(dt.UTC) - keep)
    return Maintenance(flushed, merged, expired, removed, time.perf_counter() - started)

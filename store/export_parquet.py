"""export-parquet: write the database as a folder of Parquet files that Runlens reads in place (store/parquet.py).

``python -m analytics export-parquet --out DIR [--db PATH] [--overwrite] [--json]``; see docs/scale.md.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb

from store.backends import open as open_store
from store.backends.parquet import ParquetStore
from store.migrate import schema_version
from store.parquet import _PARTITIONED, FORMAT_VERSION, MARKER, ParquetFolderError, _ident, _lit
from store.paths import Location
from store.query import query_rows


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    rows = query_rows(
        con,
        "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_catalog, table_schema, table_name) "
        "WHERE t.table_type = 'BASE TABLE' AND t.table_schema = 'main' "
        "ORDER BY c.table_name, c.ordinal_position",
    )
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


def _views(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return [
        (str(n), str(s))
        for n, s in query_rows(
            con,
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY view_name",
        )
    ]


def _prepare_out(out: Path, *, overwrite: bool) -> None:
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise ParquetFolderError(f"{out} is not empty; pass --overwrite to replace a previous export")
        if not ParquetStore.claims(out):
            raise ParquetFolderError(f"{out} is not empty and holds no {MARKER}; refusing to overwrite it")
        old = json.loads((out / MARKER).read_text(encoding="utf-8"))
        (out / MARKER).unlink()  # first: a half-replaced folder must not look like a finished export
        for table in old.get("tables", {}):
            shutil.rmtree(out / table, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


def export_parquet(db: Location, out: str | os.PathLike[str], *, overwrite: bool = False) -> dict[str, Any]:
    """Write every table of the database's snapshot as Parquet under ``out``; return the marker written.

    Raises:
        ParquetFolderError: ``out`` is not empty (and ``overwrite`` is false) or the source is itself a folder.
    """
    src = open_store(db)
    if isinstance(src, ParquetStore):
        raise ParquetFolderError(f"{src} is already a Parquet folder; export from a DuckDB file")
    out_path = Path(out).resolve()
    _prepare_out(out_path, overwrite=overwrite)
    started = time.perf_counter()
    tables: dict[str, Any] = {}
    with src.reader() as con:
        for table, columns in _tables(con).items():
            n_rows = int(query_rows(con, f"SELECT count(*) FROM {_ident(table)}")[0][0])
            target = out_path / table
            target.mkdir()
            if table in _PARTITIONED and n_rows:
                con.execute(
                    f"COPY ({_PARTITIONED[table]}) TO {_lit(str(target))} "
                    "(FORMAT parquet, PARTITION_BY (bench, month), COMPRESSION zstd)"
                )
                partition_by = ["bench", "month"]
            else:
                con.execute(
                    f"COPY (SELECT * FROM {_ident(table)}) TO {_lit(str(target / 'data_0.parquet'))} "
                    "(FORMAT parquet, COMPRESSION zstd)"
                )
                partition_by = []
            tables[table] = {"columns": [list(c) for c in columns], "rows": n_rows, "partition_by": partition_by}
        marker = {
            "format": "runlens-parquet",
            "format_version": FORMAT_VERSION,
            "schema_version": schema_version(con),
            "source": str(src),
            "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": round(time.perf_counter() - started, 3),
            "tables": tables,
            "views": _views(con),
        }
    tmp = out_path / (MARKER + ".tmp")
    tmp.write_text(json.dumps(marker, indent=1), encoding="utf-8")
    os.replace(tmp, out_path / MARKER)
    return marker

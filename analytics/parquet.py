"""export-parquet: write the database as a folder of Parquet files that Runlens (DuckDB) reads in place.

``python -m analytics export-parquet --out DIR [--db PATH] [--overwrite] [--json]`` copies every table of the
published snapshot to ``DIR/<table>/``; ``runs``, ``attempts`` and ``steps`` are hive-partitioned by benchmark
and evaluation year-month (``DIR/attempts/bench=ad-bench/month=2026-01/data_0.parquet``), the other tables are
one file each. A marker ``DIR/runlens-parquet.json`` (written last, so a half-written export is never
mistaken for a finished one) records each table's columns and types and the friendly views.

Point Runlens at the folder (``RUNLENS_DB=DIR``) and :func:`analytics.db.reader` opens an in-memory DuckDB
with one view per table over ``read_parquet(..., hive_partitioning = true)`` plus the friendly views, so
every page and report runs unchanged. The marker may carry a ``location`` (for example
``s3://bucket/runlens``): the views then read the files there through DuckDB's httpfs (see docs/scale.md).
A Parquet folder is read-only: writers refuse it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb

from analytics import db as rdb

MARKER = "runlens-parquet.json"
FORMAT_VERSION = 1
REMOTE_PREFIXES = ("s3://", "s3a://", "gs://", "gcs://", "r2://", "http://", "https://", "az://", "abfss://")

# table -> SQL giving its rows plus the hive partition keys `bench` and `month` (kept apart from the table's own
# columns, so a benchmark named "2024" is never re-typed as a number on the way back)
_PARTITIONED = {
    "runs": "SELECT r.*, r.benchmark AS bench, coalesce(strftime(r.eval_date, '%Y-%m'), 'none') AS month FROM runs r",
    "attempts": "SELECT a.*, r.benchmark AS bench, coalesce(strftime(r.eval_date, '%Y-%m'), 'none') AS month "
    "FROM attempts a JOIN runs r USING (run_id) ORDER BY a.attempt_id",
    "steps": "SELECT s.*, r.benchmark AS bench, coalesce(strftime(r.eval_date, '%Y-%m'), 'none') AS month "
    "FROM steps s JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) "
    "ORDER BY s.attempt_id, s.step",
}


class ParquetFolderError(rdb.RunlensError):
    """A Parquet folder is missing, malformed, or was asked to do what only a DuckDB file can (writes)."""


def is_parquet_folder(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder holding a ``runlens-parquet.json`` marker."""
    p = Path(path)
    return p.is_dir() and (p / MARKER).is_file()


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    rows = rdb.query_rows(
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
        for n, s in rdb.query_rows(
            con,
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY view_name",
        )
    ]


def _prepare_out(out: Path, *, overwrite: bool) -> None:
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise ParquetFolderError(f"{out} is not empty; pass --overwrite to replace a previous export")
        if not is_parquet_folder(out):
            raise ParquetFolderError(f"{out} is not empty and holds no {MARKER}; refusing to overwrite it")
        old = json.loads((out / MARKER).read_text(encoding="utf-8"))
        (out / MARKER).unlink()  # first: a half-replaced folder must not look like a finished export
        for table in old.get("tables", {}):
            shutil.rmtree(out / table, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


def export_parquet(
    db: str | os.PathLike[str] | None, out: str | os.PathLike[str], *, overwrite: bool = False
) -> dict[str, Any]:
    """Write every table of the database's snapshot as Parquet under ``out``; return the marker written.

    Raises:
        ParquetFolderError: ``out`` is not empty (and ``overwrite`` is false) or the source is itself a folder.
    """
    src = rdb.resolve_db_path(db)
    if is_parquet_folder(src):
        raise ParquetFolderError(f"{src} is already a Parquet folder; export from a DuckDB file")
    out_path = Path(out).resolve()
    _prepare_out(out_path, overwrite=overwrite)
    started = time.perf_counter()
    tables: dict[str, Any] = {}
    with rdb.reader(src) as con:
        for table, columns in _tables(con).items():
            n_rows = int(rdb.query_rows(con, f"SELECT count(*) FROM {_ident(table)}")[0][0])
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
            "schema_version": rdb.schema_version(con),
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


def read_marker(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The marker of a Parquet folder.

    Raises:
        ParquetFolderError: missing or not a Runlens marker.
    """
    path = Path(folder) / MARKER
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ParquetFolderError(f"{path}: cannot read the Parquet folder marker: {exc}") from exc
    if not isinstance(marker, dict) or marker.get("format") != "runlens-parquet":
        raise ParquetFolderError(f"{path}: not a runlens-parquet marker")
    return marker


def _enable_remote(con: duckdb.DuckDBPyConnection) -> None:
    """httpfs plus an S3 secret from the usual environment variables (not exercised offline)."""
    con.execute("INSTALL httpfs")
    con.execute("LOAD httpfs")
    env = {
        "KEY_ID": "AWS_ACCESS_KEY_ID",
        "SECRET": "AWS_SECRET_ACCESS_KEY",
        "REGION": "AWS_REGION",
        "ENDPOINT": "AWS_ENDPOINT_URL",
        "SESSION_TOKEN": "AWS_SESSION_TOKEN",
    }
    parts = [
        f"{k} {_lit(os.environ[v].removeprefix('https://').removeprefix('http://'))}"
        for k, v in env.items()
        if os.environ.get(v)
    ]
    if parts:
        if os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://"):
            parts.append("USE_SSL false")
        con.execute(f"CREATE OR REPLACE SECRET runlens_s3 (TYPE s3, {', '.join(parts)}, URL_STYLE 'path')")


def attach_views(con: duckdb.DuckDBPyConnection, folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Create one view per exported table (original column order and types) and the friendly views."""
    marker = read_marker(folder)
    location = str(marker.get("location") or Path(folder).resolve())
    if location.startswith(REMOTE_PREFIXES):
        _enable_remote(con)
    for table, spec in marker["tables"].items():
        cols = ", ".join(f"CAST({_ident(c)} AS {t}) AS {_ident(c)}" for c, t in spec["columns"])
        glob = _lit(location.rstrip("/") + f"/{table}/**/*.parquet")
        con.execute(
            f"CREATE VIEW {_ident(table)} AS SELECT {cols} FROM read_parquet({glob}, "
            "hive_partitioning = true, union_by_name = true)"
        )
    pending = list(marker.get("views", []))
    for _ in range(len(pending) + 1):  # views may depend on each other: retry until all bind
        failed = []
        for name, sql in pending:
            try:
                con.execute(sql)
            except duckdb.CatalogException:
                failed.append((name, sql))
        if not failed:
            break
        pending = failed
    else:
        raise ParquetFolderError(f"{folder}: views {[n for n, _ in pending]} could not be created")
    return marker


def connect(folder: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose tables are views over the Parquet folder."""
    con = duckdb.connect(":memory:")
    try:
        attach_views(con, folder)
    except BaseException:
        con.close()
        raise
    return con


def folder_version(folder: str | os.PathLike[str]) -> str:
    """Cache token of a Parquet folder: the marker is rewritten by every export."""
    try:
        st = (Path(folder) / MARKER).stat()
    except FileNotFoundError:
        return "missing"
    return f"parquet:{st.st_mtime_ns}:{st.st_size}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m analytics export-parquet``."""
    parser.add_argument("--out", required=True, type=Path, help="folder to write (created; must be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace a previous export in --out")
    parser.add_argument("--json", action="store_true", help="print the marker (tables, rows, columns) as JSON")


def cli(args: argparse.Namespace) -> int:
    """Export and print a summary (or the marker with ``--json``)."""
    marker = export_parquet(args.db, args.out, overwrite=args.overwrite)
    if args.json:
        print(json.dumps(marker, indent=1))
    else:
        for table, spec in marker["tables"].items():
            parts = f" partitioned by {', '.join(spec['partition_by'])}" if spec["partition_by"] else ""
            print(f"{table}: {spec['rows']:,} rows{parts}")
        print(f"wrote {args.out} in {marker['seconds']:.1f} s; use it with RUNLENS_DB={args.out}")
    return 0

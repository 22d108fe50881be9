"""export-parquet: write the database as a folder of Parquet files that Runlens (DuckDB) reads in place.

``python -m analytics export-parquet --out DIR [--db PATH] [--overwrite] [--json]`` copies every table of the
published snapshot to ``DIR/<table>/``; ``runs``, ``attempts`` and ``steps`` are hive-partitioned by benchmark
and evaluation year-month (``DIR/attempts/bench=ad-bench/month=2026-01/data_0.parquet``), the other tables are
one file each. A marker ``DIR/runlens-parquet.json`` (written last, so a half-written export is never
mistaken for a finished one) records each table's columns and types and the friendly views.

Point Runlens at the folder (``RUNLENS_DB=DIR``) and :func:`store.reader` opens an in-memory DuckDB
with one view per table over ``read_parquet(..., hive_partitioning = true)`` plus the friendly views, so
every page and report runs unchanged. The marker may carry a ``location`` (for example
``s3://bucket/runlens``): the views then read the files there through DuckDB's httpfs (see docs/scale.md).
A Parquet folder is read-only: writers refuse it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb

from store import lake_extensions
from store.errors import RunlensError
from store.paths import PARQUET_MARKER

MARKER = PARQUET_MARKER
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


class ParquetFolderError(RunlensError):
    """A Parquet folder is missing, malformed, or was asked to do what only a DuckDB file can (writes)."""


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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
    """httpfs (the binary the PyPI package ships: nothing is downloaded) plus an S3 secret from the AWS variables."""
    lake_extensions.enable_s3(con)


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

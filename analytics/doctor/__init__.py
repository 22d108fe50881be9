"""doctor: verify a database -- schema version, orphan rows, counts per table, every file's rows.

``python -m analytics doctor [--db PATH] [--json] [--republish]`` exits 0 when every check passes and 1
otherwise. It reads the primary database (waiting for a running writer to finish), not the snapshot, so
it checks what ingest actually committed.

Modules by role: ``load`` (the checks' SQL and the only database reads), ``compute`` (the verdict: problems and
warnings) and ``report`` (JSON and text). This package re-exports their public names: ``from analytics import
doctor``; :func:`check` reads and judges in one call.
"""

from __future__ import annotations

import duckdb

from analytics.doctor.compute import DoctorReport, diagnose
from analytics.doctor.load import (
    DOMAINS,
    KEYS,
    ORPHANS,
    TABLES,
    FileFacts,
    StoreFacts,
    constraint_checks,
    ingested_files,
    load,
)
from analytics.doctor.report import text_report, to_json


def check(con: duckdb.DuckDBPyConnection, path: str, *, rehash_sources: bool = True) -> DoctorReport:
    """Run every check on an open (read-write or read-only) database."""
    return diagnose(path, load(con, rehash_sources=rehash_sources))


__all__ = [
    "DOMAINS",
    "KEYS",
    "ORPHANS",
    "TABLES",
    "DoctorReport",
    "FileFacts",
    "StoreFacts",
    "check",
    "constraint_checks",
    "diagnose",
    "ingested_files",
    "load",
    "text_report",
    "to_json",
]

"""Shared helpers for the adapter tests: table counts (to prove a rejected file wrote nothing)."""

from __future__ import annotations

from pathlib import Path

import duckdb

TABLES = ("benchmarks", "tasks", "runs", "attempts", "steps", "texts", "attempt_metrics", "ingest_log")


def counts(db: Path) -> dict[str, int]:
    """Row count of every table an ingest touches."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in TABLES}
    finally:
        con.close()


def rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of one query on the primary database."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()

"""Where a store lives: the database path, its read snapshot, its markers, the schema and migration files."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = PROJECT_ROOT / "data" / "schema.sql"
MIGRATIONS_DIR = PROJECT_ROOT / "data" / "migrations"
DEFAULT_DB = PROJECT_ROOT / "data" / "runlens.duckdb"
SNAPSHOT_SUFFIX = ".read"
PARQUET_MARKER = "runlens-parquet.json"  # written last by export-parquet


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """Return the database path: the argument, else env ``RUNLENS_DB``, else ``data/runlens.duckdb``."""
    if db:
        return Path(db)
    env = os.environ.get("RUNLENS_DB")
    return Path(env) if env else DEFAULT_DB


def is_parquet_folder(path: str | os.PathLike[str]) -> bool:
    """True for a folder written by ``export-parquet`` (it holds a ``runlens-parquet.json`` marker)."""
    folder = Path(path)
    return folder.is_dir() and (folder / PARQUET_MARKER).is_file()


def snapshot_path(db_path: Path) -> Path:
    """Path of the published read-only snapshot of ``db_path``."""
    return db_path.with_name(db_path.name + SNAPSHOT_SUFFIX)


def pending_path(db_path: Path) -> Path:
    """Marker file: the primary may hold commits the snapshot lacks (its modification time: since when)."""
    return db_path.with_name(db_path.name + ".pending")

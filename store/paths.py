"""Where a store lives: the database path, its read snapshot, its markers, the schema and migration files."""

from __future__ import annotations

import os
from pathlib import Path

from store.errors import RunlensError
from store.lake import Lake, is_lake
from store.lake import parse as parse_lake

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = PROJECT_ROOT / "data" / "schema.sql"
MIGRATIONS_DIR = PROJECT_ROOT / "data" / "migrations"
DEFAULT_DB = PROJECT_ROOT / "data" / "runlens.duckdb"
SNAPSHOT_SUFFIX = ".read"
PARQUET_MARKER = "runlens-parquet.json"  # written last by export-parquet


Location = str | os.PathLike[str] | Lake | None  # what --db / RUNLENS_DB may name (None: the default)


def resolve_db_path(db: Location = None) -> Path | Lake:
    """Return the store's location: the argument, else env ``RUNLENS_DB``, else ``data/runlens.duckdb``.

    A DuckDB file or an exported Parquet folder is a Path; ``ducklake:postgres:...`` is a team store (``Lake``,
    store/lake.py). ``str()`` of either gives a location this function accepts again.
    """
    location = db or os.environ.get("RUNLENS_DB") or DEFAULT_DB
    if isinstance(location, Lake):
        return location
    if is_lake(str(location)):  # also a Path made from one by a caller's argparse ``type=Path``
        return parse_lake(str(location))
    return Path(location)


def resolve_file_path(db: Location = None) -> Path:
    """The location as a DuckDB file or Parquet folder path.

    Raises:
        RunlensError: the location is a team store (DuckLake), which has no file.
    """
    location = resolve_db_path(db)
    if isinstance(location, Lake):
        raise RunlensError(f"{location.label} is a team store (DuckLake): this works on a DuckDB file only")
    return location


def is_parquet_folder(path: str | os.PathLike[str] | Lake) -> bool:
    """True for a folder written by ``export-parquet`` (it holds a ``runlens-parquet.json`` marker)."""
    if isinstance(path, Lake) or is_lake(path):
        return False
    folder = Path(path)
    return folder.is_dir() and (folder / PARQUET_MARKER).is_file()


def snapshot_path(db_path: Path) -> Path:
    """Path of the published read-only snapshot of ``db_path``."""
    return db_path.with_name(db_path.name + SNAPSHOT_SUFFIX)


def pending_path(db_path: Path) -> Path:
    """Marker file: the primary may hold commits the snapshot lacks (its modification time: since when)."""
    return db_path.with_name(db_path.name + ".pending")

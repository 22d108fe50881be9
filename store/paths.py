"""Where a store lives: the database path, its read snapshot, its markers, the schema and migration files."""

from __future__ import annotations

import os
from pathlib import Path

from store.lake import Lake
from store.lake import parse as parse_lake

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = PROJECT_ROOT / "data" / "schema.sql"
MIGRATIONS_DIR = PROJECT_ROOT / "data" / "migrations"
DEFAULT_DB = PROJECT_ROOT / "data" / "runlens.duckdb"  # the default of earlier versions: a DuckDB file store
DEFAULT_LAKE = PROJECT_ROOT / "data" / "runlens.lake"  # the default: a local lake's SQLite catalog (store/lake.py)
SNAPSHOT_SUFFIX = ".read"
PARQUET_MARKER = "runlens-parquet.json"  # written last by export-parquet (a folder holding it is a Parquet store)


Location = str | os.PathLike[str] | Lake | None  # what --db / RUNLENS_DB may name (None: the default)


def default_location() -> Path | Lake:
    """The store used when neither ``--db`` nor ``RUNLENS_DB`` names one: the local lake ``data/runlens.lake``
    (``ducklake:sqlite:``, an upload copies nothing whatever the store's size), unless ``data/runlens.duckdb``, the
    file store earlier versions made there, exists and the lake does not: then that file, whose data would
    otherwise vanish from view; ``legacy_default_notice`` says so, with the one command that moves it into the lake.
    """
    if DEFAULT_DB.exists() and not DEFAULT_LAKE.exists():
        return DEFAULT_DB
    return parse_lake(f"ducklake:sqlite:{DEFAULT_LAKE}")


def snapshot_path(db_path: Path) -> Path:
    """Path of the published read-only snapshot of ``db_path``."""
    return db_path.with_name(db_path.name + SNAPSHOT_SUFFIX)


def pending_path(db_path: Path) -> Path:
    """Marker file: the primary may hold commits the snapshot lacks (its modification time: since when)."""
    return db_path.with_name(db_path.name + ".pending")


def legacy_default_notice(location: Path | Lake) -> str | None:
    """A sentence when ``location`` is the file store an earlier version made at the default place (kept as the
    default until moved): what it costs and the command that moves it into the local lake; else None."""
    if not isinstance(location, Path) or location.resolve() != DEFAULT_DB.resolve() or DEFAULT_LAKE.exists():
        return None
    return (
        f"Using the file store {DEFAULT_DB.name} an earlier version made: each upload copies the whole file. "
        f"`python -m analytics migrate-store --from data/{DEFAULT_DB.name} --to ducklake:sqlite:data/{DEFAULT_LAKE.name}` "
        "moves it into the local lake, the default since (docs/scale.md)."
    )

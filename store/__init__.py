"""The bottom layer: where the database lives, its connections, migrations, errors and the run filter.

Everything above (ingest, analytics, ui, pages) reaches the database through the names exported here:

* ``writer(db)``: the one read-write session (migrated, under the writer lock, publishes a read snapshot when it
  ends); ``reader(db)``: a read-only connection to the published snapshot (or a Parquet folder).
* ``query_df`` / ``query_rows``: one parameterised statement, errors carry the SQL (``QueryError``).
* ``RunFilter`` / ``run_filter_params`` / ``with_run_filter``: the global run filter, its parameters and its one
  SQL condition (``store/sql/run_filter.sql``), used by every filtered query.
* ``RunlensError``: base of the project's own errors (pages catch these, never bare Exception).

Modules: ``paths`` (locations), ``connect`` (sessions, publish, snapshots), ``migrate`` (schema versions),
``query`` (executing SQL, ``store/sql/*.sql``), ``filters`` (the run filter), ``writelock`` (the writer's flock),
``parquet`` (a read-only store exported as Parquet files), ``ingest_writer`` (ingested files), ``derived``
(computed data: embeddings, metrics, IRT fits, judge verdicts, rule findings, reviews, cluster labels),
``delete`` (run deletion), ``search_index`` (transcript search's index file beside a file store),
``attempt_update`` (stored attempts replaced when late trace spans arrive, scores set after the run).
"""

from __future__ import annotations

from store import lake
from store.connect import (
    LOCK_WAIT_S,
    Generation,
    db_version,
    ensure_snapshot,
    publish,
    publish_file,
    publish_now,
    reader,
    seal,
    set_aside_newer_file,
    snapshot_generation,
    writer,
    written_by_newer_duckdb,
)
from store.delete import Deletion, RunNotFoundError, delete_run
from store.errors import DatabaseBusyError, QueryError, RunlensError, StoreVersionError
from store.filters import ALL_RUNS, RunFilter, run_filter_params, with_run_filter
from store.lake import Lake, LakeError, is_lake
from store.migrate import StoreInfo, describe, latest_version, migrate, migrations, schema_version
from store.paths import (
    DEFAULT_DB,
    DEFAULT_LAKE,
    MIGRATIONS_DIR,
    PROJECT_ROOT,
    SCHEMA_FILE,
    Location,
    default_location,
    is_parquet_folder,
    legacy_default_notice,
    pending_path,
    resolve_db_path,
    resolve_file_path,
    snapshot_path,
)
from store.query import load_sql, query_df, query_rows, transaction
from store.search_index import SearchIndexRefresh, attach_search_index, drop_search_index, refresh_search_index

__all__ = [
    "SearchIndexRefresh",
    "attach_search_index",
    "drop_search_index",
    "refresh_search_index",
    "DEFAULT_DB",
    "DEFAULT_LAKE",
    "LOCK_WAIT_S",
    "MIGRATIONS_DIR",
    "PROJECT_ROOT",
    "SCHEMA_FILE",
    "DatabaseBusyError",
    "Lake",
    "LakeError",
    "Location",
    "Deletion",
    "Generation",
    "QueryError",
    "RunNotFoundError",
    "ALL_RUNS",
    "RunFilter",
    "RunlensError",
    "StoreInfo",
    "StoreVersionError",
    "db_version",
    "delete_run",
    "default_location",
    "describe",
    "ensure_snapshot",
    "set_aside_newer_file",
    "written_by_newer_duckdb",
    "is_lake",
    "lake",
    "is_parquet_folder",
    "latest_version",
    "legacy_default_notice",
    "load_sql",
    "migrate",
    "migrations",
    "pending_path",
    "publish",
    "publish_file",
    "publish_now",
    "query_df",
    "query_rows",
    "reader",
    "resolve_db_path",
    "resolve_file_path",
    "run_filter_params",
    "schema_version",
    "seal",
    "snapshot_generation",
    "snapshot_path",
    "transaction",
    "with_run_filter",
    "writer",
]

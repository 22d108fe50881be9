"""The bottom layer: the store (wherever it lives), its connections, migrations, errors and the run filter.

Everything above (ingest, analytics, jobs, ui, pages) reaches the database through the names exported here:

* ``open(db)``: the ``Store`` at a location (a DuckDB file, an exported Parquet folder, a local lake
  ``ducklake:sqlite:`` or a team store ``ducklake:postgres:``; default ``RUNLENS_DB``, else the local lake). Callers
  ask the Store, never which kind it is: ``reader()``, ``writer()``, ``sandbox(config)`` (the SQL console's
  locked-down connection), ``publish(con)``, ``version()``, ``describe()``, ``caption()``, ``resolve_as_of(...)``,
  ``sidecar_path(suffix)`` ...
* ``reader(db)`` / ``writer(db)``: ``open(db).reader()`` / ``open(db).writer()``: a read-only connection to the
  published data; the one read-write session (migrated, under the writer lock, publishes when it ends);
  ``limit_memory(bytes)``: the DuckDB memory of this process's sessions (the dashboard's, from its budget).
* ``query_df`` / ``query_rows`` / ``query_number_columns``: one parameterised statement, errors carry the SQL
  (``QueryError``).
* ``RunFilter`` / ``run_filter_params`` / ``with_run_filter``: the global run filter, its parameters and its one
  SQL condition (``store/sql/run_filter.sql``), used by every filtered query.
* ``RunlensError``: base of the project's own errors (pages catch these, never bare Exception).

Modules: ``backends`` (the Store, its registry, one module per backend: ``file`` with its publish snapshots,
``parquet``, ``lake``), ``sessions`` (the module-level calls), ``paths`` (locations), ``lake`` (DuckLake
plumbing), ``migrate`` (schema versions), ``query`` (executing SQL, ``store/sql/*.sql``), ``filters`` (the run
filter), ``writelock`` (the writer's flock), ``parquet`` (reading an export-parquet folder), ``ingest_writer``
(ingested files), ``derived`` (computed data: embeddings, metrics, IRT fits, judge verdicts, rule findings, reviews,
cluster labels), ``delete`` (run deletion), ``search_index`` (transcript search's index beside the store),
``transfer`` (migrate-store, maintain), ``attempt_update`` (stored attempts replaced when late trace spans arrive,
scores set after the run), ``aggregates`` (what the pages read per run x task, kept by the writers).

The names are imported when first asked for (PEP 562 ``__getattr__``), each from its module: ``from store import
RunlensError`` loads ``store.errors`` alone, not DuckDB and every backend. An ingest's validation workers import
the errors and nothing of the database (0.30-0.34 CPU s a worker before, BENCHMARKS.md "Ingest, tenth pass").
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from store.backends import Store, open, resolve_db_path
    from store.delete import RunNotFoundError, delete_run
    from store.errors import DatabaseBusyError, QueryError, RunlensError, StoreVersionError
    from store.filters import ALL_RUNS, RunFilter, run_filter_params, with_run_filter
    from store.lake import LakeError, insert_snapshot_column
    from store.migrate import describe, latest_version, migrate, migrations, schema_version
    from store.paths import PROJECT_ROOT, SCHEMA_FILE, Location, legacy_default_notice, snapshot_path
    from store.query import load_sql, query_df, query_number_columns, query_rows, transaction
    from store.search_index import (
        AttachedIndex,
        SearchIndexRefresh,
        attach_search_index,
        attach_search_index_runs,
        drop_search_index,
        refresh_search_index,
    )
    from store.sessions import db_version, ensure_snapshot, limit_memory, memory_limit, publish, reader, writer

# where each public name is defined (imported from there when first asked for)
_MODULE_OF = {
    **dict.fromkeys(("Store", "open", "resolve_db_path"), "store.backends"),
    **dict.fromkeys(("RunNotFoundError", "delete_run"), "store.delete"),
    **dict.fromkeys(
        ("DatabaseBusyError", "LakeError", "QueryError", "RunlensError", "StoreVersionError"), "store.errors"
    ),
    **dict.fromkeys(("ALL_RUNS", "RunFilter", "run_filter_params", "with_run_filter"), "store.filters"),
    "insert_snapshot_column": "store.lake",
    **dict.fromkeys(("describe", "latest_version", "migrate", "migrations", "schema_version"), "store.migrate"),
    **dict.fromkeys(
        ("PROJECT_ROOT", "SCHEMA_FILE", "Location", "legacy_default_notice", "snapshot_path"), "store.paths"
    ),
    **dict.fromkeys(("load_sql", "query_df", "query_number_columns", "query_rows", "transaction"), "store.query"),
    **dict.fromkeys(
        (
            "AttachedIndex",
            "SearchIndexRefresh",
            "attach_search_index",
            "attach_search_index_runs",
            "drop_search_index",
            "refresh_search_index",
        ),
        "store.search_index",
    ),
    **dict.fromkeys(
        ("db_version", "ensure_snapshot", "limit_memory", "memory_limit", "publish", "reader", "writer"),
        "store.sessions",
    ),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for (then kept here)."""
    module = _MODULE_OF.get(name)
    if module is None:  # (a submodule: ``from store import derived`` imports it after this AttributeError)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """``store.migrate`` is the function, as when every name was imported up front, also after its submodule
    ``store.migrate`` is imported (the import system sets a submodule on its package: that is ignored here;
    ``importlib.import_module("store.migrate")`` gives the module)."""

    @property
    def migrate(self) -> Any:
        from store.migrate import migrate

        return migrate

    @migrate.setter
    def migrate(self, value: Any) -> None:
        pass


sys.modules[__name__].__class__ = _Package

__all__ = [
    "ALL_RUNS",
    "PROJECT_ROOT",
    "SCHEMA_FILE",
    "DatabaseBusyError",
    "LakeError",
    "Location",
    "QueryError",
    "RunFilter",
    "RunNotFoundError",
    "RunlensError",
    "SearchIndexRefresh",
    "Store",
    "StoreVersionError",
    "AttachedIndex",
    "attach_search_index",
    "attach_search_index_runs",
    "db_version",
    "delete_run",
    "describe",
    "drop_search_index",
    "ensure_snapshot",
    "insert_snapshot_column",
    "latest_version",
    "legacy_default_notice",
    "limit_memory",
    "load_sql",
    "memory_limit",
    "migrate",
    "migrations",
    "open",
    "publish",
    "query_df",
    "query_number_columns",
    "query_rows",
    "reader",
    "refresh_search_index",
    "resolve_db_path",
    "run_filter_params",
    "schema_version",
    "snapshot_path",
    "transaction",
    "with_run_filter",
    "writer",
]

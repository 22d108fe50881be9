"""The storage backends and the registry that picks one for a location (``store.open``).

Each name imported below registers one backend (its class is decorated with ``@register``, store/backends/base.py);
``open`` asks them, the latest registered first, whether they claim the location; the DuckDB file, which claims
any path, is the fallback asked last. A new backend: its file here, and its name in the import below.
"""

from __future__ import annotations

import os
from pathlib import Path

from store import paths
from store.backends import (  # each registers its backend
    file,  # noqa: F401  (FileStore: a DuckDB file and its read snapshot; any path no other backend claims)
    lake,  # noqa: F401  (LakeStore: ducklake:sqlite:<catalog file>, ducklake:postgres:<libpq string>)
    parquet,  # noqa: F401  (ParquetStore: a folder written by export-parquet)
)
from store.backends.base import LOCK_WAIT_S, Store, backend_for, register, unregister
from store.lake import Lake
from store.paths import Location

__all__ = ["LOCK_WAIT_S", "Store", "open", "register", "resolve_db_path", "unregister"]


def open(db: Location | Store = None) -> Store:  # noqa: A001  (store.open, as the builtin opens a file)
    """The store at ``db``: the argument, else env ``RUNLENS_DB``, else ``default_location()`` (the local lake
    ``data/runlens.lake``, or the file an earlier version made there). A Store is returned as it is.

    Raises:
        RunlensError: no backend claims the location, or it is malformed (``LakeError``).
    """
    if isinstance(db, Store):
        return db
    location = db or os.environ.get("RUNLENS_DB") or paths.default_location()
    return backend_for(location)(location)


def resolve_db_path(db: Location | Store = None) -> Path | Lake:
    """The store's parsed location (``open(db).location``); ``str()`` of it is a location ``open`` accepts again."""
    return open(db).location

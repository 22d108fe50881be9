"""What every store offers, whatever its backend: the ``Store`` its backends implement, and their registry.

A backend is one class in ``store/backends/<name>.py``, a subclass of ``Store`` decorated with ``@register``, and
its name in the one import of ``store/backends/__init__.py``. ``store.open(location)`` asks the registered
backends, the latest registered first (a fallback last), whether they claim the location (``Store.claims``); the
first that does opens it. Callers then use the Store's methods and never ask which kind of store it is.
"""

from __future__ import annotations

import abc
import datetime as dt
import hashlib
import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import duckdb

from store.errors import RunlensError
from store.lake import Lake
from store.migrate import StoreInfo, describe
from store.paths import PROJECT_ROOT

LOCK_WAIT_S = 120.0

RawLocation = str | os.PathLike[str] | Lake  # what --db / RUNLENS_DB / a caller name, before a backend claims it

_REGISTRY: list[type[Store]] = []
S = TypeVar("S", bound="type[Store]")


def register(backend: S) -> S:
    """Register a backend (a class decorator): ``store.open`` asks it before every backend registered earlier."""
    if backend not in _REGISTRY:
        _REGISTRY.append(backend)
    return backend


def unregister(backend: type[Store]) -> None:
    """Forget a registered backend (tests registering one of their own)."""
    if backend in _REGISTRY:
        _REGISTRY.remove(backend)


def backend_for(location: RawLocation) -> type[Store]:
    """The backend that claims ``location``: the latest registered one that does; a fallback backend (the DuckDB
    file, which claims any path) only when no other does.

    Raises:
        RunlensError: no backend claims it.
    """
    for backend in sorted(reversed(_REGISTRY), key=lambda b: b.is_fallback):  # stable: fallbacks go last
        if backend.claims(location):
            return backend
    raise RunlensError(f"{location}: no storage backend claims this location")


class Store(abc.ABC):
    """One store: its reader, its one writer, the SQL console's sandbox, publishing, its version and what a page
    or a command says about it. Made by ``store.open(location)``; ``str(store)`` is a location ``open`` accepts
    again."""

    is_fallback: ClassVar[bool] = False
    """True for a backend that claims anything no other one claims (asked last, whatever the registration order)."""

    @classmethod
    @abc.abstractmethod
    def claims(cls, location: RawLocation) -> bool:
        """True when this backend opens ``location`` (asked before ``__init__``; never raises)."""

    @abc.abstractmethod
    def __init__(self, location: RawLocation) -> None: ...

    @property
    @abc.abstractmethod
    def location(self) -> Path | Lake:
        """The parsed location (what ``store.resolve_db_path`` gives)."""

    def __str__(self) -> str:
        return str(self.location)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash((type(self).__name__, str(self)))

    @property
    def label(self) -> str:
        """The location for messages and pages (secrets masked)."""
        return str(self)

    # --- connections ---------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def reader(
        self, *, wait_s: float = 30.0, as_of: str | int | dt.datetime | None = None
    ) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A read-only connection to the published data (``as_of``: a past state, where the store keeps them).

        Raises:
            RunlensError: ``as_of`` on a store without time travel.
        """

    @abc.abstractmethod
    def writer(
        self, *, wait_s: float = LOCK_WAIT_S, publish_snapshot: bool = True, short_session: bool = False
    ) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """The one read-write session (migrated, one at a time); what it commits is published when it ends.

        Raises:
            DatabaseBusyError: another writer kept the store for longer than ``wait_s``.
            RunlensError: the store is read-only.
        """

    @abc.abstractmethod
    def sandbox(self, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        """A fresh DuckDB with ``config`` (the SQL console's limits) reading the published data, with external
        access off and its configuration locked: only the store's own files stay readable."""

    view_sql_names_paths: ClassVar[bool] = False
    """True when the store's views are ``read_parquet('<server path>')``: the console hides their SQL."""

    # --- publishing and versions ---------------------------------------------------------------------------------

    @abc.abstractmethod
    def ensure_snapshot(self) -> Path | Lake:
        """Make sure readable, current published data exists (creating and migrating the store if needed)."""

    @abc.abstractmethod
    def version(self) -> str:
        """A token that changes whenever new data is published (cache keys)."""

    def publish(self, con: duckdb.DuckDBPyConnection) -> None:
        """Publish when the current writer session ends, even if its block raises (nothing to do where every
        commit is visible at once)."""
        return None

    def publish_now(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Publish now, from inside a writer session; True when something was published."""
        return False

    def set_commit_message(self, con: duckdb.DuckDBPyConnection, message: str, extra: dict[str, Any]) -> None:
        """Note why the writer session ``con`` commits, where the store keeps such notes."""
        return None

    # --- time travel ---------------------------------------------------------------------------------------------

    supports_as_of: ClassVar[bool] = False
    """True when the store keeps past states (``--as-of``, ``?as_of=``)."""

    def resolve_as_of(self, as_of: str | int | dt.datetime) -> tuple[int, dt.datetime]:
        """The snapshot id and commit time that ``as_of`` (a snapshot id or a time) names.

        Raises:
            RunlensError: the store keeps no past states, or none at ``as_of``.
        """
        raise RunlensError(f"{self.label}: --as-of (time travel) needs a team store (DuckLake)")

    # --- what callers ask about a store --------------------------------------------------------------------------

    def describe(self) -> StoreInfo:
        """Its schema version and whether it holds runs (read from the published data)."""
        with self.reader() as con:
            return describe(con)

    def caption(self) -> str | None:
        """What a page says about where its data comes from (None: the usual case, nothing to say)."""
        return None

    def exists(self) -> bool:
        """False when there is nothing at the location yet (a reader or writer would create it)."""
        return True

    def sidecar_path(self, suffix: str) -> Path:
        """A file kept beside the store (``suffix`` e.g. ``.uploads.jsonl``); under ``data/`` for a store without
        a folder of its own, named by a digest of its location."""
        digest = hashlib.sha256(str(self).encode()).hexdigest()[:12]
        return PROJECT_ROOT / "data" / f"store-{digest}{suffix}"

    @property
    def takes_demo_data(self) -> bool:
        """True when the dashboard may load its demo dataset into this store when it holds no runs."""
        return False

    def set_aside_unreadable(self) -> Path | None:
        """Move aside a default store this version cannot read, so a new one can be made; its new name, or None."""
        return None

    def prepare(self) -> StoreInfo:
        """Create or migrate the store before the dashboard serves anyone; what it holds then."""
        self.ensure_snapshot()
        return self.describe()

    def maintain(self, cutoff: dt.datetime) -> tuple[int, int, int, int]:
        """Compact the store and expire states older than ``cutoff``, in a writer session: tables flushed, tables
        merged, states expired, files removed.

        Raises:
            RunlensError: the store has no maintenance to do.
        """
        raise RunlensError(f"{self.label}: maintain is for a team store (DuckLake); a DuckDB file needs no maintenance")

    def rewrite_texts_ordered(self) -> int:
        """Rewrite the long texts sorted by hash in small row groups (the layout the ingest writes since issue 33)
        in one writer session; the rows rewritten.

        Raises:
            RunlensError: this kind of store keeps no such layout (only a lake does).
        """
        raise RunlensError(f"{self.label}: texts are rewritten in hash order on a lake only; this store is not a lake")

    # --- transcript search's index beside the store (store/search_index.py) --------------------------------------

    def search_index_path(self, suffix: str) -> Path | None:
        """Where the search index file lives, or None when the store keeps none (it is always scanned)."""
        return None

    def open_search_source(self, index: Path) -> tuple[duckdb.DuckDBPyConnection, str]:
        """A connection to the index file ``index`` and the statement attaching the published data as ``src``."""
        raise RunlensError(f"{self.label}: keeps no search index")

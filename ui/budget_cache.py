"""A least-recently-used cache bounded in bytes, for results a user's own SQL produced.

``st.cache_data(max_entries=64)`` bounds the number of results, not their size: eight wide queries took
the server from 516 MB to 1.8 GB and kept it after the browser closed. This cache evicts the least
recently used results once their estimated size passes a byte budget (env ``RUNLENS_SQL_CACHE_MB``,
default 256), and never keeps a single result larger than the budget.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd
import streamlit as st

DEFAULT_BUDGET_MB = 256


def budget_bytes() -> int:
    """The byte budget of the SQL result cache (env ``RUNLENS_SQL_CACHE_MB``)."""
    try:
        return max(1, int(os.environ.get("RUNLENS_SQL_CACHE_MB", DEFAULT_BUDGET_MB))) * 1024 * 1024
    except ValueError:
        return DEFAULT_BUDGET_MB * 1024 * 1024


def size_of(value: Any) -> int:
    """Estimated bytes of ``value``: data frames (deep, with Python strings) anywhere in a dataclass or tuple."""
    if isinstance(value, pd.DataFrame):
        return int(value.memory_usage(index=True, deep=True).sum())
    if isinstance(value, (list, tuple)):
        return sum(size_of(v) for v in value) + sys.getsizeof(value)
    if hasattr(value, "__dataclass_fields__"):
        return sum(size_of(getattr(value, name)) for name in value.__dataclass_fields__) + 64
    return sys.getsizeof(value)


class ByteBudgetCache:
    """Thread-safe LRU cache whose entries add up to at most ``max_bytes`` (by ``size_of``)."""

    def __init__(self, max_bytes: int, *, max_entries: int = 64) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.n_bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The cached value for ``key``, or ``compute()`` stored when it fits the budget."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
        value = compute()  # outside the lock: other sessions' hits must not wait for a query
        size = size_of(value)
        with self._lock:
            if size <= self.max_bytes and key not in self._items:
                self._items[key] = (value, size)
                self.n_bytes += size
                self._evict()
        return value

    def _evict(self) -> None:
        while self._items and (self.n_bytes > self.max_bytes or len(self._items) > self.max_entries):
            _, (_, size) = self._items.popitem(last=False)
            self.n_bytes -= size

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()
            self.n_bytes = 0


@st.cache_resource(show_spinner=False)
def _shared(max_bytes: int) -> ByteBudgetCache:
    return ByteBudgetCache(max_bytes)


def shared_sql_cache() -> ByteBudgetCache:
    """The one SQL result cache of this server process (shared by every session, like ``st.cache_data``)."""
    return _shared(budget_bytes())

"""Transcript search's index: build, refresh or drop it (``python -m analytics search-index``).

The index (store/search_index.py: a DuckDB file ``<db>.search`` beside a file store, holding every text search
reads, lower-cased) lets a phrase search run one contains() per text instead of lower() and contains() over every
column and the long-results table (docs/failure_analysis.md). A refresh adds only attempts ingested since the last
one and forgets deleted ones; search scans whatever the index does not cover, so a missed refresh costs time, never
results.
"""

from __future__ import annotations

from store import Location, SearchIndexRefresh, drop_search_index, refresh_search_index


def refresh(db: Location, *, rebuild: bool = False) -> SearchIndexRefresh:
    """Add what the index lacks (everything with ``rebuild``); see ``store.refresh_search_index``."""
    return refresh_search_index(db, rebuild=rebuild)


def drop(db: Location) -> bool:
    """Delete the index file; True when there was one."""
    return drop_search_index(db)

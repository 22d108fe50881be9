"""Transcript search's index: build, refresh or drop it (``python -m analytics search-index``).

The index (store/search_index.py: a folder ``<db>.search/`` beside a file store or a local lake's catalog) is an
inverted index of the texts' tokens: a phrase or words search takes its candidates from the postings of the
query's rarest tokens and checks them on the text (or, for a query of one run of letters and digits, the
postings are the answer). A refresh adds one segment with the attempts of the files ingested since the last one,
without rewriting the others, and merges the smallest segments past a count; search scans whatever the index does
not cover, so a missed refresh costs time, never results.
"""

from __future__ import annotations

from store import Location, SearchIndexRefresh, drop_search_index, refresh_search_index


def refresh(db: Location, *, rebuild: bool = False) -> SearchIndexRefresh:
    """Add what the index lacks (everything with ``rebuild``); see ``store.refresh_search_index``."""
    return refresh_search_index(db, rebuild=rebuild)


def drop(db: Location) -> bool:
    """Delete the index; True when there was one."""
    return drop_search_index(db)

"""Transcript search's index: build, refresh or drop it (``python -m analytics search-index``), and keep it up to
date after each ingest (``python -m jobs.search_index``: the refresh in a process of its own, which the Upload page
and ``python -m ingest`` start in the background after they ingest something, whenever the store has an index).

The index (store/search_index.py: a folder ``<db>.search/`` beside a file store or a local lake's catalog) is an
inverted index of the texts' tokens: a phrase or words search takes its candidates from the postings of the
query's rarest tokens and checks them on the text (or, for a query of one run of letters and digits, the
postings are the answer). A refresh adds one segment with the attempts of the files ingested since the last one,
without rewriting the others, and merges the smallest segments past a count; search scans whatever the index does
not cover, so a missed refresh costs time, never results.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from jobs import worker_process
from store import Location, SearchIndexRefresh, drop_search_index, refresh_search_index
from store.search_index import index_path, read_manifest

MB = 1024 * 1024
# What the refresh's process may hold in all (address space): DuckDB's share is store.search_index.MEMORY_LIMIT
# (1,500 MB, beyond which it spills beside the index), the rest the interpreter and one batch of tokens; a build at
# 1M attempts peaked at 1.75 GB resident (docs/failure_analysis.md). A refresh after an upload holds far less.
WORKER_BYTES = int(os.environ.get("RUNLENS_SEARCH_INDEX_WORKER_MB", "4096")) * MB
WORKER_MIN_BYTES = min(3072 * MB, WORKER_BYTES)
WORKER_CPU_S = int(os.environ.get("RUNLENS_SEARCH_INDEX_WORKER_CPU_S", "7200"))


def refresh(db: Location, *, rebuild: bool = False) -> SearchIndexRefresh:
    """Add what the index lacks (everything with ``rebuild``); see ``store.refresh_search_index``."""
    return refresh_search_index(db, rebuild=rebuild)


def drop(db: Location) -> bool:
    """Delete the index; True when there was one."""
    return drop_search_index(db)


def has_index(db: Location) -> bool:
    """Whether ``db`` has a search index to keep up to date (one built by ``search-index``; a team store or a Parquet
    folder never has one)."""
    folder = index_path(db)
    return folder is not None and folder.is_dir() and read_manifest(folder) is not None


def summary(done: SearchIndexRefresh) -> str:
    """One line of what a refresh after an ingest did."""
    if not done.attempts_added and not done.attempts_removed:
        return f"search index: up to date ({done.attempts_covered:,} attempts covered)"
    return (
        f"search index: {done.attempts_added:,} attempts added ({done.attempts_covered:,} covered, "
        f"{done.segments} segment(s)) in {done.seconds:.1f} s"
    )


def worker_request(store: str) -> dict[str, Any]:
    """The request ``python -m jobs.search_index`` reads on its stdin: refresh ``store``'s index under the worker's
    memory and CPU limits (``memory_bytes``: its cap, lowered to what the memory budget grants when it starts, at
    least ``min_memory_bytes``; ``jobs.worker_process.reserve``)."""
    return {
        "store": store,
        "memory_bytes": WORKER_BYTES,
        "min_memory_bytes": WORKER_MIN_BYTES,
        "job": "The search index's refresh",
        "memory_setting": "RUNLENS_SEARCH_INDEX_WORKER_MB",
        "cpu_s": WORKER_CPU_S,
    }


def refresh_in_background(store: str) -> int:
    """Start ``python -m jobs.search_index`` on ``store`` as a process that outlives the caller (``python -m ingest``
    returns at once: a small upload's seconds stay the store's); it caps its own memory and CPU, and a refresh lock
    keeps it and any other refresh apart. Returns its pid. Until it ends, search scans what the index lacks."""
    return worker_process.spawn("jobs.search_index", worker_request(store), stderr=None, detached=True).pid


class IndexKeeper:
    """Keeps a store's search index up with a writer that commits again and again (the live OTLP receiver's
    flusher): ``written`` after each commit, ``tick`` on the writer's timer. At most one refresh runs at a time
    (``python -m jobs.search_index``, a process of its own under its caps that ends with its parent), started at
    least ``interval_s`` after the one before; commits made while one runs are covered by the next. A store without
    an index is looked at again only after the next commit."""

    def __init__(self, db: str, *, interval_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.db, self.interval_s, self._clock = db, interval_s, clock
        self._pending = False
        self._started: float | None = None
        self._job: worker_process.JobProcess | None = None

    def written(self) -> None:
        """Something was committed: the index lacks it."""
        self._pending = True

    @property
    def running(self) -> bool:
        """Whether a refresh runs now."""
        return self._job is not None and self._job.running

    def tick(self) -> str | None:
        """Collect a refresh that ended (its ``summary``, or why it failed, returned as a line to log) and start the
        next when commits wait for one and ``interval_s`` has passed since the last start."""
        line = None
        if self._job is not None and not self._job.running:
            ok, value = self._job.follow()
            line = str(value) if ok else f"the search index's refresh failed: {value}"
            self._job.close()
            self._job = None
        due = self._started is None or self._clock() - self._started >= self.interval_s
        if self._pending and self._job is None and due:
            self._pending = False
            if has_index(self.db):
                self._job = worker_process.JobProcess("jobs.search_index", worker_request(self.db))
                self._started = self._clock()
        return line


def _worker_main() -> int:
    """One JSON request on stdin (``worker_request`` and ``parent_pid``); one JSON object a line on the stdout it was
    given: the refresh's ``summary`` as its last progress message and as ``done``, or ``error``."""
    request, say = worker_process.channel()
    memory_bytes, cpu_s = int(request["memory_bytes"]), int(request["cpu_s"])
    worker_process.limit(
        memory_bytes,
        cpu_s,
        say,
        f"the search index's refresh stopped at its CPU limit of {cpu_s:,} s (RUNLENS_SEARCH_INDEX_WORKER_CPU_S)",
    )
    worker_process.watch_parent(int(request.get("parent_pid") or 0))
    say(fraction=0.0, message="Adding the new attempts to the search index...")
    try:
        line = summary(refresh(request["store"]))
    except Exception as exc:  # noqa: BLE001 -- reported to the page that waits for the job
        say(
            error=worker_process.error_text(
                exc, memory_bytes, WORKER_BYTES, "RUNLENS_SEARCH_INDEX_WORKER_MB", holder="the refresh's process"
            )
        )
        return 1
    say(fraction=1.0, message=line)
    say(done=line)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main())

"""The worker processes a server starts (SQL sandbox, upload checks): a bounded pool, and the limits each runs under.

One memory budget covers the dashboard's process tree: the Streamlit server plus the workers it runs at once.
Three things keep it:

- **A bounded pool within a budget.** At most ``RUNLENS_WORKER_SLOTS`` (default 2) workers run at once per server
  process, SQL and uploads alike, and in the dashboard (``use_budget``) only while the server's resident memory
  (uploads held by Streamlit included) plus every running worker's limit stays within ``RUNLENS_MEMORY_BUDGET_MB``
  (default 1,536): a worker is started
  with the limit it asks for or what the budget has left, and a request that finds neither a slot nor enough
  memory waits up to its own patience and is then refused with a message (``WorkersBusy``), never started.
- **A limit on everything a worker holds.** ``RLIMIT_AS`` (address space) covers Python objects, Arrow buffers and
  DuckDB's memory together, not only DuckDB's ``memory_limit`` (which is set below it). Address space is a close
  measure of memory here because each worker starts with ``MALLOC_ARENA_MAX=2`` and Arrow's system allocator:
  without them glibc's per-thread arenas and Arrow's jemalloc reserve about 1.2 GB of address space that is never
  touched (measured: 1.58 GB of address space for 150 MB resident; with them, 0.46 GB).
- **Streams, not copies.** Workers write results to files and read uploads from files (``ingest.upload_worker``,
  ``analytics.sql_console.worker``); the server never holds a second copy.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

from store import RunlensError

WORKER_SLOTS = max(1, int(os.environ.get("RUNLENS_WORKER_SLOTS", "2") or 2))
# What a worker may hold in all (address space, see above) when the budget leaves room for it.
WORKER_MEMORY_BYTES = int(os.environ.get("RUNLENS_WORKER_MB", "1024")) * 1024 * 1024
# The whole tree: the server's resident memory plus every running worker's limit stays within it. On in the
# dashboard (``use_budget``, called by the app), off for the command line (one process, one worker at a time).
DEFAULT_BUDGET_BYTES = int(os.environ.get("RUNLENS_MEMORY_BUDGET_MB", "1536")) * 1024 * 1024
_budget: list[int | None] = [None]
# Below this a worker cannot do anything useful (the interpreter and its libraries map about 460 MB).
WORKER_MIN_BYTES = 640 * 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")
_changed = threading.Condition()
_reserved: dict[int, int] = {}  # ticket -> bytes granted to a running worker
_tickets = iter(range(1, 1 << 62))


class WorkersBusy(RunlensError):
    """No worker slot, or not enough of the memory budget, came free for as long as the request would wait."""


def server_rss_bytes() -> int:
    """Resident bytes of this process (the server) now."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def use_budget(total_bytes: int | None = DEFAULT_BUDGET_BYTES) -> None:
    """Hold this process and its workers to ``total_bytes`` (None: slots and per-worker limits only)."""
    _budget[0] = total_bytes


def budget_bytes() -> int | None:
    """The process tree's memory budget in force (None when off)."""
    return _budget[0]


def _grant(want: int, minimum: int) -> int:
    """Bytes a new worker may have now (0: not yet): a free slot and at least ``minimum`` of the budget left."""
    if len(_reserved) >= WORKER_SLOTS:
        return 0
    total = _budget[0]
    if total is None:
        return want
    left = total - server_rss_bytes() - sum(_reserved.values())
    if left < minimum and _trim_heap():  # memory the server freed (an upload's request body) but still holds
        left = total - server_rss_bytes() - sum(_reserved.values())
    return min(want, left) if left >= minimum else 0


def _trim_heap() -> bool:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``); True when it could."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def worker_slot(what: str, *, wait_s: float, want_bytes: int, min_bytes: int = WORKER_MIN_BYTES) -> Iterator[int]:
    """Hold a worker slot and part of the memory budget while the body runs (a worker process lives inside it);
    yield the bytes granted, the limit to start the worker with.

    Args:
        what: what the worker is for, in the refusal ("The SQL statement", "Checking the upload").
        wait_s: how long to queue for a slot and memory before refusing.
        want_bytes: the limit the worker would like.
        min_bytes: the least it can work with (it waits for that much).

    Raises:
        WorkersBusy: no slot or not enough memory came free within ``wait_s``.
    """
    deadline = time.monotonic() + wait_s
    with _changed:
        granted = _grant(want_bytes, min(min_bytes, want_bytes))
        while not granted and time.monotonic() < deadline:
            _changed.wait(min(0.5, max(0.0, deadline - time.monotonic())))  # the server's memory may shrink too
            granted = _grant(want_bytes, min(min_bytes, want_bytes))
        if not granted:
            raise WorkersBusy(_busy_message(what, wait_s))
        ticket = next(_tickets)
        _reserved[ticket] = granted
    try:
        yield granted
    finally:
        with _changed:
            del _reserved[ticket]
            _changed.notify_all()


def _busy_message(what: str, wait_s: float) -> str:
    mb = 1024**2
    total = _budget[0]
    budget = (
        ""
        if total is None
        else f" within a memory budget of {total / mb:,.0f} MB (the server holds {server_rss_bytes() / mb:,.0f} MB "
        f"now, uploads included, and {len(_reserved)} worker(s) {sum(_reserved.values()) / mb:,.0f} MB)"
    )
    return (
        f"{what} was not started: the server runs at most {WORKER_SLOTS} worker(s) at once{budget}, and no room "
        f"came free within {wait_s:g} s; try again in a moment, or with fewer or smaller files"
    )


def running() -> int:
    """How many workers hold a slot now."""
    return len(_reserved)


def worker_env(root: str) -> dict[str, str]:
    """The environment of a worker: this one, the project on ``PYTHONPATH``, and allocators that reserve only what
    they use (so the address-space limit measures memory)."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
        "MALLOC_ARENA_MAX": "2",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "OMP_NUM_THREADS": "1",
    }


def limit_this_process(memory_bytes: int, cpu_s: int) -> None:
    """In a worker: cap its address space and CPU time (exceeding the first fails allocations, the second kills)."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

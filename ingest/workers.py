"""The worker processes a server starts (SQL sandbox, upload checks): a bounded pool, and the limits each runs under.

One memory budget covers the dashboard's process tree: the Streamlit server plus the workers it runs at once.
Three things keep it:

- **A bounded pool.** At most ``RUNLENS_WORKER_SLOTS`` (default 2) workers run at once per server process, SQL and
  uploads alike; a request beyond that waits for a slot up to its own patience and is then refused with a
  message (``WorkersBusy``), never started.
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
from collections.abc import Iterator

from store import RunlensError

WORKER_SLOTS = max(1, int(os.environ.get("RUNLENS_WORKER_SLOTS", "2") or 2))
# What a worker may hold in all (address space, see above): with the server (about 300-450 MB) one worker stays
# within 1.5 GB, two at once within 2.5 GB.
WORKER_MEMORY_BYTES = int(os.environ.get("RUNLENS_WORKER_MB", "1024")) * 1024 * 1024
_slots = threading.BoundedSemaphore(WORKER_SLOTS)
_lock = threading.Lock()
_running = 0


class WorkersBusy(RunlensError):
    """Every worker slot stayed taken for as long as the request would wait."""


@contextlib.contextmanager
def worker_slot(what: str, *, wait_s: float) -> Iterator[None]:
    """Hold one of the server's worker slots while the body runs (a worker process lives inside it).

    Args:
        what: what the worker is for, in the refusal ("the SQL query", "checking the upload").
        wait_s: how long to queue for a slot before refusing.

    Raises:
        WorkersBusy: no slot came free within ``wait_s``.
    """
    global _running
    if not _slots.acquire(timeout=wait_s):
        raise WorkersBusy(
            f"{what} was not started: the server runs at most {WORKER_SLOTS} worker(s) at once to stay within its "
            f"memory budget, and they stayed busy for {wait_s:g} s; try again in a moment"
        )
    with _lock:
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
        _slots.release()


def running() -> int:
    """How many worker slots are taken now."""
    return _running


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

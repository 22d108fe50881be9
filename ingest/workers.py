"""The processes a server starts (SQL sandbox, upload checks, and the project's jobs: the IRT fit and the failure
clusters): a bounded pool, one memory budget over all of them, and the limits each runs under.

One memory budget covers the dashboard's process tree: the Streamlit server plus the workers and jobs it runs at
once. Five things keep it:

- **A bounded pool within a budget.** At most ``RUNLENS_WORKER_SLOTS`` (default 2) workers run at once per server
  process, SQL and uploads alike, and in the dashboard (``use_budget``) only while the server's resident memory
  (uploads held by Streamlit included) plus every running worker's limit stays within ``RUNLENS_MEMORY_BUDGET_MB``
  (default: half the machine's memory, at least 1,536 MB; ``default_budget_bytes``): a worker is started
  with the limit it asks for or what the budget has left, and a request that finds neither a slot nor enough
  memory waits up to its own patience and is then refused with a message (``WorkersBusy``), never started.
- **Jobs hold a reservation too** (``reserve_job``). A job's process (``python -m jobs.irt``, ``python -m
  jobs.clusters_worker``) starts with the address-space limit the budget grants it (its own cap, e.g.
  ``RUNLENS_CLUSTERS_WORKER_MB``, or what is left, at least its minimum, keeping ``JOB_ROOM_BYTES`` for another
  job when it can), holds that much of the budget while it runs and gives it back when it ends or dies. Jobs take no worker slot, and never the last ``WORKER_MEMORY_BYTES``
  of the budget: that is kept for an upload or SQL worker, so a long job never starves them. A job that finds too
  little waits (the page shows why) up to ``RUNLENS_JOB_WAIT_S``, then is refused with the budget, what it needs
  and the setting that raises it (``JobRefused``); one the budget could never hold is refused at once.
- **A limit on everything a worker holds.** ``RLIMIT_AS`` (address space) covers Python objects, Arrow buffers and
  DuckDB's memory together, not only DuckDB's ``memory_limit`` (which is set below it). Address space is a close
  measure of memory here because each worker starts with ``MALLOC_ARENA_MAX=2`` and Arrow's system allocator:
  without them glibc's per-thread arenas and Arrow's jemalloc reserve about 1.2 GB of address space that is never
  touched (measured: 1.58 GB of address space for 150 MB resident; with them, 0.46 GB).
- **The server's own reads within a share.** The server's DuckDB sessions (every page's reads, its small writes)
  run under DuckDB's ``memory_limit``: ``server_duckdb_bytes`` of the budget (a quarter, at least 512 MB;
  ``RUNLENS_SERVER_DUCKDB_MB``); beyond it a statement spills to a temporary folder or fails with DuckDB's
  out-of-memory error, which a page reports.
- **Streams, not copies.** Workers write results to files and read uploads from files (``ingest.upload_worker``,
  ``analytics.sql_console.worker``); the server never holds a second copy.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator

from store import RunlensError

MB = 1024 * 1024
WORKER_SLOTS = max(1, int(os.environ.get("RUNLENS_WORKER_SLOTS", "2") or 2))
# What a worker may hold in all (address space, see above) when the budget leaves room for it.
WORKER_MEMORY_BYTES = int(os.environ.get("RUNLENS_WORKER_MB", "1024")) * 1024 * 1024
# The whole tree: the server's resident memory plus every running worker's limit stays within it. On in the
# dashboard (``use_budget``, called by the app), off for the command line (one process, one worker at a time).
BUDGET_FLOOR_BYTES = 1536 * MB


def default_budget_bytes() -> int:
    """``RUNLENS_MEMORY_BUDGET_MB``, else half of this machine's physical memory, at least 1,536 MB (the budget of
    the server and its SQL and upload workers alone; a job's process needs 2.5-4 GB of address space at a million
    attempts, BENCHMARKS.md)."""
    setting = os.environ.get("RUNLENS_MEMORY_BUDGET_MB", "").strip()
    if setting:
        return int(setting) * MB
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        physical = 0
    return max(BUDGET_FLOOR_BYTES, physical // 2)


DEFAULT_BUDGET_BYTES = default_budget_bytes()
# What a job leaves of the budget, when it can, for another job started meanwhile (the IRT fit and the clusters job
# each need at most 2.6 GB of address space at a million attempts: BENCHMARKS.md).
JOB_ROOM_BYTES = 3072 * MB
# How long a job waits for its share of the budget (other jobs ending) before it is refused.
JOB_WAIT_S = float(os.environ.get("RUNLENS_JOB_WAIT_S", "1800") or 1800)
_budget: list[int | None] = [None]
# Below this a worker cannot do anything useful (the interpreter and its libraries map about 460 MB).
WORKER_MIN_BYTES = 640 * 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")
_changed = threading.Condition()
_reserved: dict[int, int] = {}  # ticket -> bytes granted to a running worker
_jobs: dict[int, int] = {}  # ticket -> bytes granted to a running job's process
_tickets = iter(range(1, 1 << 62))


class WorkersBusy(RunlensError):
    """No worker slot, or not enough of the memory budget, came free for as long as the request would wait."""


class JobRefused(RunlensError):
    """A job's process was not started: the memory budget cannot grant it the least it needs (now, or within its
    wait)."""


def server_rss_bytes() -> int:
    """Resident bytes of this process (the server) now."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def use_budget(total_bytes: int | None = DEFAULT_BUDGET_BYTES) -> None:
    """Hold this process and its workers to ``total_bytes`` (None: slots and per-worker limits only), the server's
    own DuckDB sessions to ``server_duckdb_bytes`` of it (``store.limit_memory``)."""
    _budget[0] = total_bytes
    from store import limit_memory

    limit_memory(None if total_bytes is None else server_duckdb_bytes(total_bytes))


SERVER_DUCKDB_MIN_BYTES = 512 * MB


def server_duckdb_bytes(total_bytes: int) -> int:
    """DuckDB's memory in the server's own sessions (its pages' reads and its small writes) under a budget of
    ``total_bytes``: ``RUNLENS_SERVER_DUCKDB_MB``, else a quarter of the budget, at least 512 MB. The rest is the
    server's Python objects and its workers' and jobs' limits. Beyond it a statement spills to disk or, when it
    cannot, fails with DuckDB's out-of-memory error (the Search page says so); without it one search that scanned ten
    million attempts held 19.9 GB of the server (BENCHMARKS.md)."""
    setting = os.environ.get("RUNLENS_SERVER_DUCKDB_MB", "").strip()
    if setting:
        return int(setting) * MB
    return max(SERVER_DUCKDB_MIN_BYTES, total_bytes // 4)


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
    left = total - server_rss_bytes() - held_bytes()
    if left < minimum and _trim_heap():  # memory the server freed (an upload's request body) but still holds
        left = total - server_rss_bytes() - held_bytes()
    return min(want, left) if left >= minimum else 0


def held_bytes() -> int:
    """The budget's bytes reserved now: every running worker's and job's limit."""
    return sum(_reserved.values()) + sum(_jobs.values())


def _job_grant(want: int, minimum: int) -> int:
    """Bytes a new job may have now (0: not yet): at least ``minimum`` of the budget left after the server, the
    running workers and jobs, and one worker's limit kept for uploads and SQL."""
    total = _budget[0]
    if total is None:
        return want
    left = total - server_rss_bytes() - held_bytes() - WORKER_MEMORY_BYTES
    if left < minimum and _trim_heap():
        left = total - server_rss_bytes() - held_bytes() - WORKER_MEMORY_BYTES
    if left < minimum:
        return 0
    if left - JOB_ROOM_BYTES >= minimum:  # room for another job while this one runs, so that it need not wait
        left -= JOB_ROOM_BYTES
    return min(want, left)


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
        f"now, uploads included, and {len(_reserved)} worker(s) {sum(_reserved.values()) / mb:,.0f} MB"
        + (f", {len(_jobs)} job(s) {sum(_jobs.values()) / mb:,.0f} MB" if _jobs else "")
        + ")"
    )
    return (
        f"{what} was not started: the server runs at most {WORKER_SLOTS} worker(s) at once{budget}, and no room "
        f"came free within {wait_s:g} s; try again in a moment, or with fewer or smaller files"
    )


def reserve_job(
    what: str,
    *,
    want_bytes: int,
    min_bytes: int,
    setting: str,
    wait_s: float | None = JOB_WAIT_S,
    waiting: Callable[[str], None] | None = None,
) -> tuple[int, int] | None:
    """Reserve part of the memory budget for a job's process; return ``(ticket, bytes granted)``: the address-space
    limit to start it with, held until ``release_job(ticket)`` (call it in a ``finally`` once the process has ended).

    Args:
        what: the job, in the messages ("The IRT fit").
        want_bytes: the limit the job would like (its own cap).
        min_bytes: the least it can work with (it waits for that much).
        setting: the environment variable of the job's own cap (named beside the budget's).
        wait_s: how long to wait for running jobs and workers to give memory back before refusing; None: do not
            wait, return None when the budget cannot grant it now (but could later).
        waiting: told, about every 2 s while the job waits, what it waits for (the page shows it).

    Raises:
        JobRefused: the budget cannot hold ``min_bytes`` even with nothing else running (at once), or did not
            free it within ``wait_s``.
    """
    minimum = min(min_bytes, want_bytes)
    deadline = time.monotonic() + (wait_s or 0.0)
    told = 0.0
    with _changed:
        granted = _job_grant(want_bytes, minimum)
        while not granted:
            if not _reserved and not _jobs:  # nothing running will give memory back: it cannot fit
                raise JobRefused(_job_message(what, minimum, setting, waited=None))
            if wait_s is None:
                return None
            if time.monotonic() >= deadline:
                raise JobRefused(_job_message(what, minimum, setting, waited=wait_s))
            if waiting is not None and time.monotonic() - told >= 2.0:
                waiting(_job_message(what, minimum, setting, waited=0.0))
                told = time.monotonic()
            _changed.wait(min(0.5, max(0.0, deadline - time.monotonic())))
            granted = _job_grant(want_bytes, minimum)
        ticket = next(_tickets)
        _jobs[ticket] = granted
    return ticket, granted


def release_job(ticket: int) -> None:
    """Give a job's reservation back to the budget (once its process has ended); a ticket given back already is
    ignored."""
    with _changed:
        if _jobs.pop(ticket, None) is not None:
            _changed.notify_all()


def _job_message(what: str, minimum: int, setting: str, *, waited: float | None) -> str:
    """Why a job is not started (``waited`` None: it never can be; 0: it is waiting now; else refused after that)."""
    total = _budget[0] or 0
    held = (
        f"the server holds {server_rss_bytes() / MB:,.0f} MB, {len(_jobs)} job(s) {sum(_jobs.values()) / MB:,.0f} MB "
        f"and {len(_reserved)} worker(s) {sum(_reserved.values()) / MB:,.0f} MB, and {WORKER_MEMORY_BYTES / MB:,.0f} "
        "MB is kept for uploads and SQL"
    )
    need = f"it needs at least {minimum / MB:,.0f} MB of the memory budget of {total / MB:,.0f} MB ({held})"
    if waited == 0.0:
        return f"{what} is waiting for memory: {need}; it starts when a running job ends"
    when = "" if waited is None else f" and none came free within {waited:g} s"
    return (
        f"{what} was not started: {need}{when}; raise RUNLENS_MEMORY_BUDGET_MB (or lower {setting}, its own cap, "
        "if it needs less)"
    )


def jobs_running() -> int:
    """How many jobs hold part of the budget now."""
    return len(_jobs)


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

"""``python -m jobs.clusters_worker``: the Failure clusters job (``jobs.failures.cluster_failures``) in a process of its
own (``worker_request``, ``ui.background.start_process``), as the IRT fit runs (``jobs.irt``).

Its documents step reads the steps of a batch of failed attempts, and DuckDB's working memory for that read took the
process to 7-8 GB at ten million attempts (BENCHMARKS.md). DuckDB's ``memory_limit`` bounds it, but it is a setting of
the instance, which a server shares between every page: here it is this process's own, with a ``temp_directory`` in a
temporary folder removed at the end, below an address-space cap on the whole process. The embedding model is loaded
here, never in the server. Writes still go through the one writer (``store.writer``), as in the server."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from ingest.tempdirs import owned_temporary_folder, remove_orphans
from jobs import worker_process

MB = 1024 * 1024
SPILL_PREFIX = "runlens-clusters-spill-"  # the job's folder in the system's temporary folder (spill_folder)
# What the job's process may hold in all (address space: the interpreter, DuckDB, the failures' texts, one array of
# their vectors, the model). Nothing in the job holds every failure's document or a second copy of their vectors, so
# what it needs grows with the failures by their texts and vectors alone: at ten million attempts (1.07M failures of
# one benchmark) it peaked at 3.5 GB resident and 4.25 GB of address space (6.5 GB before DuckDB's allocator gave
# back what it freed, 7.6 GB resident before that; BENCHMARKS.md). The cap is that with a margin, so it is a real
# bound: raise it for a benchmark of several million failures.
WORKER_BYTES = int(os.environ.get("RUNLENS_CLUSTERS_WORKER_MB", "8192")) * MB
# DuckDB's share, below the cap (as the SQL console's 384 MB is below its worker's 1 GiB), for the whole job: every
# read spills beyond it (the documents step's read of the steps: 1.38 GB resident at 10M for 200,000 failed
# attempts, 7.27 GB without a limit; the failures' texts are cut row by row and sorted, not aggregated per failure).
DUCKDB_BYTES = min(1024 * MB, WORKER_BYTES // 4)
# Below this share DuckDB runs the job's statements on one thread: each thread's share of the documents step's
# statement does not spill, and at 512 MB (the 2,048 MB minimum grant) two threads ran out of DuckDB's memory at 1M
# attempts where one did not (BENCHMARKS.md).
ONE_THREAD_BELOW = 1024 * MB
JEMALLOC_ENV = "DUCKDB_JE_MALLOC_CONF"  # DuckDB's allocator's options (its jemalloc's MALLOC_CONF)
WORKER_CPU_S = int(os.environ.get("RUNLENS_CLUSTERS_WORKER_CPU_S", "7200"))
# The least the job's process is started with when the memory budget (ingest.workers) cannot grant the whole cap
# (at 1M attempts, granted that, the job peaked at 1.48 GB of address space, 1.09 GB resident: BENCHMARKS.md).
WORKER_MIN_BYTES = min(2048 * MB, WORKER_BYTES)


def worker_request(
    store: str, *, benchmark: str, run_id: str | None, model: str | None = None, force: bool = False
) -> dict[str, Any]:
    """The request ``python -m jobs.clusters_worker`` reads on its stdin: compute and store the clusters of
    ``benchmark``'s (or ``run_id``'s) failures in ``store`` under the worker's limits (``memory_bytes``: its cap,
    lowered to what the memory budget grants when it starts, at least ``min_memory_bytes``; DuckDB's shares follow
    the limit granted). ``model`` and ``force``: ``cluster_failures``' (the command line's ``--model``,
    ``--recompute``)."""
    return {
        "store": store,
        "benchmark": benchmark,
        "run_id": run_id,
        **({"model": model} if model else {}),
        "force": force,
        "memory_bytes": WORKER_BYTES,
        "min_memory_bytes": WORKER_MIN_BYTES,
        "job": "The failure clusters job",
        "memory_setting": "RUNLENS_CLUSTERS_WORKER_MB",
        "duckdb_bytes": DUCKDB_BYTES,
        "cpu_s": WORKER_CPU_S,
    }


def error_text(exc: BaseException, memory_bytes: int, duckdb_bytes: int) -> str:
    """The error the page shows; an allocation that failed names the worker's memory limit."""
    return worker_process.error_text(
        exc,
        memory_bytes,
        WORKER_BYTES,
        "RUNLENS_CLUSTERS_WORKER_MB",
        holder="the clusters job's process",
        detail=f", DuckDB {duckdb_bytes / MB:,.0f} MB of it",
    )


def duckdb_settings(duckdb_bytes: int, spill: str) -> dict[str, str]:
    """DuckDB's settings in the job's process: its share of memory, its spill folder, and one thread when the
    share is below ``ONE_THREAD_BELOW``."""
    out = {"memory_limit": f"{max(duckdb_bytes // MB, 1)}MB", "temp_directory": spill}
    if duckdb_bytes < ONE_THREAD_BELOW:
        out["threads"] = "1"
    return out


def return_freed_address_space() -> None:
    """Have DuckDB's allocator (its own jemalloc) unmap the memory it frees instead of keeping its address space
    ("retain", its default): after the documents step at 1M attempts the job's process held about 800 MB of such
    address space (140 MB of it resident), which the cap counts, and a job granted 2,048 MB stopped in its
    embedding step (BENCHMARKS.md). Only in the job's own process, before DuckDB is loaded: its allocator reads
    the setting once."""
    os.environ.setdefault(JEMALLOC_ENV, "retain:false")


@contextlib.contextmanager
def spill_folder() -> Iterator[str]:
    """The job's own folder for DuckDB's spill and its work files, named after its process
    (``runlens-clusters-spill-p<pid>-s<start>-*``, ``ingest.tempdirs``) and deleted when the job ends; the folders
    of jobs killed before they could delete theirs (SIGKILL, out of memory) are removed first."""
    remove_orphans(SPILL_PREFIX)
    with owned_temporary_folder(SPILL_PREFIX) as folder:
        yield folder


def _worker_main() -> int:
    """One JSON request on stdin (``worker_request`` and ``parent_pid``); one JSON object a line on the stdout it was
    given (progress, then ``done`` with the clustering's key, or ``error``); anything else printed goes to stderr."""
    request, say = worker_process.channel()

    return_freed_address_space()
    from jobs.failures import cluster_failures  # numpy, pyarrow and DuckDB mapped before the cap

    # memory_bytes: what the memory budget granted (its cap, or less); DuckDB's share of it as at the full cap
    memory_bytes, cpu_s = int(request["memory_bytes"]), int(request["cpu_s"])
    duckdb_bytes = min(int(request["duckdb_bytes"]), memory_bytes // 4)

    worker_process.limit(
        memory_bytes,
        cpu_s,
        say,
        f"the clusters job stopped at its CPU limit of {cpu_s:,} s (RUNLENS_CLUSTERS_WORKER_CPU_S)",
    )
    worker_process.watch_parent(int(request.get("parent_pid") or 0))
    try:
        with spill_folder() as spill:
            key = cluster_failures(
                request["store"],
                benchmark=request["benchmark"],
                run_id=request.get("run_id"),
                **({"model": request["model"]} if request.get("model") else {}),
                force=bool(request.get("force", False)),
                progress=lambda fraction, message: say(fraction=float(fraction), message=str(message)),
                duckdb_settings=duckdb_settings(duckdb_bytes, spill),
                work_dir=spill,
            )
    except Exception as exc:  # noqa: BLE001 -- reported to the page that waits for the job
        say(error=error_text(exc, memory_bytes, duckdb_bytes))
        return 1
    say(done=key)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main())

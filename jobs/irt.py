"""IRT fits kept through the one writer: fit the current responses (``analytics.irt``), link to the previous fit,
store the three tables (``store.derived.insert_irt_fit``), and return the stored fit.

``python -m jobs.irt`` is the fit's worker process (``worker_request``, ``ui.background.start_process``): the
dashboard's server never imports torch (pyro and py-irt import it), since a module being imported in one of its
threads is visible half-initialised to every other session's thread (scipy looks up ``sys.modules["torch"]``)."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from typing import Any

import duckdb

from analytics.irt import (
    ABILITY_COLS,
    ITEM_COLS,
    IrtError,
    IrtResult,
    IrtSettings,
    ProgressFn,
    StoredFit,
    data_digest,
    estimate,
    fit_key,
    latest_fit_key,
    load_responses,
    read_fit,
    settings_for,
)
from jobs import worker_process
from store import derived, query_rows
from store import writer as store_writer

# What the fit's worker may hold in all (address space: the interpreter, torch's libraries, the responses and the
# model). torch and pyro map about 2 GB of address space in a fit (measured: 2.1 GB peak for a fit of 18 agents x 120
# tasks whose resident peak was 0.48 GB); the responses grow with the attempts (1M attempts: 260,000 responses, 1.25 GB
# of address space with torch imported and the fit's arrays prepared, before the fit; 10M: ten times the responses,
# not measured), so the cap is far wider than the SQL and upload workers'.
IRT_WORKER_BYTES = int(os.environ.get("RUNLENS_IRT_WORKER_MB", "8192")) * 1024 * 1024
IRT_WORKER_CPU_S = int(os.environ.get("RUNLENS_IRT_WORKER_CPU_S", "7200"))
# The least the fit's process is started with when the memory budget (ingest.workers) cannot grant the whole cap:
# at 1M attempts it peaked at 1.22 GB of address space (0.65 GB resident), at 10M at 3.0 GB (BENCHMARKS.md).
IRT_WORKER_MIN_BYTES = min(1536 * 1024 * 1024, IRT_WORKER_BYTES)


def store_fit(
    con: duckdb.DuckDBPyConnection, key: str, benchmark: str, settings: IrtSettings, result: IrtResult
) -> None:
    """Write one fit (three tables) in a single transaction."""
    abil = result.abilities.reindex(columns=ABILITY_COLS)
    abil.insert(0, "fit_key", key)
    items = result.items.reindex(columns=ITEM_COLS)
    items.insert(0, "fit_key", key)
    fit = [
        key,
        benchmark,
        settings.model,
        json.dumps(settings.key_dict()),
        dt.datetime.now(dt.UTC).replace(tzinfo=None),
        result.info["seconds"],
        result.info["scale_shift"],
        json.dumps(result.info, default=str),
    ]
    derived.insert_irt_fit(con, fit, abil, items)


def fit_and_store(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    model: str = "1pl",
    progress: ProgressFn | None = None,
    settings: IrtSettings | None = None,
) -> StoredFit:
    """Return the cached fit for the current data, or fit, link to the previous fit, store, and return it.

    ``con`` must be a writer connection (store.writer).
    """
    settings = settings or settings_for(model)
    obs = load_responses(con, benchmark=benchmark)
    if obs.empty:
        raise IrtError(f"benchmark {benchmark!r} has no attempts to fit")
    key = fit_key(data_digest(con, benchmark=benchmark), settings, benchmark=benchmark)
    if query_rows(con, "SELECT count(*) FROM irt_fits WHERE fit_key = ?", [key])[0][0]:
        return read_fit(con, key)
    prev_key = latest_fit_key(con, benchmark, settings.model, exclude=key)
    prev = read_fit(con, prev_key) if prev_key else None
    result = estimate(
        obs,
        settings,
        progress=progress,
        previous_items=prev.items if prev else None,
        previous_abilities=prev.abilities if prev else None,
    )
    store_fit(con, key, benchmark, settings, result)
    return read_fit(con, key)


def worker_request(store: str, *, benchmark: str, model: str) -> dict[str, Any]:
    """The request ``python -m jobs.irt`` reads on its stdin: fit (or find stored) ``model`` of ``benchmark`` in
    ``store`` under the worker's memory and CPU limits (``memory_bytes``: its cap, lowered to what the memory budget
    grants when it starts, at least ``min_memory_bytes``; ``jobs.worker_process.reserve``)."""
    return {
        "store": store,
        "benchmark": benchmark,
        "model": model,
        "memory_bytes": IRT_WORKER_BYTES,
        "min_memory_bytes": IRT_WORKER_MIN_BYTES,
        "job": "The IRT fit",
        "memory_setting": "RUNLENS_IRT_WORKER_MB",
        "cpu_s": IRT_WORKER_CPU_S,
    }


def fit_in_process(store: str, *, benchmark: str, model: str, progress: ProgressFn | None = None) -> str:
    """Fit (or find stored) ``model`` of ``benchmark`` as the Progress page does: in ``python -m jobs.irt`` under the
    worker's caps and the memory budget's grant (``jobs.worker_process.run``); return the fit's key. The command
    line's fit, so that a fit at any size is bounded like the page's.

    Raises:
        jobs.worker_process.JobFailed: the fit failed (its message, naming the cap it reached).
    """
    return str(
        worker_process.run("jobs.irt", worker_request(store, benchmark=benchmark, model=model), progress=progress)
    )


def limit_worker(memory_bytes: int, cpu_s: int, say: Any) -> None:
    """Cap this process's address space at ``memory_bytes`` and its CPU at ``cpu_s`` seconds; at the CPU limit
    ``say(error=...)`` tells the page why the fit stopped, and the process ends (status 4)."""
    worker_process.limit(
        memory_bytes,
        cpu_s,
        say,
        f"the fit stopped at its CPU limit of {cpu_s:,} s (RUNLENS_IRT_WORKER_CPU_S) before it finished",
    )


def duckdb_bytes(memory_bytes: int) -> int:
    """DuckDB's memory limit in a fit's process of ``memory_bytes``: a quarter of it, at least 256 MB."""
    return max(memory_bytes // 4, 256 * 2**20)


def error_text(exc: BaseException, memory_bytes: int) -> str:
    """The error the page shows; an allocation that failed names the worker's memory limit."""
    return worker_process.error_text(
        exc, memory_bytes, IRT_WORKER_BYTES, "RUNLENS_IRT_WORKER_MB", holder="the fit's process"
    )


def _worker_main() -> int:
    """The fit's worker: one JSON request on stdin (``worker_request`` and ``parent_pid``); one JSON object a line
    on the stdout it was given (progress, then ``done`` with the fit's key or ``error``), everything else printed
    goes to stderr."""
    request, say = worker_process.channel()

    limit_worker(int(request["memory_bytes"]), int(request["cpu_s"]), say)
    worker_process.watch_parent(int(request.get("parent_pid") or 0))

    try:
        with store_writer(request["store"]) as con:
            # DuckDB's share of the limit granted (its default, 80 % of the machine, is past the address-space cap: it
            # would fail an allocation there instead of spilling); the responses' read at 10M is far below it
            con.execute("SET memory_limit = ?", [f"{duckdb_bytes(int(request['memory_bytes'])) // 2**20}MB"])
            fit = fit_and_store(
                con,
                benchmark=request["benchmark"],
                model=request["model"],
                progress=lambda fraction, message: say(fraction=float(fraction), message=str(message)),
            )
    except Exception as exc:  # noqa: BLE001 -- reported to the page that waits for the job, as a thread's job was
        say(error=error_text(exc, int(request["memory_bytes"])))
        return 1
    say(done=fit.fit_key)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main())

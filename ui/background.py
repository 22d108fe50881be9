"""Work a page starts and any later rerun picks up: one background job per job key (the failure clusters a page
computes, the IRT fit a Progress page starts on its first visit), its progress readable from every session of this
server.

A job runs in a daemon thread of the server (``start``) or in a process of its own (``start_process``: the IRT fit,
whose torch must never be imported by the server: a module being imported in one thread is visible half-initialised
to every other thread, and scipy looks up ``sys.modules["torch"]`` on its array calls; the failure clusters, whose
DuckDB memory limit would otherwise cap every page of the server). A job is the project's own
computation (a fit through the one writer), never user-supplied code: the limits on user-controlled work
(docs/security.md) do not apply; a job's thread is a daemon and a job's process is stopped with the server, so
neither keeps a stopping server alive.
"""

from __future__ import annotations

import atexit
import importlib
import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Job:
    """A background job's state, as pages read it."""

    key: str
    fraction: float = 0.0
    message: str = "Starting..."
    error: str | None = None
    is_done: bool = False
    thread: threading.Thread | None = field(default=None, repr=False)
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)


_JOBS: dict[str, Job] = {}
_GUARD = threading.Lock()


def start(key: str, fn: Callable[..., Any], /, *args: Any, import_first: tuple[str, ...] = (), **kwargs: Any) -> Job:
    """The job under ``key``: the running or finished one, else a new one running ``fn(*args, progress=..., **kwargs)``
    in a daemon thread (``progress(fraction, message)`` updates what pages show).

    ``import_first``: modules the job imports that are imported here, before its thread starts. A module imported in
    a job's thread is visible half-initialised to every other thread until its import ends, and scipy looks up
    ``sys.modules["torch"]`` on its array calls (scipy.stats' own import makes some): a torch import in progress in a
    job made another session's page fail with "partially initialized module 'torch' has no attribute 'Tensor'"."""
    with _GUARD:
        job = _JOBS.get(key)
        if job is not None:
            return job
        job = _JOBS[key] = Job(key)
    for name in import_first:
        importlib.import_module(name)

    def report(fraction: float, message: str) -> None:
        job.fraction, job.message = min(max(float(fraction), 0.0), 1.0), message

    def run() -> None:
        try:
            fn(*args, progress=report, **kwargs)
        except Exception as exc:  # noqa: BLE001 -- shown on the page that waits for the job
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.is_done = True

    job.thread = threading.Thread(target=run, daemon=True, name=f"runlens-job:{key}")
    job.thread.start()
    return job


def start_process(key: str, module: str, request: dict[str, Any]) -> Job:
    """The job under ``key``: the running or finished one, else a new one running ``python -m module`` in a process
    of its own, ``request`` as JSON on its stdin (``parent_pid`` added: the process ends itself when the server is
    gone).

    The process starts with the limit the server's memory budget grants it (``jobs.worker_process.reserve``: its own
    cap or what is left, at least its minimum) and holds that share until it has ended, however it ends; a job the
    budget cannot hold yet waits in the job's thread (its message says why), and one it cannot hold at all is a
    job with that error.

    The process writes one JSON object a line on its stdout: ``{"fraction": f, "message": m}`` for progress,
    ``{"error": text}`` when it failed, ``{"done": value}`` at the end; a thread of the server reads them into the
    job. A process that ends without ``done`` or ``error`` (killed, or over its memory limit) leaves the last line
    of its stderr as the job's error. Live job processes are killed when the server exits (``atexit``)."""
    with _GUARD:
        job = _JOBS.get(key)
        if job is not None:
            return job
        job = _JOBS[key] = Job(key)
    from ingest import workers
    from jobs import worker_process

    try:
        held = worker_process.reserve(request, wait=False)  # most often granted at once: the process starts now
    except workers.JobRefused as exc:
        job.error, job.is_done = str(exc), True
        return job

    def begin(granted: dict[str, Any]) -> worker_process.JobProcess:
        started = worker_process.JobProcess(module, granted)
        job.process = started.proc
        _PROCESSES.add(started.proc)
        return started

    worker = None
    if held is not None:
        try:
            worker = begin(held[1])
        except OSError as exc:
            worker_process.release(held[0])
            job.error, job.is_done = f"{type(exc).__name__}: {exc}", True
            return job

    def waiting(message: str) -> None:
        job.message = message

    def progress(fraction: float, message: str) -> None:
        job.fraction, job.message = fraction, message

    def read() -> None:
        nonlocal held, worker
        try:
            if held is None:  # wait for the budget's share here, not in the page
                held = worker_process.reserve(request, waiting=waiting)
                assert held is not None
                job.message = "Starting..."
                worker = begin(held[1])
            assert worker is not None

            is_done, value = worker.follow(progress)
            if is_done:
                job.fraction = 1.0
            else:
                job.error = str(value)
        except (workers.JobRefused, OSError) as exc:
            job.error = str(exc) if isinstance(exc, workers.JobRefused) else f"{type(exc).__name__}: {exc}"
        finally:
            if worker is not None:
                worker.close()  # the share is given back only once the process is gone
                _PROCESSES.discard(worker.proc)
            if held is not None:
                worker_process.release(held[0])
            job.is_done = True

    job.thread = threading.Thread(target=read, daemon=True, name=f"runlens-job:{key}")
    job.thread.start()
    return job


_PROCESSES: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _stop_processes() -> None:
    """Kill the job processes still running when the server exits (one killed harder than this ends itself: it
    watches the server's pid)."""
    for proc in list(_PROCESSES):
        if proc.poll() is None:
            proc.kill()


def get(key: str) -> Job | None:
    """The job under ``key``, if one was started."""
    with _GUARD:
        return _JOBS.get(key)


def forget(key: str) -> None:
    """Drop a finished job, so the next ``start`` under its key runs it again (a retry after a failure)."""
    with _GUARD:
        job = _JOBS.get(key)
        if job is not None and job.is_done:
            del _JOBS[key]


def forget_done(prefix: str) -> None:
    """Drop every finished job whose key starts with ``prefix`` (jobs started one per action, such as the search
    index's refresh after each upload: the finished ones are not kept for ever)."""
    with _GUARD:
        for key in [k for k, job in _JOBS.items() if k.startswith(prefix) and job.is_done]:
            del _JOBS[key]


def is_enabled() -> bool:
    """Pages start work by themselves unless ``RUNLENS_AUTO_FIT=0`` (the tests' default: explicit fits only)."""
    return os.environ.get("RUNLENS_AUTO_FIT", "1").lower() not in ("0", "false", "no", "off")

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
import json
import os
import subprocess
import sys
import tempfile
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

    The process writes one JSON object a line on its stdout: ``{"fraction": f, "message": m}`` for progress,
    ``{"error": text}`` when it failed, ``{"done": value}`` at the end; a thread of the server reads them into the
    job. A process that ends without ``done`` or ``error`` (killed, or over its memory limit) leaves the last line
    of its stderr as the job's error. Live job processes are killed when the server exits (``atexit``)."""
    with _GUARD:
        job = _JOBS.get(key)
        if job is not None:
            return job
        job = _JOBS[key] = Job(key)
    from ingest import workers  # the project on the worker's path, the allocators that keep its limit honest

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    err = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by the reader thread when the process ends
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=root,
            env=workers.worker_env(root),
        )
    except OSError as exc:
        err.close()
        job.error, job.is_done = f"{type(exc).__name__}: {exc}", True
        return job
    job.process = proc
    _PROCESSES.add(proc)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({**request, "parent_pid": os.getpid()}).encode())
    proc.stdin.close()

    def read() -> None:
        assert proc.stdout is not None
        finished = False
        try:
            for line in proc.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # not the job's own line
                if not isinstance(message, dict):
                    continue
                if "error" in message:
                    job.error, finished = str(message["error"]), True
                elif "done" in message:
                    job.fraction, finished = 1.0, True
                elif "fraction" in message:
                    job.fraction = min(max(float(message["fraction"]), 0.0), 1.0)
                    job.message = str(message.get("message", ""))
            code = proc.wait()
            if not finished:
                err.seek(0)
                tail = err.read().decode(errors="replace").strip().splitlines()[-1:]
                job.error = f"the job's process ended with status {code}" + (f": {tail[0][:300]}" if tail else "")
        finally:
            err.close()
            _PROCESSES.discard(proc)
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


def is_enabled() -> bool:
    """Pages start work by themselves unless ``RUNLENS_AUTO_FIT=0`` (the tests' default: explicit fits only)."""
    return os.environ.get("RUNLENS_AUTO_FIT", "1").lower() not in ("0", "false", "no", "off")

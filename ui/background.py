"""Work a page starts and any later rerun picks up: one background thread per job key (the IRT fit a Progress
page starts on its first visit), its progress readable from every session of this server.

A job is the project's own computation (a fit through the one writer), never user-supplied code: the limits on
user-controlled work (docs/security.md) do not apply, and a job's thread is a daemon, so it never keeps a stopping
server alive.
"""

from __future__ import annotations

import importlib
import os
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

"""What a job's own process (``ui.background.start_process``: ``python -m jobs.irt``, ``python -m
jobs.clusters_worker``) does before its work: read its request and open its channel to the page, cap its memory and
CPU, say why when it stops at the CPU cap, end when the server that started it is gone, and tell a failed allocation
from other errors."""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# CPU seconds between the job's own stop at its CPU limit (SIGXCPU, which it reports) and the kernel's kill (a
# handler runs between Python steps, so a long call into numpy or DuckDB delays it)
CPU_GRACE_S = 60
MEMORY_WORDS = ("memoryerror", "out of memory", "allocate")  # in an error's text: an allocation refused at the cap


def channel() -> tuple[dict[str, Any], Callable[..., None]]:
    """The job's request (one JSON object on stdin: its ``worker_request`` and ``parent_pid``) and ``say(**message)``,
    which writes one JSON object a line on the stdout this process was given (progress, then ``done`` or ``error``:
    what ``ui.background`` reads); anything else printed goes to stderr (DuckDB's progress bar is not the channel)."""
    request = json.loads(sys.stdin.buffer.read())
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)

    def say(**message: Any) -> None:
        out.write(json.dumps(message) + "\n")

    return request, say


def is_memory_error(exc: BaseException, text: str) -> bool:
    """Whether ``exc`` (``text``: its message) is an allocation refused, by Python, numpy, torch or DuckDB."""
    return isinstance(exc, MemoryError) or any(word in text.lower() for word in MEMORY_WORDS)


def limit(memory_bytes: int, cpu_s: int, say: Callable[..., Any], at_cpu_limit: str) -> None:
    """Cap this process's address space at ``memory_bytes`` and its CPU at ``cpu_s`` seconds; at the CPU limit
    ``say(error=at_cpu_limit)`` tells the page why the job stopped, and the process ends (status 4)."""
    from ingest import workers

    def stop(signum: int, frame: object) -> None:
        say(error=at_cpu_limit)
        os._exit(4)

    signal.signal(signal.SIGXCPU, stop)
    workers.limit_this_process(memory_bytes, cpu_s + CPU_GRACE_S)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + CPU_GRACE_S))


def watch_parent(parent_pid: int) -> None:
    """End this process when its parent (the server) is gone: its pid is no longer this process's parent."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(3)

    if parent_pid:
        threading.Thread(target=watch, daemon=True, name="runlens-parent-watch").start()

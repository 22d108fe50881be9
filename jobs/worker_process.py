"""What a job's own process (``ui.background.start_process``: ``python -m jobs.irt``, ``python -m
jobs.clusters_worker``) does before its work: cap its memory and CPU, say why when it stops at the CPU cap, and end
when the server that started it is gone."""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

# CPU seconds between the job's own stop at its CPU limit (SIGXCPU, which it reports) and the kernel's kill (a
# handler runs between Python steps, so a long call into numpy or DuckDB delays it)
CPU_GRACE_S = 60


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

"""A job's own process (``python -m jobs.irt``, ``python -m jobs.clusters_worker``): how it is started and what it
does before its work.

Starting it (``ui.background.start_process`` in the server, ``run`` on the command line): the memory budget of the
process tree (``ingest.workers.reserve_job``) grants the address-space limit it starts with (its own cap, or what is
left, at least its minimum) and holds that much until the process has ended, however it ends (``reserve``,
``release``); ``spawn`` starts it with its request on stdin and ``follow`` reads its channel.

In the process: read its request and open its channel to the page, cap its memory and CPU, say why when it stops at
the CPU cap, end when the server that started it is gone, and tell a failed allocation from other errors."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from store import RunlensError

# CPU seconds between the job's own stop at its CPU limit (SIGXCPU, which it reports) and the kernel's kill (a
# handler runs between Python steps, so a long call into numpy or DuckDB delays it)
CPU_GRACE_S = 60
MEMORY_WORDS = ("memoryerror", "out of memory", "allocate")  # in an error's text: an allocation refused at the cap
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class JobFailed(RunlensError):
    """A job's process ended with an error (its own ``error`` message, or its exit status and last stderr line)."""


def reserve(
    request: dict[str, Any], *, wait: bool = True, waiting: Callable[[str], None] | None = None
) -> tuple[int, dict[str, Any]] | None:
    """Reserve the memory budget's share for the job ``request`` describes (its ``worker_request``: ``memory_bytes``
    its cap, ``min_memory_bytes``, ``job`` its name, ``memory_setting`` its cap's variable); return the ticket
    (``release`` it once the process has ended) and the request with ``memory_bytes`` set to the limit granted.
    ``wait``: False returns None when the budget cannot grant it now but could later.

    Raises:
        ingest.workers.JobRefused: the budget cannot grant it (at once, or within ``RUNLENS_JOB_WAIT_S``).
    """
    from ingest import workers

    want = int(request["memory_bytes"])
    held = workers.reserve_job(
        str(request.get("job", "The job")),
        want_bytes=want,
        min_bytes=int(request.get("min_memory_bytes", want)),
        setting=str(request.get("memory_setting", "its memory cap")),
        wait_s=workers.JOB_WAIT_S if wait else None,
        waiting=waiting,
    )
    if held is None:
        return None
    ticket, granted = held
    return ticket, {**request, "memory_bytes": granted}


def release(ticket: int) -> None:
    """Give the job's reservation back (its process has ended)."""
    from ingest import workers

    workers.release_job(ticket)


def spawn(
    module: str, request: dict[str, Any], *, stderr: IO[bytes] | int | None, detached: bool = False
) -> subprocess.Popen[bytes]:
    """Start ``python -m module`` with ``request`` (``parent_pid`` added) on its stdin, its stdout a pipe (its channel,
    ``messages``), in the environment of the server's workers (the allocators that keep its limit honest).
    ``detached``: a job that outlives this process (a session of its own, its channel and ``stderr`` discarded, no
    ``parent_pid`` to watch), such as the search index's refresh after ``python -m ingest``."""
    from ingest import workers

    proc = subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL if detached else subprocess.PIPE,
        stderr=subprocess.DEVNULL if detached else stderr,
        cwd=ROOT,
        env=workers.worker_env(ROOT),
        start_new_session=detached,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({**request, "parent_pid": 0 if detached else os.getpid()}).encode())
    proc.stdin.close()
    return proc


def messages(proc: subprocess.Popen[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON objects the job's process writes on its channel, until it closes it."""
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            continue  # not the job's own line
        if isinstance(message, dict):
            yield message


def follow(
    proc: subprocess.Popen[bytes], stderr: IO[bytes], progress: Callable[[float, str], None]
) -> tuple[bool, Any]:
    """Read the job's channel to its end, as both the server and the command line do: each progress line goes to
    ``progress(fraction, message)`` (the fraction held within 0-1); the first ``done`` gives ``(True, value)`` and
    the first ``error`` ``(False, text)``. A process that ends without either (killed, or over its memory limit)
    gives ``(False, text)`` naming its exit status and the last line of ``stderr`` (the file it was started with).
    """
    for message in messages(proc):
        if "error" in message:
            return False, str(message["error"])
        if "done" in message:
            return True, message["done"]
        if "fraction" in message:
            progress(min(max(float(message["fraction"]), 0.0), 1.0), str(message.get("message", "")))
    code = proc.wait()
    stderr.seek(0)
    tail = stderr.read().decode(errors="replace").strip().splitlines()[-1:]
    return False, f"the job's process ended with status {code}" + (f": {tail[0][:300]}" if tail else "")


class JobProcess:
    """A job's process as its starter holds it: ``spawn``ed with its stderr in a temporary file (the last line of
    which names why a process that ended without a word failed). ``running`` while it works, ``follow`` to read its
    channel to the end, ``close`` once it has ended (waits for it, then drops the file); used by ``run`` (the command
    line), ``ui.background.start_process`` (the pages) and ``jobs.search_index.IndexKeeper`` (the OTLP receiver)."""

    def __init__(self, module: str, request: dict[str, Any]) -> None:
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by ``close``
        try:
            self.proc = spawn(module, request, stderr=self.err)
        except BaseException:
            self.err.close()
            raise

    @property
    def running(self) -> bool:
        """Whether the process has not ended yet."""
        return self.proc.poll() is None

    def follow(self, progress: Callable[[float, str], None] | None = None) -> tuple[bool, Any]:
        """The job's outcome, read from its channel (``follow``): ``(True, done)`` or ``(False, why)``."""
        return follow(self.proc, self.err, progress or (lambda _fraction, _message: None))

    def close(self, *, kill_after_s: float | None = None) -> None:
        """Wait for the process to end (killed when it has not ``kill_after_s`` seconds after it said ``done``: it only
        exits then) and drop its stderr file."""
        try:
            self.proc.wait(timeout=kill_after_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self.err.close()


def run(module: str, request: dict[str, Any], *, progress: Callable[[float, str], None] | None = None) -> Any:
    """Run the job ``python -m module`` to its end as the server does (its own process, its caps, its reservation
    of the budget when one is in force): the command line's way to run a job, so that a run at any size is bounded
    like the page's. Return its ``done`` value.

    Raises:
        JobFailed: the job reported an error, or its process ended without ``done``.
        ingest.workers.JobRefused: the memory budget could not grant it.
    """
    held = reserve(request)
    assert held is not None
    ticket, granted = held
    try:
        job = JobProcess(module, granted)
        try:
            is_done, value = job.follow(progress)
            if not is_done:
                raise JobFailed(value)
            return value
        finally:
            job.close(kill_after_s=60)  # the reservation is held until the process has ended
    finally:
        release(ticket)


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


def cap_setting(memory_bytes: int, cap_bytes: int, setting: str) -> str:
    """The setting that raises a job's memory limit of ``memory_bytes``: its own cap's ``setting`` when it runs with
    its whole cap ``cap_bytes``, else the server's budget, which granted it less."""
    if memory_bytes >= cap_bytes:
        return setting
    return f"RUNLENS_MEMORY_BUDGET_MB: the server's memory budget granted it less than its cap, {setting}"


def error_text(
    exc: BaseException, memory_bytes: int, cap_bytes: int, setting: str, *, holder: str, detail: str = ""
) -> str:
    """The error a job reports (``say(error=...)``): ``Name: message``, and when it is an allocation refused, the
    limit it ran into: ``holder`` (who may hold ``memory_bytes`` of address space), ``detail`` (a share of it) and
    the setting that raises it (``cap_setting``)."""
    text = f"{type(exc).__name__}: {exc}"
    if is_memory_error(exc, text):
        text += (
            f" ({holder} may hold {memory_bytes / 2**20:,.0f} MB of address space{detail}: "
            f"{cap_setting(memory_bytes, cap_bytes, setting)})"
        )
    return text


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

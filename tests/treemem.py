"""Peak resident memory of a process tree (a server and the workers it starts), sampled from /proc.

Used by the hardening tests and ``bench/bench_hardening.py``: ``ru_maxrss`` gives one process's peak, or the
largest child's, never the sum of processes alive at once, which is what a memory budget for the dashboard's
process tree is about. Sampling every 10 ms can miss a spike shorter than that; what it reports is a lower
bound of the true peak, close for anything that lasts. A fork of a process of the tree with its parent's command
line (a child between ``fork`` and ``exec``, a forked worker) counts only the pages it holds alone: the pages it
shares are its parent's, counted once.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (through /proc/<pid>/task/<tid>/children)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue  # ended meanwhile
    return found


def rss_bytes(pid: int) -> int:
    """Resident bytes of one process (0 once it has ended)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def private_bytes(pid: int) -> int:
    """Bytes only ``pid`` maps (its private pages, resident; 0 once it has ended): what a forked child costs beyond
    the pages it still shares with its parent. A child between ``fork`` and ``exec`` (``subprocess`` starting a
    worker) has its parent's whole resident set in ``statm`` for a moment; sampled then, a tree of a 960 MB test
    process "grew" by 957 MB (a loaded machine widens that moment)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    fields = dict(line.split(":", 1) for line in text.splitlines()[1:] if ":" in line)
    try:
        return sum(int(fields[k].split()[0]) for k in ("Private_Clean", "Private_Dirty")) * 1024
    except (KeyError, ValueError, IndexError):
        return rss_bytes(pid)


def process_state(pid: int) -> str:
    """A process's state letter from /proc (``Z``: ended, not yet reaped; empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def parent_pid(pid: int) -> int:
    """A process's parent (1 once it is gone: the walk up from it ends)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 1


def tree_rss_bytes(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants now."""
    return sum(rss_bytes(p) for p in descendants(pid))


def listening_pid(port: int) -> int:
    """The pid of the process listening on TCP ``port`` (a server started by a script that forked it)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                    return int(proc.name)
            except OSError:
                continue  # ended meanwhile, or not ours to read
    raise LookupError(f"no process listens on port {port}")


class TreePeak:
    """Samples a process tree's resident memory in a thread; ``peak_bytes`` is the largest sum seen.

    Use as a context manager around the work: ``with TreePeak(os.getpid()) as peak: ...; peak.peak_mb``.
    """

    def __init__(self, pid: int, *, interval_s: float = 0.01) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.at_peak: dict[int, tuple[int, str]] = {}  # the processes of the largest sample: resident bytes, command
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="tree-peak")

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval_s)

    def _sample(self) -> None:
        tree = descendants(self.pid)
        sizes = {p: rss_bytes(p) for p in tree}
        inside = set(tree)
        for p in tree:  # a fork of a process of the tree shares its pages: only what it holds alone counts
            parent = parent_pid(p)
            if p != self.pid and parent in inside and command(p) == command(parent):
                sizes[p] = private_bytes(p)
        if sum(sizes.values()) > self.peak_bytes:
            self.peak_bytes = sum(sizes.values())
            self.at_peak = {p: (n, command(p)) for p, n in sizes.items()}

    def __enter__(self) -> TreePeak:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 1024**2

    def __repr__(self) -> str:
        """The peak and what held it, for a failed assertion's message."""
        held = ", ".join(f"{p} {n / 1024**2:.0f} MB {cmd!r}" for p, (n, cmd) in self.at_peak.items())
        return f"TreePeak({self.peak_mb:.0f} MB: {held})"


def command(pid: int) -> str:
    """A process's command line, shortened (empty once it has ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return ""


def measured_in_fork(action: Callable[[], Any]) -> tuple[Any, float, str]:
    """Run ``action`` in a forked child of this process and measure that child's tree: ``(its result, how many MB
    the tree grew while it ran, the peak's processes as text)``.

    A long-lived test process (a pytest-xdist worker) runs what earlier tests left in it: threads of their
    libraries, their caches. Measured in this process, the tree "grew" by 0.3-1.3 GB during a request whose worker
    was held within 1 GB. A forked child has only the thread that forked it, and its resident memory starts at the
    pages it shares with this process, so what its tree gains is the action's: the server's side of the request
    and the workers it starts. ``action``'s result must pickle.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: act, measure, send, and leave without the test process's exit handlers
        try:
            os.close(read_fd)
            with TreePeak(os.getpid()) as peak:
                before = peak.peak_bytes
                result = action()
            payload: tuple[str, Any, float, str] = ("ok", result, (peak.peak_bytes - before) / 1024**2, repr(peak))
        except BaseException as exc:  # noqa: BLE001 -- the child's boundary: reported to the test
            payload = ("error", f"{type(exc).__name__}: {exc}", 0.0, "")
        try:
            with os.fdopen(write_fd, "wb") as out:
                pickle.dump(payload, out)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    kind, value, grown_mb, held = pickle.loads(data)  # noqa: S301 -- our own child, our own pipe
    if kind != "ok":
        raise AssertionError(f"the measured action failed in its process: {value}")
    return value, grown_mb, held

"""A command's wall time and the CPU seconds of its whole process tree, Chromium's renderers included.

``python bench/tree_cpu.py CMD ARGS...`` (e.g. ``python bench/tree_cpu.py .venv/bin/python -m pytest -q
tests/test_browser_tables.py``): runs the command and reads every process under it from /proc every 0.2 s, keeping
each one's last user + system seconds; at the end prints the wall, the tree's CPU seconds, the load average's range
while it ran, and the CPU by process name. ``/usr/bin/time`` and ``getrusage(RUSAGE_CHILDREN)`` miss Chromium's
renderers (their zygote is not waited for by the process that started the browser): a browser test's CPU is mostly
theirs. A process that lives less than 0.2 s is not seen; the command's exit status is returned. Linux only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import defaultdict

TICK = os.sysconf("SC_CLK_TCK")
EVERY_S = 0.2


def processes() -> dict[int, tuple[int, str, float, str]]:
    """Every process now: pid -> (parent pid, name, user + system seconds, start time in ticks)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                text = fh.read()
        except OSError:  # ended meanwhile
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        rest = text[text.rindex(")") + 2 :].split()
        table[int(entry)] = (int(rest[1]), name, (int(rest[11]) + int(rest[12])) / TICK, rest[19])
    return table


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    start = time.monotonic()
    proc = subprocess.Popen(argv)
    seen: dict[tuple[int, str], tuple[str, float]] = {}  # (pid, start time): a reused pid is another process
    loads = [os.getloadavg()[0]]
    while proc.poll() is None:
        table = processes()
        children: dict[int, list[int]] = defaultdict(list)
        for pid, (ppid, *_) in table.items():
            children[ppid].append(pid)
        todo = [proc.pid]
        while todo:
            pid = todo.pop()
            if pid in table:
                _, name, cpu, started = table[pid]
                seen[(pid, started)] = (name, cpu)
            todo += children.get(pid, [])
        time.sleep(EVERY_S)
        loads.append(os.getloadavg()[0])
    wall = time.monotonic() - start
    by_name: dict[str, float] = defaultdict(float)
    for name, cpu in seen.values():
        by_name[name] += cpu
    total = sum(by_name.values())
    print(
        f"tree_cpu: wall {wall:.1f} s, CPU {total:.1f} s, load {min(loads):.1f}-{max(loads):.1f}, exit {proc.returncode}"
    )
    for name, cpu in sorted(by_name.items(), key=lambda kv: -kv[1])[:8]:
        print(f"tree_cpu:   {name:20s} {cpu:7.1f}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

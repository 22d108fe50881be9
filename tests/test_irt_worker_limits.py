"""The IRT fit's worker (``python -m jobs.irt``) says why it stopped when it reaches its CPU or memory limit: the
Progress page shows that text, not a bare exit status."""

from __future__ import annotations

import json
import subprocess
import sys

from jobs.irt import error_text
from tests.conftest import ROOT

BURN = """
import json, sys
from jobs.irt import limit_worker
limit_worker(8 << 30, 1, lambda **m: print(json.dumps(m), flush=True))
while True:
    pass
"""


def test_the_worker_reports_its_cpu_limit_and_ends() -> None:
    done = subprocess.run([sys.executable, "-c", BURN], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stderr[-2000:]
    [line] = done.stdout.splitlines()
    assert "CPU limit of 1 s (RUNLENS_IRT_WORKER_CPU_S)" in json.loads(line)["error"]


def test_a_failed_allocation_names_the_memory_limit() -> None:
    assert "RUNLENS_IRT_WORKER_MB" in error_text(MemoryError(), 8 << 30)
    assert "8,192 MB" in error_text(RuntimeError("DefaultCPUAllocator: can't allocate memory"), 8 << 30)
    granted = error_text(MemoryError(), 2 << 30)  # the server's budget started it below its cap
    assert "2,048 MB" in granted and "RUNLENS_MEMORY_BUDGET_MB: the server's memory budget granted it less" in granted
    assert (
        error_text(ValueError("benchmark 'x' has no attempts"), 8 << 30) == "ValueError: benchmark 'x' has no attempts"
    )

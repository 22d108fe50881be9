"""A native log of one run on a small binary benchmark, for the tests of which runs the pages compare
(tests/test_retry_superseded.py, tests/test_incomplete_runs.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_run_log(path: Path, run: dict[str, Any], *, n_listed: int, n_held: int, every: int) -> Path:
    """Write ``path``: the benchmark ``run["benchmark"]`` (binary scoring) with tasks T00.. (``n_listed`` of them),
    the run record ``run`` (its fields as given), and one attempt on each of its first ``n_held`` tasks, passed when
    the task's index is a multiple of ``every``, costing 0.01-0.03 USD."""
    benchmark = run["benchmark"]
    records: list[dict[str, Any]] = [{"record": "benchmark", "benchmark": benchmark, "scoring": "binary"}]
    records += [{"record": "task", "benchmark": benchmark, "task_id": f"T{i:02d}"} for i in range(n_listed)]
    records.append({"record": "run", **run})
    records += [
        {
            "record": "attempt",
            "run_id": run["run_id"],
            "task_id": f"T{i:02d}",
            "sample": 0,
            "score": int(i % every == 0),
            "cost_usd": 0.01 * (1 + i % 3),
        }
        for i in range(n_held)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path

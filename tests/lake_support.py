"""Team-store (DuckLake) test support: one throwaway PostgreSQL per test session, a new lake per test, and
small CI-like uploads (each a new run of one shared benchmark)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import count
from pathlib import Path

from scripts.servers import Postgres
from tests.conftest import ROOT

_LAKES = count()


def new_lake(pg: Postgres, data_path: Path) -> tuple[str, dict[str, str]]:
    """A new, empty lake (its own catalog database) with its data under ``data_path``: (location, environment)."""
    name = f"lake_{os.getpid()}_{next(_LAKES)}"
    pg.create_database(name)
    env = {"RUNLENS_DB": pg.lake(name), "RUNLENS_LAKE_DATA_PATH": str(data_path)}
    return pg.lake(name), env


def make_upload(folder: Path, i: int, *, n_tasks: int = 20, samples: int = 2, agent: str | None = None) -> Path:
    """A native log of one new run (``run-<i>``) of benchmark ``team-bench``: ``n_tasks`` x ``samples`` attempts."""
    lines = [
        {"record": "benchmark", "benchmark": "team-bench", "scoring": "binary"},
        *(
            {"record": "task", "benchmark": "team-bench", "task_id": f"T{t:03d}", "query": f"question {t}"}
            for t in range(n_tasks)
        ),
        {
            "record": "run",
            "run_id": f"run-{i}",
            "benchmark": "team-bench",
            "agent": agent or f"agent-{i % 5}",
            "agent_version": str(i),
            "eval_date": "2026-11-01",
        },
        *(
            {
                "record": "attempt",
                "run_id": f"run-{i}",
                "task_id": f"T{t:03d}",
                "sample": s,
                "score": (t * 7 + i + s) % 3 == 0,
                "steps": [{"kind": "tool_call", "tool": "search", "args": {"q": t}}, {"kind": "final", "content": "x"}],
            }
            for t in range(n_tasks)
            for s in range(samples)
        ),
    ]
    path = folder / f"upload-{i}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def run_cli(module: str, *args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m <module> args`` in the project, with ``env`` added to the environment."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )

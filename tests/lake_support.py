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


def spawn_worker(args: list[str], env: dict[str, str], *, drop: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """``python -m tests.lake_worker ARGS`` with ``env`` over this process's environment (less the names ``drop``)."""
    base = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.lake_worker", *args],
        cwd=ROOT,
        env={**base, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def writers_and_readers(
    plans: list[list[str]], env: dict[str, str], stop: Path, *, drop: tuple[str, ...] = ()
) -> tuple[dict[str, list[str]], list[dict], dict[str, list[tuple[float, float]]]]:
    """Two reader processes, then one writer process per plan (its files uploaded one by one); when the writers
    have ended, ``stop`` tells the readers to end. Returns each file's outcomes, each reader's report and each
    file's uploads as (began, ended) times (the writer lock's wait included). Every process is stopped whatever
    fails (a reader reads until told to stop)."""
    readers = [spawn_worker(["read", str(stop)], env, drop=drop) for _ in range(2)]
    writers = [spawn_worker(["write", *plan], env, drop=drop) for plan in plans]
    outcomes: dict[str, list[str]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    reads = []
    try:
        for proc in writers:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            for line in out.splitlines():
                row = json.loads(line)
                outcomes.setdefault(row["file"], []).append(row["outcome"])
                spans.setdefault(row["file"], []).append((row["started"], row["ended"]))
        stop.touch()
        for proc in readers:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            reads.append(json.loads(out))
    finally:
        stop.touch()
        for proc in (*writers, *readers):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return outcomes, reads, spans


def overlapping(spans: list[tuple[float, float]]) -> bool:
    """True when two of these uploads of one file were under way at the same time (one waited on the other)."""
    latest_end = float("-inf")
    for began, ended in sorted(spans):
        if began < latest_end:
            return True
        latest_end = max(latest_end, ended)
    return False

"""CPU of the leaderboard's and TMF's statistics (issue 33: per-task statistics without a Python loop per task or
pair), on a store and on synthetic benchmarks of TASKS x RUNS.

``python bench/bench_vectorised.py [--db PATH] [--shapes 6700x50 20000x100] [--repeat 2]``

*--db*: per benchmark of the store (opened read-only), ``leaderboard.leaderboard`` and ``tmf.overview`` (what the
two pages compute on their first render, without Streamlit's cache); the read is included.
*--shapes*: ``leaderboard_rows`` (all, level and category slices; ranks and paired tests included) and the TMF
overview's analyses (overall with its bootstrap, one analysis per quarter for the movie, the level small
multiples with theirs) on a synthetic benchmark of TASKS x RUNS, one sample per task, runs spread over eight
quarters; no database.
The figure is the least CPU (process) time of ``--repeat`` calls in one process; wall time is printed beside it.
To compare two versions of the code, run this script from each (``PYTHONPATH`` at the other tree's root).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(os.environ.get("RUNLENS_CODE", Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(ROOT))

from analytics import leaderboard as lb  # noqa: E402
from analytics import tmf  # noqa: E402
from store import RunFilter, query_rows, reader  # noqa: E402


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Least CPU and wall seconds of ``repeat`` calls."""
    cpus, walls = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return round(min(cpus), 3), round(min(walls), 3)


def synthetic(n_tasks: int, n_runs: int, *, seed: int = 0) -> pd.DataFrame:
    """Per (run, task) rows of a benchmark: varied success rates and costs, three levels, two categories, runs
    evaluated over eight quarters, a tenth of the runs missing a few tasks."""
    rng = np.random.default_rng(seed)
    rate = rng.uniform(0.2, 0.9, n_runs)
    cost = np.exp(rng.normal(-4, 1.5, n_runs))
    tasks = np.array([f"t{i:06d}" for i in range(n_tasks)], dtype=object)
    run = np.repeat(np.arange(n_runs), n_tasks)
    keep = ~((run % 10 == 3) & (rng.random(run.size) < 0.05))
    c = (rng.random(run.size) < rate[run]).astype(float)
    dates = pd.Timestamp("2025-01-15") + pd.to_timedelta((np.arange(n_runs) % 8) * 91, unit="D")
    frame = pd.DataFrame(
        {
            "run_id": np.array([f"r{r:04d}" for r in range(n_runs)], dtype=object)[run],
            "agent": np.array([f"A{r:04d}" for r in range(n_runs)], dtype=object)[run],
            "agent_version": None,
            "family": None,
            "kind": "llm",
            "eval_date": dates[run],
            "price_input_per_mtok": np.nan,
            "price_output_per_mtok": np.nan,
            "task_id": np.tile(tasks, n_runs),
            "level": np.tile(np.array(["L1", "L2", "L3"], dtype=object)[np.arange(n_tasks) % 3], n_runs),
            "category": np.tile(np.array(["a", "b"], dtype=object)[np.arange(n_tasks) % 2], n_runs),
            "human_minutes": 10.0,
            "n": 1.0,
            "c": c,
            "score": c,
            "steps": rng.integers(1, 30, run.size).astype(float),
            "cost_usd": cost[run] * rng.lognormal(0, 0.3, run.size),
            "input_tokens": np.nan,
            "output_tokens": np.nan,
            "latency_s": 10.0,
        }
    )
    return frame[keep].reset_index(drop=True)


def bench_shape(n_tasks: int, n_runs: int, repeat: int) -> dict[str, object]:
    """The leaderboard's statistics and the TMF overview's analyses on one synthetic benchmark."""
    frame = synthetic(n_tasks, n_runs)
    runs = frame.drop_duplicates("run_id")[["run_id", "agent", "agent_version", "family", "kind", "eval_date"]]
    runs = runs.assign(is_baseline=False).reset_index(drop=True)
    outcomes = frame[["run_id", "task_id", "n", "c", "score", "steps", "cost_usd", "level", "category"]]
    inputs = tmf.TmfInputs("synthetic", frame, pd.DataFrame(columns=["subject", "ability", "ability_lo", "ability_hi"]))
    lb_cpu, lb_wall = _best(lambda: lb.leaderboard_rows(runs, outcomes), repeat)
    tmf_cpu, tmf_wall = _best(
        lambda: (
            tmf.analyse(inputs),
            tmf.by_period(inputs),
            tmf.analyse_slices(inputs, kind="level"),
        ),
        repeat,
    )
    return {
        "shape": f"{n_tasks}x{n_runs}",
        "run_task_rows": len(frame),
        "leaderboard_rows_cpu_s": lb_cpu,
        "leaderboard_rows_wall_s": lb_wall,
        "tmf_overview_cpu_s": tmf_cpu,
        "tmf_overview_wall_s": tmf_wall,
    }


def bench_db(db: Path, repeat: int) -> list[dict[str, object]]:
    """``leaderboard`` and ``tmf.overview`` of every benchmark of the store."""
    out = []
    with reader(db) as con:
        names = [str(r[0]) for r in query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY benchmark")]
        for name in names:
            run_filter = RunFilter(benchmark=name)
            lb_cpu, lb_wall = _best(functools.partial(lb.leaderboard, con, run_filter), repeat)
            tmf_cpu, tmf_wall = _best(functools.partial(tmf.overview, con, run_filter), repeat)
            n_attempts = query_rows(
                con,
                "SELECT count(*) FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?",
                [name],
            )[0][0]
            out.append(
                {
                    "benchmark": name,
                    "attempts": int(n_attempts),
                    "leaderboard_cpu_s": lb_cpu,
                    "leaderboard_wall_s": lb_wall,
                    "tmf_overview_cpu_s": tmf_cpu,
                    "tmf_overview_wall_s": tmf_wall,
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    """Print one JSON line per measurement."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", type=Path)
    parser.add_argument("--shapes", nargs="*", default=[])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    print(json.dumps({"code": str(ROOT)}), flush=True)
    for shape in args.shapes:
        n_tasks, n_runs = (int(v) for v in shape.split("x"))
        print(json.dumps(bench_shape(n_tasks, n_runs, args.repeat)), flush=True)
    if args.db:
        for row in bench_db(args.db, args.repeat):
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

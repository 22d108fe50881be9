"""``plan``: tasks and samples needed for 80% power, checked against the gate's simulated power (seeded, small)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analytics import gate, plan
from ingest.pipeline import ingest_paths
from tests.conftest import ROOT
from tests.test_gate import _bench


@pytest.mark.parametrize(("k", "delta"), [(1, 0.10), (3, 0.10), (2, 0.05)])
def test_plan_agrees_with_simulated_power(k: int, delta: float) -> None:
    rng = np.random.default_rng(28 + k)
    p = rng.beta(2.0, 1.0, 3000)  # the benchmark's task success rates
    pilot = rng.binomial(1, p[:400], size=(3, 400))  # a baseline with 3 samples on 400 tasks estimates W
    within = float(pilot.var(axis=0, ddof=1).mean())
    row = next(
        r
        for r in plan.plan_from_variances(
            within_var=within, between_var=0.0, delta=delta, n_available=100, binary_mean=float(pilot.mean())
        )
        if r["samples"] == k
    )
    n = row["tasks_needed"]
    hits = 0
    reps = 400
    for _ in range(reps):
        t = rng.choice(p, n)
        q = t * (1.0 - delta / t.mean())
        d = (rng.binomial(k, q) - rng.binomial(k, t)) / k
        hits += gate.decide(d, alpha=0.05).p_value < 0.05
    assert abs(hits / reps - 0.8) <= 0.05, (n, hits / reps)


def test_power_and_tasks_needed_are_inverse() -> None:
    n = plan.tasks_needed(0.05, 0.4)
    assert plan.power(0.05, 0.4, n) >= 0.8 > plan.power(0.05, 0.4, n - 1)


def test_plan_cli(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    p = rng.beta(2.0, 1.0, 60)
    runs = {r: {f"t{i:02d}": [int(v) for v in rng.random(3) < p[i]] for i in range(60)} for r in ("a", "b", "c")}
    db = tmp_path / "p.duckdb"
    ingest_paths([_bench(tmp_path / "p.jsonl", runs)], db=db)
    out = subprocess.run(
        [sys.executable, "-m", "analytics", "plan", "--db", str(db), "--benchmark", "g-bench", "--delta", "0.1"]
        + ["--baseline", "a", "--samples", "4", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["baseline"] == "a" and rep["n_tasks_available"] == 60
    assert [r["samples"] for r in rep["rows"]] == [1, 2, 3, 4, 5, 10]
    needed = [r["tasks_needed"] for r in rep["rows"]]
    assert needed == sorted(needed, reverse=True) and needed[0] > needed[-1]
    assert 0 < rep["within_task_var"] < 0.25

"""The plan's statistics: power and tasks needed of the gate's test, the per-task variance for k samples, and the
baseline and variances estimated from a benchmark's per-task outcomes. Pure: frames in, numbers and rows out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from analytics import compare
from analytics.runs import is_eligible
from store import RunlensError

SAMPLE_GRID = (1, 2, 3, 5, 10)
MIN_SHARED = 20  # a run shares at least this many tasks with the baseline to inform tau^2


@dataclass(frozen=True)
class Plan:
    """The answer of ``plan`` for one benchmark and regression size (see the module docstring)."""

    benchmark: str
    baseline: str
    delta: float
    alpha: float
    sided: str
    n_tasks_available: int
    within_var: float
    between_var: float
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def power(delta: float, sd: float, n: int, *, alpha: float = compare.ALPHA, sided: str = "one-sided") -> float:
    """Power of the gate's test to flag a mean regression ``delta`` on ``n`` tasks (normal approximation)."""
    if n <= 0 or not np.isfinite(sd):
        return float("nan")
    if sd <= 0:
        return 1.0 if delta > 0 else float("nan")
    z = float(sps.norm.ppf(1.0 - (alpha if sided == "one-sided" else alpha / 2.0)))
    return float(sps.norm.cdf((math.sqrt(n) * delta - z * math.sqrt(sd * sd + delta * delta)) / sd))


def tasks_needed(delta: float, sd: float, *, alpha: float = compare.ALPHA, sided: str = "one-sided") -> int:
    """The fewest tasks at which the gate's test has 80% power against a mean regression ``delta``."""
    if delta <= 0 or not np.isfinite(sd):
        raise RunlensError(f"--delta must be above 0, got {delta}")
    z = float(sps.norm.ppf(1.0 - (alpha if sided == "one-sided" else alpha / 2.0)))
    root = (z * math.sqrt(sd * sd + delta * delta) + compare.Z80 * sd) / delta
    return max(2, math.ceil(root * root - 1e-9))


def plan_from_variances(
    *,
    within_var: float,
    between_var: float,
    delta: float,
    n_available: int,
    samples: tuple[int, ...] = SAMPLE_GRID,
    alpha: float = compare.ALPHA,
    sided: str = "one-sided",
    binary_mean: float | None = None,
) -> list[dict[str, Any]]:
    """Per number of samples: the per-task standard deviation, the tasks needed for 80% power, the power and the
    detectable effect with the tasks available.

    ``binary_mean``: the baseline's success rate p when outcomes are binary. A candidate ``delta`` lower, losing
    the same share ``r = delta / p`` of every task's success rate, has the within-task variance
    ``E[q(1 - q)] = (p - delta) - (1 - r)^2 (p - W)`` (since ``E[p_t^2] = p - W``), used for its side.
    """
    rows = []
    cand_var = within_var
    if binary_mean is not None and binary_mean > 0:
        share = min(1.0, delta / binary_mean)
        cand_var = max(0.0, (binary_mean - delta) - (1.0 - share) ** 2 * (binary_mean - within_var))
    for k in samples:
        sd = math.sqrt(max(between_var, 0.0) + (within_var + cand_var) / k)
        rows.append(
            {
                "samples": int(k),
                "sd_per_task": sd,
                "tasks_needed": tasks_needed(delta, sd, alpha=alpha, sided=sided),
                "power_at_available": power(delta, sd, n_available, alpha=alpha, sided=sided),
                "mde80_at_available": compare.mde80_normal(sd, n_available, alpha=alpha, sided=sided),
            }
        )
    return rows


def default_baseline(runs: pd.DataFrame, out: pd.DataFrame) -> str:
    """The rankable run with the most attempts (ties: the newest, then the smallest id)."""
    rankable = [str(r.run_id) for r in runs.itertuples() if is_eligible(r.kind, bool(r.is_baseline))]
    counts = out[out["run_id"].isin(rankable)].groupby("run_id")["n"].sum()
    if counts.empty:
        raise RunlensError("no rankable run with scored attempts")
    return str(sorted(counts.index, key=lambda r: (-counts[r], r))[0])


def within_variance(per_task: pd.DataFrame, mine: pd.DataFrame, notes: list[str]) -> float:
    """Mean within-task variance of one sample: unbiased from repeated samples (``per_task``: the run's
    ``load.within_task_variances``), else the bound p(1 - p)."""
    repeated = per_task[per_task["n"] > 1]
    if len(repeated) >= max(5, len(per_task) // 2):
        return float(repeated["v"].astype(float).mean())
    p = float(mine["value"].mean())
    notes.append(
        "one sample per task: the within-task variance is not observable and its upper bound p(1-p) = "
        f"{p * (1 - p):.3f} is used (more samples would usually need fewer tasks than shown)"
    )
    return p * (1.0 - p)


def between_variance(out: pd.DataFrame, mine: pd.DataFrame, within: float, base: str, notes: list[str]) -> float:
    """Median over the other runs of (variance of per-task differences - within-task part), floored at 0."""
    ref = dict(zip(mine["task_id"].astype(str), mine["value"].astype(float), strict=True))
    n_ref = float(mine["n"].mean())
    estimates = []
    for _, g in out[out["run_id"] != base].groupby("run_id"):
        d = compare.shared_differences(ref, dict(zip(g["task_id"].astype(str), g["value"].astype(float), strict=True)))
        if d.size >= MIN_SHARED:
            estimates.append(float(np.var(d, ddof=1)) - within / n_ref - within / float(g["n"].mean()))
    if not estimates:
        notes.append("no other run shares 20 tasks with the baseline: between-version variance taken as 0 (optimistic)")
        return 0.0
    return max(0.0, float(np.median(estimates)))

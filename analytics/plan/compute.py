"""plan: how many tasks and samples a comparison needs to detect a given regression (``python -m analytics plan``).

The gate's test (one-sided sign-flip on per-task differences, ``analytics.gate``) has power
``Phi((sqrt(n) D - z_a sqrt(s^2 + D^2)) / s)`` for a mean regression ``D`` over ``n`` tasks when the per-task
differences have standard deviation ``s`` (``compare.mde80_normal``). With ``k`` samples per task for each run::

    s^2(k) = tau^2 + (W + W') / k

``W`` is the within-task variance of one sample (how much repeated attempts of one task disagree), ``W'`` the
candidate's (for a binary metric, a regression that loses the same share of every task's success rate moves it:
``(p - D) - (1 - D/p)^2 (p - W)``; else ``W``) and
``tau^2`` the between-version variance of the true per-task change (two versions gain and lose different tasks).

* ``W`` comes from the baseline's repeated samples (unbiased within-task variance); with one sample per task it
  cannot be separated from the between-task spread and its upper bound ``p(1 - p)`` is used (marked).
* ``tau^2`` comes from the other runs of the benchmark's ranked comparison set sharing tasks with the baseline:
  the observed variance of their per-task differences minus the within-task part, the median over runs, floored
  at 0. Without another run it is taken as 0 (marked: power is then optimistic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from scipy import stats as sps

from analytics import compare
from analytics.leaderboard import runs_in, task_outcomes
from store import RunlensError, query_df

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


def plan(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    delta: float,
    baseline: str | None = None,
    samples: int | None = None,
    alpha: float = compare.ALPHA,
    sided: str = "one-sided",
) -> Plan:
    """How many tasks (and samples per task) a gate on ``benchmark`` needs to catch a regression of ``delta``.

    Args:
        con: read connection.
        benchmark: the benchmark.
        delta: the regression to detect (a fraction: 0.05 is 5 points of Pass@1 or mean score).
        baseline: the run whose variances are used; default: the ranked run with the most attempts.
        samples: a number of samples per task to include beside ``SAMPLE_GRID``.
        alpha: the gate's level.
        sided: ``one-sided`` (the gate's default) or ``two-sided``.
    """
    if not 0 < delta < 1:
        raise RunlensError(f"--delta must be between 0 and 1 (a fraction), got {delta}")
    runs = runs_in(con, benchmark=benchmark)
    if runs.empty:
        raise RunlensError(f"no runs of benchmark {benchmark!r}")
    out = task_outcomes(con, benchmark=benchmark, runs=runs)
    out = out.assign(value=out["c"] / out["n"] if _is_binary(con, benchmark) else out["score"])
    base = baseline or _default_baseline(runs, out)
    mine = out[out["run_id"] == base]
    if mine.empty:
        raise RunlensError(f"no scored attempts of run {base!r} in benchmark {benchmark!r}")
    notes: list[str] = []
    within = _within_var(con, base, mine, notes)
    between = _between_var(out, mine, within, base, notes)
    grid = tuple(sorted(set(SAMPLE_GRID) | ({samples} if samples else set())))
    rows = plan_from_variances(
        within_var=within,
        between_var=between,
        delta=delta,
        n_available=len(mine),
        samples=grid,
        alpha=alpha,
        sided=sided,
        binary_mean=float(mine["value"].mean()) if _is_binary(con, benchmark) else None,
    )
    return Plan(benchmark, base, delta, alpha, sided, len(mine), within, between, rows, notes)


def _is_binary(con: duckdb.DuckDBPyConnection, benchmark: str) -> bool:
    rows = query_df(con, "SELECT scoring FROM benchmarks WHERE benchmark = ?", [benchmark])
    return rows.empty or compare.ranking_metric(None if rows.empty else str(rows["scoring"].iloc[0])) == "pass@1"


def _default_baseline(runs: pd.DataFrame, out: pd.DataFrame) -> str:
    """The rankable run with the most attempts (ties: the newest, then the smallest id)."""
    rankable = [str(r.run_id) for r in runs.itertuples() if compare.is_rankable(r.kind, bool(r.is_baseline))]
    counts = out[out["run_id"].isin(rankable)].groupby("run_id")["n"].sum()
    if counts.empty:
        raise RunlensError("no rankable run with scored attempts")
    return str(sorted(counts.index, key=lambda r: (-counts[r], r))[0])


def _within_var(con: duckdb.DuckDBPyConnection, run: str, mine: pd.DataFrame, notes: list[str]) -> float:
    """Mean within-task variance of one sample: unbiased from repeated samples, else the bound p(1 - p)."""
    per_task = query_df(
        con,
        "SELECT task_id, var_samp(score) AS v, count(*) AS n FROM attempts "
        "WHERE run_id = ? AND score IS NOT NULL GROUP BY task_id",
        [run],
    )
    repeated = per_task[per_task["n"] > 1]
    if len(repeated) >= max(5, len(per_task) // 2):
        return float(repeated["v"].astype(float).mean())
    p = float(mine["value"].mean())
    notes.append(
        "one sample per task: the within-task variance is not observable and its upper bound p(1-p) = "
        f"{p * (1 - p):.3f} is used (more samples would usually need fewer tasks than shown)"
    )
    return p * (1.0 - p)


def _between_var(out: pd.DataFrame, mine: pd.DataFrame, within: float, base: str, notes: list[str]) -> float:
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


def report(result: Plan) -> dict[str, Any]:
    """The JSON shape of ``python -m analytics plan --json``."""
    return {
        "benchmark": result.benchmark,
        "baseline": result.baseline,
        "delta": result.delta,
        "alpha": result.alpha,
        "sided": result.sided,
        "power": 0.8,
        "n_tasks_available": result.n_tasks_available,
        "within_task_var": result.within_var,
        "between_version_var": result.between_var,
        "rows": result.rows,
        "notes": result.notes,
    }


def text_report(result: Plan) -> str:
    """The plan as a small table."""
    lines = [
        f"{result.benchmark}: to catch a {100 * result.delta:.3g}-point regression with 80% power "
        f"({result.sided}, alpha {result.alpha}), baseline {result.baseline}, {result.n_tasks_available} tasks now",
        f"{'samples':>8} {'sd/task':>8} {'tasks needed':>13} {'power now':>10} {'MDE80 now':>10}",
    ]
    for r in result.rows:
        lines.append(
            f"{r['samples']:>8} {r['sd_per_task']:>8.3f} {r['tasks_needed']:>13} "
            f"{100 * r['power_at_available']:>9.0f}% {100 * r['mde80_at_available']:>8.1f}pp"
        )
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)

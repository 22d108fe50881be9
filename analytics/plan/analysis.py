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

import duckdb

from analytics import compare
from analytics.leaderboard import task_outcomes
from analytics.plan.compute import (
    SAMPLE_GRID,
    Plan,
    between_variance,
    default_baseline,
    plan_from_variances,
    within_variance,
)
from analytics.plan.load import benchmark_is_binary, within_task_variances
from analytics.runs import load_runs
from store import RunFilter, RunlensError


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
    runs = load_runs(con, RunFilter(benchmark=benchmark))
    if runs.empty:
        raise RunlensError(f"no runs of benchmark {benchmark!r}")
    out = task_outcomes(con, RunFilter(benchmark=benchmark), runs=runs)
    is_binary = benchmark_is_binary(con, benchmark)
    out = out.assign(value=out["c"] / out["n"] if is_binary else out["score"])
    base = baseline or default_baseline(runs, out)
    mine = out[out["run_id"] == base]
    if mine.empty:
        raise RunlensError(f"no scored attempts of run {base!r} in benchmark {benchmark!r}")
    notes: list[str] = []
    within = within_variance(within_task_variances(con, base), mine, notes)
    between = between_variance(out, mine, within, base, notes)
    grid = tuple(sorted(set(SAMPLE_GRID) | ({samples} if samples else set())))
    rows = plan_from_variances(
        within_var=within,
        between_var=between,
        delta=delta,
        n_available=len(mine),
        samples=grid,
        alpha=alpha,
        sided=sided,
        binary_mean=float(mine["value"].mean()) if is_binary else None,
    )
    return Plan(benchmark, base, delta, alpha, sided, len(mine), within, between, rows, notes)

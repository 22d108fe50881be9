"""gate: fail a CI step when a candidate run is worse than a baseline run on their shared tasks.

Exit codes: 0 the candidate is not shown worse; 1 it is (the regressed tasks are printed); 2 the runs cannot be
compared (no shared task with a value in both) or a run does not exist.

The decision (docs/statistics.md has the measured size and power):

* **One-sided** in the bad direction (lower Pass@1 or mean score; higher cost) at ``alpha``: an exact sign-flip
  test of the per-task differences with the mid-p value (one binary sample per task: the one-sided McNemar
  mid-p). ``sided="two-sided"`` asks for a two-sided mid-p below ``alpha`` with the difference in the bad
  direction (half the false alarms, less power).
* **Margin** (non-inferiority, ``margin > 0``): fail only if the candidate is worse by more than ``margin``: the
  one-sided (1 - alpha) upper confidence bound of the mean difference (t over tasks) is below ``-margin``.
* **Sequential** (``sequential=True``): the tasks are read one at a time (in the order the candidate's log recorded
  them) and two
  betting e-processes are updated after each: one against "not worse" (fails the gate when it reaches
  ``1/alpha``), one against "worse by ``stop_delta`` or more" (passes it). Valid however often it is looked at
  (Ville's inequality); it stops as soon as either answer is known.
* ``mde80``: the smallest regression the test detects with 80% power at this n and the observed per-task variance.

The two-sided paired test of the leaderboard and the Version diff (``test``) is kept beside the decision, so the
three views report the same difference, interval and two-sided p for a pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import duckdb
import numpy as np

from analytics import compare
from analytics.diff import (
    RunDiff,
    _single,
    aligned,
    aligned_positions,
    compare_runs_with_values,
    metric_values,
    paired_test_on,
    run_benchmark,
    tasks_by_change,
)
from analytics.diff.arrays import same_index
from analytics.gate.compute import (
    GATE_METRICS,
    SIDES,
    STOP_DELTA,
    GateResult,
    decide,
    order_at,
    order_by_first,
    sequential_test,
)
from analytics.gate.load import task_order
from store import RunlensError


def gate(
    con: duckdb.DuckDBPyConnection,
    *,
    baseline: str,
    candidate: str,
    metric: str | None = None,
    alpha: float = compare.ALPHA,
    seed: int = 0,
    scorer: str | None = None,
    sided: str = "one-sided",
    margin: float = 0.0,
    sequential: bool = False,
    stop_delta: float = STOP_DELTA,
    values: dict[str, dict[str, Any]] | None = None,
) -> GateResult:
    """Test whether ``candidate`` is worse than ``baseline`` on their shared tasks.

    Args:
        con: read connection.
        baseline: the reference run id.
        candidate: the run under test.
        metric: ``pass@1``, ``mean_score`` or ``cost`` (mean cost per task); default the benchmark's own metric.
        alpha: the false-alarm rate the gate allows.
        seed: seed of the Monte Carlo flips and the bootstrap interval (the leaderboard uses 0).
        sided: ``one-sided`` (default) or ``two-sided``.
        margin: fail only if worse by more than this (same unit as the metric: a fraction, or USD for cost).
        sequential: read the tasks one at a time with an anytime-valid test (``sequential_test``).
        stop_delta: the regression a sequential "not worse" stop rules out (at least ``margin``).
        scorer: compare one scorer's values (``analytics.scorers``; unknown: ``ScorerNotFoundError`` listing the
            benchmark's) instead of the headline score; a raw-scale scorer is compared by its mean.
        values: the two runs' ``metric_values`` of the benchmark's metric when the caller has read them already
            (``diff_and_gate``); used only for that metric without a scorer, read here otherwise (each run's
            ``benchmark`` entry, when there, is its benchmark and scoring, not read again).
    """
    if sided not in SIDES:
        raise RunlensError(f"sided must be one of {', '.join(SIDES)}, got {sided!r}")
    if margin < 0:
        raise RunlensError(f"--margin must be 0 or more, got {margin}")
    known = values is not None and all("benchmark" in values.get(r, {}) for r in (baseline, candidate))
    bench_a, scoring = values[baseline]["benchmark"] if known and values else run_benchmark(con, baseline)
    bench_b, _ = values[candidate]["benchmark"] if known and values else run_benchmark(con, candidate)
    if bench_a != bench_b:
        raise RunlensError(f"runs of different benchmarks: {baseline!r} ({bench_a}), {candidate!r} ({bench_b})")
    threshold = None
    if scorer is not None:
        from analytics import scorers
        from analytics.leaderboard import benchmark_threshold

        scorer = scorers.check_scorer(con, benchmark=bench_a, scorer=scorer)
        scale = scorers.scorer_scale(con, benchmark=bench_a, scorer=scorer)
        cut = benchmark_threshold(con, benchmark=bench_a) if scoring == "continuous" else 0.5
        threshold = {"binary": 1.0, "continuous": cut}.get(scale)
        scoring = "continuous" if scale == "raw" else scale
        if metric == "pass@1" and threshold is None:
            raise RunlensError(f"scorer {scorer!r} is on its own scale: it has no pass@1; use --metric mean_score")
    metric = metric or compare.ranking_metric(scoring)
    if metric not in GATE_METRICS:
        raise RunlensError(f"--metric must be one of {', '.join(GATE_METRICS)}, got {metric!r}")
    if sequential and metric == "cost":
        raise RunlensError("--sequential needs a bounded metric (pass@1 or mean_score), not cost")
    value_metric = "mean_score" if metric == "cost" else metric
    if values is None or scorer is not None or value_metric != compare.ranking_metric(scoring):
        values = {
            r: metric_values(con, r, value_metric, scorer=scorer, threshold=threshold) for r in (baseline, candidate)
        }
    key = "cost_usd" if metric == "cost" else "value"
    a, b = values[baseline][key], values[candidate][key]
    # the shared tasks (sorted ids) and both runs' values on them as aligned arrays: no Python loop per task
    shared, va, vb = aligned(a, b)
    single = metric == "pass@1" and _single(values, metric)
    delta = compare.differences(vb, va)  # a difference in the last bits is no regression
    test = paired_test_on(delta, is_binary_single=single, seed=seed)
    sign = 1.0 if metric == "cost" else -1.0  # the direction in which a change is a regression
    worse = np.flatnonzero(sign * delta > 0)
    worse = worse[np.argsort(-sign * delta[worse], kind="stable")]  # worst first; ties in task-id order
    regressed = [
        {"task_id": t, "baseline": x, "candidate": y, "delta": d}
        for t, x, y, d in zip(
            shared[worse].tolist(), va[worse].tolist(), vb[worse].tolist(), delta[worse].tolist(), strict=True
        )
    ]
    good = -sign * delta  # positive: candidate better
    decision = (
        decide(good, alpha=alpha, sided=sided, margin=margin, seed=seed, spread=[va, vb]) if len(shared) else None
    )
    seq = None
    if sequential and len(shared):
        first = values[candidate].get("first_attempt")
        if first is None:
            order, how = task_order(con, candidate, shared)
        elif same_index(a, b, first):  # the diff's columns: the shared tasks' positions on the pair's index
            order, how = order_at(first, aligned_positions(a, b))
        else:
            order, how = order_by_first(first, shared)
        seq = sequential_test(good[order], alpha=alpha, margin=margin, stop_delta=max(stop_delta, margin), order=how)
    mean_a = float(np.mean(va)) if len(shared) else float("nan")
    mean_b = float(np.mean(vb)) if len(shared) else float("nan")
    return GateResult(
        baseline, candidate, bench_a, metric, alpha, test, mean_a, mean_b, regressed, scorer, decision, seq
    )


# what the gate of a diff's pair reads of each run's values (``gate`` with ``values`` of the benchmark's metric and
# no scorer: the metric, the samples, the first attempts, the benchmark and its scoring)
GATE_VALUES = ("value", "n", "first_attempt", "benchmark")


@dataclass(frozen=True)
class DiffAndGate:
    """The Version diff of two runs and the sequential gate of the same pair, from one read of each run's
    per-task values; ``gate_error`` says why the gate could not be run (``gate`` is then None). Read with
    ``gated=False``, ``gate`` is None and ``values`` holds what the gate reads of each run (``gate_of``)."""

    diff: RunDiff
    gate: GateResult | None
    gate_error: str | None
    values: dict[str, dict[str, Any]] | None = field(default=None, compare=False, repr=False)


def diff_and_gate(
    con: duckdb.DuckDBPyConnection,
    *,
    run_a: str,
    run_b: str,
    basis: str = "sample0",
    sequential: bool = True,
    gated: bool = True,
) -> DiffAndGate:
    """``compare_runs(run_a, run_b, basis)`` and ``gate(baseline=run_a, candidate=run_b, sequential=...)`` with
    each run's per-task metric values read once for both (the Version diff page shows the two). With
    ``gated=False`` the gate is not run: its inputs are kept for ``gate_of`` (the page runs it when its expander
    is opened)."""
    diff, values = compare_runs_with_values(con, run_a=run_a, run_b=run_b, basis=basis)
    if not gated:
        return DiffAndGate(diff, None, None, {run: {k: v[k] for k in GATE_VALUES} for run, v in values.items()})
    check, error = _gate_of(con, values, run_a=run_a, run_b=run_b, sequential=sequential)
    return DiffAndGate(diff, check, error)


def _gate_of(
    con: duckdb.DuckDBPyConnection,
    values: dict[str, dict[str, Any]],
    *,
    run_a: str,
    run_b: str,
    sequential: bool,
) -> tuple[GateResult | None, str | None]:
    try:
        return gate(con, baseline=run_a, candidate=run_b, sequential=sequential, values=values), None
    except RunlensError as exc:
        return None, str(exc)


def gate_of(both: DiffAndGate, *, sequential: bool = True) -> tuple[GateResult | None, str | None]:
    """The gate of a pair read with ``diff_and_gate(..., gated=False)`` and the reason it could not be run (the
    same as ``diff_and_gate``'s ``gate`` and ``gate_error``), from the values kept with the diff: nothing is read
    again (the values hold the benchmark and the first attempts, so ``gate`` queries nothing)."""
    if both.values is None:
        return both.gate, both.gate_error
    no_reads = cast("duckdb.DuckDBPyConnection", None)  # gate reads the database only for what values lack
    return _gate_of(no_reads, both.values, run_a=both.diff.run_a, run_b=both.diff.run_b, sequential=sequential)


def changes_of(both: DiffAndGate, *, low: float = -1.0, high: float = 1.0, regressions_only: bool = False) -> Any:
    """``tasks_by_change`` of the pair's diff: the cheap last step of the Version diff page, kept apart so a
    change of its range is finished from the cached diff (``ui.common.cached_then``)."""
    return tasks_by_change(both.diff, low=low, high=high, regressions_only=regressions_only)

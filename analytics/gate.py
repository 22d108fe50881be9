"""gate: fail a CI step when a candidate run is significantly worse than a baseline run on their shared tasks.

Exit codes: 0 the candidate is not significantly worse; 1 it is (the regressed tasks are printed); 2 the runs
cannot be compared (no shared task with a value in both) or a run does not exist.

The test is the leaderboard's paired test (``analytics.compare.paired_test``) on per-task values over the tasks
both runs have: exact McNemar when both runs have one binary sample per task, otherwise a seeded sign-flip
permutation test of the mean difference. "Worse" means two-sided p < alpha with the difference in the bad
direction (lower Pass@1 or mean score; higher cost).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from analytics import compare
from analytics.diff import _single, metric_values, run_benchmark
from store import RunlensError

GATE_METRICS = ("pass@1", "mean_score", "cost")
EXIT_OK, EXIT_WORSE, EXIT_UNTESTABLE = 0, 1, 2


@dataclass(frozen=True)
class GateResult:
    """The verdict of one gate check (see the module docstring)."""

    baseline: str
    candidate: str
    benchmark: str
    metric: str
    alpha: float
    test: compare.PairedTest
    baseline_mean: float
    candidate_mean: float
    regressed: list[dict[str, Any]]  # tasks where the candidate did worse, worst first
    scorer: str | None = None  # the scorer compared (None: the attempts' headline score)

    @property
    def verdict(self) -> str:
        """``untestable``, ``worse`` or ``not worse``."""
        if not self.test.is_testable:
            return "untestable"
        bad = self.test.diff > 0 if self.metric == "cost" else self.test.diff < 0
        return "worse" if bad and self.test.p_value < self.alpha else "not worse"

    @property
    def exit_code(self) -> int:
        """0 not worse, 1 worse, 2 untestable."""
        return {"not worse": EXIT_OK, "worse": EXIT_WORSE, "untestable": EXIT_UNTESTABLE}[self.verdict]


def gate(
    con: duckdb.DuckDBPyConnection,
    *,
    baseline: str,
    candidate: str,
    metric: str | None = None,
    alpha: float = compare.ALPHA,
    seed: int = 0,
    scorer: str | None = None,
) -> GateResult:
    """Test whether ``candidate`` is significantly worse than ``baseline`` on their shared tasks.

    Args:
        con: read connection.
        baseline: the reference run id.
        candidate: the run under test.
        metric: ``pass@1``, ``mean_score`` or ``cost`` (mean cost per task); default the benchmark's own metric.
        alpha: significance level of the two-sided test.
        seed: seed of the sign flips and the bootstrap interval (the leaderboard uses 0).
        scorer: compare one scorer's values (``analytics.scorers``; unknown: ``ScorerNotFoundError`` listing the
            benchmark's) instead of the headline score; a raw-scale scorer is compared by its mean.
    """
    bench_a, scoring = run_benchmark(con, baseline)
    bench_b, _ = run_benchmark(con, candidate)
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
    value_metric = "mean_score" if metric == "cost" else metric
    values = {r: metric_values(con, r, value_metric, scorer=scorer, threshold=threshold) for r in (baseline, candidate)}
    key = "cost_usd" if metric == "cost" else "value"
    a, b = values[baseline][key], values[candidate][key]
    test = compare.paired_test(a, b, is_binary_single=metric == "pass@1" and _single(values, metric), seed=seed)
    shared = sorted(t for t in a if t in b and np.isfinite(a[t]) and np.isfinite(b[t]))
    sign = 1.0 if metric == "cost" else -1.0  # the direction in which a change is a regression
    regressed = [
        {"task_id": t, "baseline": a[t], "candidate": b[t], "delta": b[t] - a[t]}
        for t in shared
        if sign * (b[t] - a[t]) > 0
    ]
    regressed.sort(key=lambda r: (-sign * r["delta"], r["task_id"]))
    mean = lambda run: float(np.mean([run[t] for t in shared])) if shared else float("nan")  # noqa: E731
    return GateResult(baseline, candidate, bench_a, metric, alpha, test, mean(a), mean(b), regressed, scorer)


def report(result: GateResult) -> dict[str, Any]:
    """The JSON shape of ``python -m analytics gate --json`` (documented in the README)."""
    t = result.test
    num = lambda v: None if v is None or not np.isfinite(v) else float(v)  # noqa: E731
    return {
        "baseline": result.baseline,
        "candidate": result.candidate,
        "benchmark": result.benchmark,
        "metric": result.metric,
        "alpha": result.alpha,
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "n_shared": t.n_shared,
        "baseline_mean": num(result.baseline_mean),
        "candidate_mean": num(result.candidate_mean),
        "diff": num(t.diff),
        "ci95": [num(t.ci95[0]), num(t.ci95[1])],
        "p_value": num(t.p_value),
        "method": t.method,
        "n_worse": t.n_worse,
        "n_better": t.n_better,
        "regressed_tasks": [{k: num(v) if k != "task_id" else v for k, v in r.items()} for r in result.regressed],
        "scorer": result.scorer,
    }


def text_report(result: GateResult) -> str:
    t = result.test
    if not t.is_testable:
        return f"UNTESTABLE: {result.candidate} and {result.baseline} share no task with a {result.metric} value."
    scale, unit = (1.0, " $") if result.metric == "cost" else (100.0, " pp")
    lines = [
        f"{result.verdict.upper()}: {result.candidate} vs {result.baseline} on {t.n_shared} shared tasks "
        f"({result.metric}): {result.candidate_mean * scale:.4g} vs {result.baseline_mean * scale:.4g}, "
        f"difference {t.diff * scale:+.4g}{unit} (95% CI {t.ci95[0] * scale:+.4g} to {t.ci95[1] * scale:+.4g}), "
        f"p = {t.p_value:.3g} ({t.method}), alpha {result.alpha}"
    ]
    if result.verdict == "worse":
        lines.append(f"{len(result.regressed)} task(s) regressed:")
        lines += [f"  {r['task_id']}: {r['baseline']:.4g} -> {r['candidate']:.4g}" for r in result.regressed]
    return "\n".join(lines)

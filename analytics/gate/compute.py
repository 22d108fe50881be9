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

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from scipy import stats as sps

from analytics import compare
from analytics.diff import _single, metric_values, run_benchmark
from store import RunlensError, query_df

GATE_METRICS = ("pass@1", "mean_score", "cost")
SIDES = ("one-sided", "two-sided")
EXIT_OK, EXIT_WORSE, EXIT_UNTESTABLE = 0, 1, 2
STOP_DELTA = 0.05  # the sequential gate passes early once "worse by 5 points or more" is ruled out
BET_FRACTIONS = np.array([0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9])  # of the largest bet that cannot go bust


@dataclass(frozen=True)
class Sequential:
    """The anytime-valid reading of the gate (``sequential_test``).

    Attributes:
        verdict: ``worse``, ``not worse`` (ruled out a regression of ``stop_delta`` or more) or ``undecided``.
        n_used: tasks read when it stopped (all of them when undecided).
        n_total: tasks available.
        e_worse: the e-value against "not worse" when it stopped (fails at ``1/alpha``).
        e_not_worse: the e-value against "worse by ``stop_delta``" (passes at ``1/alpha``).
        stop_delta: the regression ruled out by a "not worse" stop.
        order: how tasks were ordered (``log order``: as the candidate's log recorded them).
    """

    verdict: str
    n_used: int
    n_total: int
    e_worse: float
    e_not_worse: float
    stop_delta: float
    order: str
    path_worse: tuple[float, ...] = ()  # the e-value against "not worse" after each task read
    path_not_worse: tuple[float, ...] = ()  # the e-value against "worse by stop_delta" after each task read


@dataclass(frozen=True)
class Decision:
    """The gate's own test: p-value, method, sides, margin, one-sided bound and detectable effect."""

    p_value: float
    method: str
    sided: str
    margin: float
    bound: float  # one-sided (1 - alpha) confidence bound of the difference in the bad direction's limit
    mde80: float
    sd: float  # standard deviation of the per-task differences used for mde80


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
    decision: Decision | None = None
    sequential: Sequential | None = None

    @property
    def verdict(self) -> str:
        """``untestable``, ``worse`` or ``not worse``."""
        if not self.test.is_testable or self.decision is None:
            return "untestable"
        if self.sequential is not None:
            return "worse" if self.sequential.verdict == "worse" else "not worse"
        bad = self.test.diff > 0 if self.metric == "cost" else self.test.diff < 0
        if self.decision.margin > 0:
            return "worse" if self.decision.p_value < self.alpha else "not worse"
        return "worse" if bad and self.decision.p_value < self.alpha else "not worse"

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
    sided: str = "one-sided",
    margin: float = 0.0,
    sequential: bool = False,
    stop_delta: float = STOP_DELTA,
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
    """
    if sided not in SIDES:
        raise RunlensError(f"sided must be one of {', '.join(SIDES)}, got {sided!r}")
    if margin < 0:
        raise RunlensError(f"--margin must be 0 or more, got {margin}")
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
    if sequential and metric == "cost":
        raise RunlensError("--sequential needs a bounded metric (pass@1 or mean_score), not cost")
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
    good = np.array([-sign * (b[t] - a[t]) for t in shared], dtype=float)  # positive: candidate better
    spread = [np.array([run[t] for t in shared], dtype=float) for run in (a, b)]
    decision = decide(good, alpha=alpha, sided=sided, margin=margin, seed=seed, spread=spread) if shared else None
    seq = None
    if sequential and shared:
        order, how = task_order(con, candidate, shared)
        seq = sequential_test(good[order], alpha=alpha, margin=margin, stop_delta=max(stop_delta, margin), order=how)
    return GateResult(
        baseline, candidate, bench_a, metric, alpha, test, mean(a), mean(b), regressed, scorer, decision, seq
    )


def decide(
    good: np.ndarray,
    *,
    alpha: float,
    sided: str = "one-sided",
    margin: float = 0.0,
    seed: int = 0,
    spread: list[np.ndarray] | None = None,
) -> Decision:
    """The gate's test on per-task differences oriented so that negative is a regression.

    Args:
        good: per-task differences, candidate minus baseline, signed so that a regression is negative.
        alpha: the level.
        sided: ``one-sided`` or ``two-sided``.
        margin: non-inferiority margin (0: any regression).
        seed: seed of the Monte Carlo flips (used only off a lattice).
        spread: the two runs' per-task values, for ``mde80`` when the differences are all equal.
    """
    n = good.size
    sd = float(np.std(good, ddof=1)) if n > 1 else float("nan")
    if (not np.isfinite(sd) or sd == 0) and spread is not None:  # no spread seen: each run's own, as independent
        sd = float(np.sqrt(sum(np.var(v, ddof=1) if v.size > 1 else 0.0 for v in spread)))
    level = alpha if sided == "one-sided" else alpha / 2.0
    if margin > 0:
        se = sd / np.sqrt(n) if n > 1 else float("nan")
        mean = float(good.mean())
        t = (mean + margin) / se if se > 0 else (np.inf if mean + margin >= 0 else -np.inf)
        p = float(sps.t.cdf(t, df=max(n - 1, 1))) if np.isfinite(se) else float("nan")
        p = p if sided == "one-sided" else min(1.0, 2.0 * p)
        bound = mean + float(sps.t.ppf(1.0 - level, df=max(n - 1, 1))) * se
        method = "t-margin"
    else:
        low = compare.sign_flip_one_sided(good, seed=seed)
        if sided == "one-sided":
            p = low.p_value
        else:
            p = compare.mid_p_two_sided(low, compare.sign_flip_one_sided(-good, seed=seed))
        se = sd / np.sqrt(n) if n > 1 else float("nan")
        bound = float(good.mean() + sps.norm.ppf(1.0 - level) * se) if np.isfinite(se) else float("nan")
        method = f"{low.method}-mid-p"
    # no spread anywhere (one task, or every value equal): the detectable effect is unknown, not 0
    mde = compare.mde80_normal(sd, n, alpha=alpha, sided=sided) + margin if sd > 0 else float("nan")
    return Decision(float(p), method, sided, float(margin), float(bound), float(mde), sd)


def task_order(con: duckdb.DuckDBPyConnection, candidate: str, shared: list[str]) -> tuple[np.ndarray, str]:
    """Positions of ``shared`` in the order the candidate's log recorded its tasks (its first attempt of each, as
    ingested): the order attempts arrive in over time, never chosen by their outcome."""
    first = query_df(
        con, "SELECT task_id, min(attempt_id) AS at FROM attempts WHERE run_id = ? GROUP BY task_id", [candidate]
    )
    at = dict(zip(first["task_id"].astype(str), first["at"].astype(float), strict=True))
    order = sorted(range(len(shared)), key=lambda i: (at.get(shared[i], np.inf), shared[i]))
    return np.array(order, dtype=int), "log order"


def sequential_test(
    good: np.ndarray,
    *,
    alpha: float = compare.ALPHA,
    margin: float = 0.0,
    stop_delta: float = STOP_DELTA,
    order: str = "task_id",
) -> Sequential:
    """Two betting e-processes over per-task differences in [-1, 1] (negative: a regression), read in order.

    Against "not worse" (mean >= -margin): wealth ``prod(1 - l (d_i + margin))``; against "worse by stop_delta or
    more" (mean <= -stop_delta): ``prod(1 + l (d_i + stop_delta))``; each averaged over a grid of bet sizes
    ``l`` (a mixture of e-processes is one). Under the pair's null (the two runs exchangeable task by task, so
    each difference is symmetric given the past) each is a nonnegative supermartingale: by Ville's inequality it
    ever reaches ``1/alpha`` with probability at most ``alpha``, whenever and however often it is checked.
    """
    d = np.clip(np.asarray(good, dtype=float), -1.0, 1.0)
    n = d.size
    lam_bad = BET_FRACTIONS / (1.0 + margin)
    lam_good = BET_FRACTIONS / (1.0 - stop_delta) if stop_delta < 1 else BET_FRACTIONS
    with np.errstate(divide="ignore"):
        log_bad = np.cumsum(np.log1p(-lam_bad[None, :] * (d[:, None] + margin)), axis=0)
        log_good = np.cumsum(np.log1p(np.minimum(lam_good[None, :] * (d[:, None] + stop_delta), 1e300)), axis=0)
    e_bad = np.exp(log_bad).mean(axis=1)
    e_good = np.exp(log_good).mean(axis=1)
    hit_bad = np.flatnonzero(e_bad >= 1.0 / alpha)
    hit_good = np.flatnonzero(e_good >= 1.0 / alpha)
    first_bad = int(hit_bad[0]) if hit_bad.size else n
    first_good = int(hit_good[0]) if hit_good.size else n
    stop = min(first_bad, first_good, n - 1)
    verdict = "undecided" if first_bad == n and first_good == n else "worse" if first_bad <= first_good else "not worse"
    used = n if verdict == "undecided" else stop + 1
    paths = (tuple(map(float, e_bad[:used])), tuple(map(float, e_good[:used])))
    return Sequential(verdict, used, n, float(e_bad[stop]), float(e_good[stop]), stop_delta, order, *paths)


def sequential_text(result: GateResult) -> str:
    """One line: the sequential verdict, where it stopped and both e-values (empty without a sequential check)."""
    seq = result.sequential
    if seq is None:
        return ""
    scale, unit = (1.0, " $") if result.metric == "cost" else (100.0, " pp")
    return (
        f"sequential: {seq.verdict} after {seq.n_used} of {seq.n_total} tasks ({seq.order}; e-values "
        f"{seq.e_worse:.3g} against 'not worse', {seq.e_not_worse:.3g} against 'worse by "
        f"{seq.stop_delta * scale:.3g}{unit}', threshold {1 / result.alpha:.3g})"
    )


def sequential_frame(seq: Sequential) -> pd.DataFrame:
    """The e-values after each task read: ``tasks_read``, ``e_worse``, ``e_not_worse`` (a chart's data)."""
    return pd.DataFrame(
        {
            "tasks_read": np.arange(1, len(seq.path_worse) + 1),
            "e_worse": seq.path_worse,
            "e_not_worse": seq.path_not_worse,
        }
    )


def fig_sequential(seq: Sequential, *, alpha: float = compare.ALPHA):  # -> go.Figure
    """Both e-values against the tasks read (log scale), with the 1/alpha line where the gate stops."""
    import plotly.graph_objects as go

    x = np.arange(1, len(seq.path_worse) + 1)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=seq.path_worse, mode="lines", name="evidence B is worse than A"))
    fig.add_trace(
        go.Scatter(
            x=x, y=seq.path_not_worse, mode="lines", name=f"evidence B is not {100 * seq.stop_delta:.3g} pp worse"
        )
    )
    fig.add_hline(y=1.0 / alpha, line_dash="dot", annotation_text=f"stop at {1 / alpha:.3g}")
    fig.update_layout(
        title=f"Sequential gate: {seq.verdict} after {seq.n_used} of {seq.n_total} tasks ({seq.order})",
        xaxis_title="tasks read",
        yaxis={"title": "e-value", "type": "log"},
        height=360,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def report(result: GateResult) -> dict[str, Any]:
    """The JSON shape of ``python -m analytics gate --json`` (documented in the README)."""
    t = result.test
    num = lambda v: None if v is None or not np.isfinite(v) else float(v)  # noqa: E731
    dec = result.decision
    seq = result.sequential
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
        "p_value": num(dec.p_value) if dec else None,
        "method": dec.method if dec else "untestable",
        "n_worse": t.n_worse,
        "n_better": t.n_better,
        "regressed_tasks": [{k: num(v) if k != "task_id" else v for k, v in r.items()} for r in result.regressed],
        "scorer": result.scorer,
        "sided": dec.sided if dec else None,
        "margin": dec.margin if dec else None,
        "bound": num(dec.bound) if dec else None,
        "mde80": num(detectable(result)),
        "p_two_sided_paired": num(t.p_value),
        "paired_method": t.method,
        "sequential": None
        if seq is None
        else {
            "verdict": seq.verdict,
            "n_used": seq.n_used,
            "n_total": seq.n_total,
            "n_saved": seq.n_total - seq.n_used,
            "e_worse": num(seq.e_worse),
            "e_not_worse": num(seq.e_not_worse),
            "threshold": 1.0 / result.alpha,
            "stop_delta": seq.stop_delta,
            "order": seq.order,
        },
    }


def detectable(result: GateResult) -> float | None:
    """The decision's ``mde80``; None when unknown, or beyond the metric's range (above 1 for a rate or score)."""
    dec = result.decision
    if dec is None or not np.isfinite(dec.mde80) or (result.metric != "cost" and dec.mde80 > 1.0):
        return None
    return float(dec.mde80)


def text_report(result: GateResult) -> str:
    """The verdict as the CI log shows it: decision, difference with its interval, p, detectable effect."""
    t = result.test
    dec = result.decision
    if not t.is_testable or dec is None:
        return f"UNTESTABLE: {result.candidate} and {result.baseline} share no task with a {result.metric} value."
    scale, unit = (1.0, " $") if result.metric == "cost" else (100.0, " pp")
    lines = [
        f"{result.verdict.upper()}: {result.candidate} vs {result.baseline} on {t.n_shared} shared tasks "
        f"({result.metric}): {result.candidate_mean * scale:.4g} vs {result.baseline_mean * scale:.4g}, "
        f"difference {t.diff * scale:+.4g}{unit} (95% CI {t.ci95[0] * scale:+.4g} to {t.ci95[1] * scale:+.4g}), "
        f"p = {dec.p_value:.3g} ({dec.method}, {dec.sided}"
        + (f", margin {dec.margin * scale:.4g}{unit}" if dec.margin > 0 else "")
        + f"), alpha {result.alpha}; "
        + (
            f"detects a regression of {mde * scale:.3g}{unit} with 80% power"
            if (mde := detectable(result)) is not None
            else "too few tasks (or no spread) to say which regression it would detect with 80% power"
        )
    ]
    if result.sequential is not None:
        lines.append(sequential_text(result))
    if result.verdict == "worse":
        lines.append(f"{len(result.regressed)} task(s) regressed:")
        lines += [f"  {r['task_id']}: {r['baseline']:.4g} -> {r['candidate']:.4g}" for r in result.regressed]
    return "\n".join(lines)

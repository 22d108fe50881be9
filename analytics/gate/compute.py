"""The gate's statistics: the decision on per-task differences (one-sided exact sign-flip mid-p, or a t bound
with a margin), the anytime-valid sequential test, and the result types. Pure: arrays in, dataclasses out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics import compare

GATE_METRICS = ("pass@1", "mean_score", "cost")
SIDES = ("one-sided", "two-sided")
EXIT_OK, EXIT_WORSE, EXIT_UNTESTABLE = 0, 1, 2
STOP_DELTA = 0.05  # the sequential gate passes early once "worse by 5 points or more" is ruled out
BET_FRACTIONS = np.array([0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.9])  # of the largest bet that cannot go bust


def order_by_first(first: Mapping[str, float], shared: Sequence[str] | np.ndarray) -> tuple[np.ndarray, str]:
    """Positions of ``shared`` (sorted task ids) in the order of each task's first attempt id (``first``; a task
    without one last), ties in task-id order: the order the candidate's log recorded its tasks."""
    at = pd.Series(first, dtype=float).reindex(np.asarray(shared, dtype=object)).fillna(np.inf).to_numpy()
    return np.argsort(at, kind="stable"), "log order"


def order_at(first: Any, positions: np.ndarray) -> tuple[np.ndarray, str]:
    """``order_by_first`` of a ``TaskColumn`` of first attempt ids (``analytics.diff.arrays``) and the shared tasks'
    positions on its index (in task-id order): the same order without a look-up of the task ids."""
    at = np.where(first.has[positions], first.data[positions], np.inf).astype(float)
    return np.argsort(at, kind="stable"), "log order"


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
    from scipy import stats as sps  # here, not at import: the Version diff's first view imports the gate, not its test

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
    mde = compare.observed_mde80(sd, n, alpha=alpha, sided=sided) + margin
    return Decision(float(p), method, sided, float(margin), float(bound), float(mde), sd)


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
    # past float's range (a long run of tasks far past a crossing: 66,667 at 10M) the wealth is inf, which is past
    # 1/alpha as it should be; only the path up to the first crossing is kept
    with np.errstate(over="ignore"):
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

"""Estimators that let a few human reviews correct a judge: prediction-powered inference, agreement with intervals,
Fleiss' kappa. Pure functions over arrays (docs/errors_and_judge.md).

**PPI++ for a mean** (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference", the mean
estimator with the power-tuning parameter): n attempts with a human label ``y`` and the judge's prediction ``f``,
N further attempts with the prediction only. The estimate is

    theta(lambda) = mean(y) + lambda * (mean(f_unlabelled) - mean(f_labelled))

which is unbiased for any fixed lambda when the labelled attempts are a random sample of the same population. Its
variance is ``var(y - lambda f) / n + lambda^2 var(f) / N``; the variance-minimising
``lambda = cov(y, f) / ((1 + n / N) var(f))`` (clipped to [0, 1]) is estimated on the labelled sample. lambda = 0
is the classical mean of the reviews alone; lambda = 1 is the original PPI. The interval is the normal one,
``theta +- z * se``; with few reviews (under ``MIN_LABELLED``) no interval is given, and the caller says how many
reviews are needed. A seeded simulation with a biased judge checks coverage (tests/test_ppi.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from analytics.stats import norm_ppf

MIN_LABELLED = 10


@dataclass(frozen=True)
class PPIEstimate:
    """A judge-based mean corrected by human labels: the estimate and its interval, the raw judge figure, and the
    classical (reviews only) estimate for comparison."""

    estimate: float
    lo: float
    hi: float
    judge: float  # the judge's own figure over every attempt (labelled and not)
    classical: float  # the mean of the human labels alone
    classical_lo: float
    classical_hi: float
    lam: float
    n_labelled: int
    n_unlabelled: int


def ppi_mean(
    y: Sequence[float] | np.ndarray,
    f_labelled: Sequence[float] | np.ndarray,
    f_unlabelled: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    lam: float | None = None,
) -> PPIEstimate:
    """PPI++ estimate of the mean of ``y`` over the population (see the module docstring).

    ``lam`` fixes lambda (None: the power-tuned value). NaN estimate and interval when fewer than
    ``MIN_LABELLED`` labels or no unlabelled attempt are given.
    """
    fl = np.asarray(f_labelled, dtype=float)
    fu = np.asarray(f_unlabelled, dtype=float)
    big_n = len(fu)
    everything = np.concatenate([fl, fu])
    nan = float("nan")
    return _estimate(
        np.asarray(y, dtype=float),
        fl,
        big_n=big_n,
        judge=float(everything.mean()) if len(everything) else nan,
        var_f=float(np.var(everything, ddof=1)) if len(everything) > 1 else nan,
        mean_fu=float(fu.mean()) if big_n else float(fl.mean()) if len(fl) else nan,
        var_fu=float(np.var(fu, ddof=1)) if big_n > 1 else 0.0,
        lam=lam,
        level=level,
    )


def ppi_mean_binary(
    y: Sequence[float] | np.ndarray,
    f_labelled: Sequence[float] | np.ndarray,
    n_unlabelled: int,
    n_unlabelled_true: int,
    *,
    level: float = 0.95,
) -> PPIEstimate:
    """``ppi_mean`` for a judge whose prediction is 0 or 1, with the unlabelled attempts given by their count and
    the count of ones instead of one value each: the means and variances of a 0/1 sample follow from its count and
    sum (``sum((x - m)^2) = s - s^2 / n``), so the estimate reads a count per run instead of every attempt. Equal
    to ``ppi_mean`` with ``n_unlabelled_true`` ones and the rest zeros, up to rounding (tests/test_ppi.py)."""
    fl = np.asarray(f_labelled, dtype=float)
    big_n, k_u = int(n_unlabelled), int(n_unlabelled_true)
    if not 0 <= k_u <= big_n:
        raise ValueError(f"{k_u} ones among {big_n} unlabelled predictions")
    total, ones = len(fl) + big_n, float(fl.sum()) + k_u
    sum_sq = float((fl**2).sum()) + k_u  # the labelled predictions need not be 0/1 here, the others are
    nan = float("nan")
    return _estimate(
        np.asarray(y, dtype=float),
        fl,
        big_n=big_n,
        judge=ones / total if total else nan,
        var_f=(sum_sq - ones**2 / total) / (total - 1) if total > 1 else nan,
        mean_fu=k_u / big_n if big_n else float(fl.mean()) if len(fl) else nan,
        var_fu=(k_u - k_u**2 / big_n) / (big_n - 1) if big_n > 1 else 0.0,
        lam=None,
        level=level,
    )


def _estimate(
    yl: np.ndarray,
    fl: np.ndarray,
    *,
    big_n: int,
    judge: float,
    var_f: float,
    mean_fu: float,
    var_fu: float,
    lam: float | None,
    level: float,
) -> PPIEstimate:
    """The PPI++ estimate from the reviewed attempts' truths ``yl`` and predictions ``fl`` and the moments of the
    predictions: ``var_f`` over every attempt, ``mean_fu`` and ``var_fu`` over the ``big_n`` unreviewed ones."""
    n = len(yl)
    nan = float("nan")
    if n < MIN_LABELLED:
        mean_y = float(yl.mean()) if n else nan
        return PPIEstimate(nan, nan, nan, judge, mean_y, nan, nan, nan, n, big_n)
    z = norm_ppf(0.5 + level / 2)  # scipy.stats.norm.ppf to the last bit, without importing scipy.stats
    if big_n == 0:  # every attempt reviewed: the reviews are the truth's estimate (lambda plays no part)
        lam = 0.0
    if lam is None:
        cov = float(np.cov(yl, fl, ddof=1)[0, 1]) if n > 1 else 0.0
        lam = 0.0 if var_f <= 0 else min(1.0, max(0.0, cov / ((1 + n / big_n) * var_f)))
    theta = float(yl.mean() + lam * (mean_fu - fl.mean()))
    var_u = lam**2 * var_fu / big_n if big_n > 1 else 0.0
    var = float(np.var(yl - lam * fl, ddof=1)) / n + var_u
    se = float(np.sqrt(max(var, 0.0)))
    c_se = float(np.std(yl, ddof=1)) / np.sqrt(n)
    return PPIEstimate(
        estimate=theta,
        lo=theta - z * se,
        hi=theta + z * se,
        judge=judge,
        classical=float(yl.mean()),
        classical_lo=float(yl.mean() - z * c_se),
        classical_hi=float(yl.mean() + z * c_se),
        lam=float(lam),
        n_labelled=n,
        n_unlabelled=big_n,
    )


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa of a subjects x categories table of how many raters put each subject in each category; the
    number of raters may differ between subjects (each needs at least 2): per subject
    ``P_i = (sum_j n_ij^2 - m_i) / (m_i (m_i - 1))``, ``P_e = sum_j p_j^2`` with p_j the share of all ratings in
    category j. Equal to statsmodels' ``fleiss_kappa`` when every subject has the same number of raters. NaN when
    there is no subject or every rating is the same category."""
    t = np.asarray(counts, dtype=float)
    m = t.sum(axis=1)
    t = t[m >= 2]
    m = m[m >= 2]
    if len(t) == 0:
        return float("nan")
    p_i = ((t**2).sum(axis=1) - m) / (m * (m - 1))
    p_j = t.sum(axis=0) / m.sum()
    p_e = float((p_j**2).sum())
    if p_e >= 1.0:
        return float("nan")
    return float((p_i.mean() - p_e) / (1 - p_e))


def bootstrap_interval(
    stat: Callable[[np.ndarray], float], n: int, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat(indices)`` over ``n`` items (seeded); resamples where the statistic
    is undefined are left out; (NaN, NaN) below 2 items or when none is defined."""
    if n < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    values = np.array([stat(rng.integers(0, n, size=n)) for _ in range(n_boot)], dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)

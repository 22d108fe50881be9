"""Prediction-powered inference and agreement statistics: coverage of the corrected intervals in a seeded
simulation with a biased judge (where the judge's raw figure misses the truth), lambda's two ends, and Fleiss'
kappa against statsmodels."""

from __future__ import annotations

import numpy as np
import pytest

from analytics import ppi

COVERAGE_FLOOR = 0.93


def _biased_world(rng: np.random.Generator, *, n_pop: int, truth: float) -> tuple[np.ndarray, np.ndarray]:
    """Human truth y and a judge f that passes 25% of the failures and fails 10% of the passes (biased upward)."""
    y = (rng.random(n_pop) < truth).astype(float)
    flip = np.where(y == 1, rng.random(n_pop) < 0.10, rng.random(n_pop) < 0.25)
    return y, np.where(flip, 1 - y, y)


@pytest.mark.parametrize(("n_labelled", "truth"), [(60, 0.3), (200, 0.55)])
def test_corrected_intervals_cover_the_truth_where_the_judge_does_not(n_labelled: int, truth: float) -> None:
    rng = np.random.default_rng(20261126)
    n_pop, reps = 4000, 400
    covered = judge_covered = 0
    widths, classical_widths = [], []
    for _ in range(reps):
        y, f = _biased_world(rng, n_pop=n_pop, truth=truth)
        target = y.mean()  # the population's true share (what a full human review would find)
        lab = rng.choice(n_pop, n_labelled, replace=False)
        rest = np.setdiff1d(np.arange(n_pop), lab)
        est = ppi.ppi_mean(y[lab], f[lab], f[rest])
        covered += est.lo <= target <= est.hi
        judge_se = np.sqrt(est.judge * (1 - est.judge) / n_pop)
        judge_covered += abs(est.judge - target) <= 1.96 * judge_se
        widths.append(est.hi - est.lo)
        classical_widths.append(est.classical_hi - est.classical_lo)
    assert covered / reps >= COVERAGE_FLOOR, covered / reps
    assert judge_covered / reps < 0.2  # the raw judge figure, taken at its word, is wrong
    assert np.mean(widths) < np.mean(classical_widths)  # the judge's predictions narrow the interval


def test_lambda_zero_is_the_classical_mean_and_one_is_plain_ppi() -> None:
    rng = np.random.default_rng(1)
    y, f = _biased_world(rng, n_pop=500, truth=0.4)
    zero = ppi.ppi_mean(y[:50], f[:50], f[50:], lam=0.0)
    assert zero.estimate == pytest.approx(y[:50].mean())
    one = ppi.ppi_mean(y[:50], f[:50], f[50:], lam=1.0)
    assert one.estimate == pytest.approx(y[:50].mean() + f[50:].mean() - f[:50].mean())
    tuned = ppi.ppi_mean(y[:50], f[:50], f[50:])
    assert 0.0 <= tuned.lam <= 1.0 and tuned.judge == pytest.approx(f.mean())


def test_too_few_reviews_give_no_interval() -> None:
    est = ppi.ppi_mean([1, 0, 1], [1, 1, 1], [1, 0, 1, 1])
    assert np.isnan(est.estimate) and np.isnan(est.lo) and est.n_labelled == 3
    assert est.judge == pytest.approx(6 / 7)


def test_fleiss_kappa_matches_statsmodels() -> None:
    from statsmodels.stats.inter_rater import fleiss_kappa

    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])  # fmt: skip
    assert ppi.fleiss_kappa(table) == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert ppi.fleiss_kappa(table) == pytest.approx(0.2099, abs=1e-4)  # Fleiss (1971), the textbook example
    assert np.isnan(ppi.fleiss_kappa(np.array([[3, 0], [2, 0]])))  # every rating the same: undefined
    varying = np.array([[2, 0], [1, 1], [0, 3], [3, 0]])  # two and three raters mixed
    assert -1.0 <= ppi.fleiss_kappa(varying) <= 1.0


def test_bootstrap_interval_is_seeded() -> None:
    x = np.arange(30, dtype=float)
    a = ppi.bootstrap_interval(lambda ix: float(x[ix].mean()), 30, n_boot=300, seed=4)
    assert a == ppi.bootstrap_interval(lambda ix: float(x[ix].mean()), 30, n_boot=300, seed=4)
    assert a[0] < 14.5 < a[1]

"""Comparison statistics against reference libraries (statsmodels, scipy) and a simulation with known truth."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from analytics import compare, stats


def test_comparison_set_is_the_most_common_task_set_ties_to_the_larger() -> None:
    sets = {"a": {"t1", "t2"}, "b": {"t1", "t2"}, "c": {"t1", "t2", "t3"}, "h": {"t9"}, "z": set()}
    assert compare.comparison_set(sets) == {"t1", "t2"}
    # a run on a superset is compared on the common tasks (issue 28; before, the larger set won and "a" was apart)
    assert compare.comparison_set({"a": {"t1"}, "c": {"t1", "t2"}}) == {"t1"}
    # only eligible runs vote: a human on other tasks does not decide
    assert compare.comparison_set({"h1": {"x"}, "h2": {"x"}, "a": {"t"}}, eligible=["a"]) == {"t"}
    assert compare.comparison_set({}) == frozenset()


@pytest.mark.parametrize(("worse", "better"), [(1, 6), (0, 5), (3, 3), (12, 30), (7, 0)])
def test_mcnemar_matches_statsmodels(worse: int, better: int) -> None:
    table = [[10, worse], [better, 4]]
    assert compare.mcnemar_exact(worse, better) == pytest.approx(mcnemar(table, exact=True).pvalue)


def _exact_sign_flip(d: np.ndarray) -> float:
    """Every sign pattern enumerated: the exact two-sided p of |sum(d)|."""
    t = abs(d.sum())
    flips = np.array(list(itertools.product([-1.0, 1.0], repeat=d.size)))
    return float((np.abs(flips @ d) >= t - 1e-12).mean())


def test_sign_flip_matches_exact_enumeration_and_scipy() -> None:
    rng = np.random.default_rng(4)
    d = np.round(rng.normal(0.3, 1.0, 12), 3)
    exact = _exact_sign_flip(d)
    ref = sps.permutation_test(
        (d,), np.sum, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
    ).pvalue
    assert exact == pytest.approx(ref)
    got = compare.sign_flip_pvalues(d, np.random.default_rng(0), n_perm=20_000)[0]
    assert got == pytest.approx(exact, abs=0.01)  # Monte Carlo: 3 standard errors at 20,000 flips


def test_sign_flip_on_one_binary_sample_is_mcnemar() -> None:
    d = np.array([1.0] * 9 + [-1.0] * 2 + [0.0] * 20)
    assert _exact_sign_flip(d[d != 0]) == pytest.approx(compare.mcnemar_exact(2, 9))
    mc = compare.sign_flip_pvalues(d, np.random.default_rng(1), n_perm=20_000)[0]
    assert mc == pytest.approx(compare.mcnemar_exact(2, 9), abs=0.01)


def test_paired_test_untestable_without_shared_tasks() -> None:
    test = compare.paired_test({"a": 1.0}, {"b": 0.0})
    assert not test.is_testable and np.isnan(test.p_value) and test.method == "untestable"
    same = compare.paired_test({"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0})
    assert same.p_value == 1.0 and same.diff == 0.0


def test_paired_test_is_symmetric_and_seeded() -> None:
    rng = np.random.default_rng(8)
    a = {f"t{i}": float(v) for i, v in enumerate(rng.random(40))}
    b = {t: v + float(rng.normal(0.1, 0.2)) for t, v in a.items()}
    ab, ba = compare.paired_test(a, b), compare.paired_test(b, a)
    assert ab.p_value == ba.p_value and ab.diff == pytest.approx(-ba.diff)
    assert ab.ci95[0] == pytest.approx(-ba.ci95[1]) and ab == compare.paired_test(a, b)


def test_holm_matches_statsmodels() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.2, 0.005, np.nan])
    got = compare.holm(p)
    want = multipletests(p[:-1], method="holm")[1]
    assert np.allclose(got[:-1], want) and np.isnan(got[-1])


def test_clustered_n_eff_matches_statsmodels_cluster_se_and_wilson() -> None:
    rng = np.random.default_rng(2)
    n_tasks, k = 40, 3
    p_task = rng.beta(2, 1, n_tasks)
    y = rng.binomial(1, np.repeat(p_task, k)).astype(float)
    groups = np.repeat(np.arange(n_tasks), k)
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    means = y.reshape(n_tasks, k).mean(axis=1)
    p = means.mean()
    n_eff = compare.clustered_n_eff(means, np.full(n_tasks, k))
    assert p * (1 - p) / n_eff == pytest.approx(float(fit.bse[0]) ** 2)
    lo, hi = compare.wilson_clustered(means, np.full(n_tasks, k))
    ref = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (lo, hi) == pytest.approx(ref)


def test_clustered_n_eff_bounds() -> None:
    assert compare.clustered_n_eff(np.array([1 / 3] * 10), np.full(10, 3)) == 30  # no variance: all samples
    assert compare.clustered_n_eff(np.ones(10)) == 10  # p = 1
    rng = np.random.default_rng(0)
    assert compare.clustered_n_eff(rng.random(30), np.full(30, 2)) <= 60


def test_pass_at_1_clustered_wilson_covers_known_truth() -> None:
    """Simulated runs, 3 samples per task, task success rates ~ Beta: the 95% interval covers the truth."""
    rng = np.random.default_rng(20260123)
    covered, reps = 0, 0
    for n_tasks, a, b in ((50, 2.0, 1.0), (100, 0.5, 0.5), (30, 4.0, 1.0)):
        truth = a / (a + b)
        for _ in range(400):
            means = rng.binomial(3, rng.beta(a, b, n_tasks)) / 3
            lo, hi = compare.wilson_clustered(means, np.full(n_tasks, 3))
            covered += lo <= truth <= hi
            reps += 1
    assert 0.93 <= covered / reps <= 0.98, covered / reps


def test_pass_at_k_stable_for_many_samples() -> None:
    assert stats.pass_at_k(np.array([1200]), np.array([1]), 600)[0] == pytest.approx(0.5, abs=1e-12)
    n = np.full(4, 5000)
    c = np.array([0, 1, 2500, 5000])
    got = stats.pass_at_k(n, c, 10)
    assert np.isfinite(got).all() and got[0] == 0.0 and got[-1] == 1.0
    assert got[1] == pytest.approx(10 / 5000)  # one success: k/n exactly
    assert got[2] == pytest.approx(1 - np.prod((2500 - np.arange(10)) / (5000 - np.arange(10))))
    assert stats.pass_hat_k(n, c, 10)[1] == 0.0 and stats.pass_hat_k(n, c, 10)[3] == 1.0


def test_fisher_z_interval_by_hand() -> None:
    lo, hi = compare.fisher_z_ci(0.77, 10)
    half = sps.norm.ppf(0.975) / np.sqrt(7)
    assert (lo, hi) == pytest.approx((np.tanh(np.arctanh(0.77) - half), np.tanh(np.arctanh(0.77) + half)))
    assert round(lo, 2) == 0.27 and round(hi, 2) == 0.94
    assert np.isnan(compare.fisher_z_ci(0.5, 3)[0])


def test_sign_flip_normal_limit_matches_the_permutation_distribution() -> None:
    rng = np.random.default_rng(12)
    d = rng.normal(0.05, 1.0, (1500, 3)) * (rng.random((1500, 3)) < 0.5)
    mc = compare.sign_flip_pvalues(d, np.random.default_rng(0), n_perm=20_000)
    normal = compare._sign_flip_normal(d)
    assert np.allclose(mc, normal, atol=0.01), (mc, normal)
    big = np.concatenate([d, d])  # above stats.BOOTSTRAP_MAX_TASKS rows: the normal limit is used
    assert np.array_equal(compare.sign_flip_pvalues(big, np.random.default_rng(0)), compare._sign_flip_normal(big))


def test_differences_are_the_plain_ones_with_last_bit_gaps_set_to_zero() -> None:
    """``compare.differences`` (candidates found by the rows' largest magnitude, then each checked by its own) equals
    the difference with every gap within 1e-12 of the larger magnitude set to 0, on values of very different sizes;
    NaN and infinities stay."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        x = rng.random(50) * 10.0 ** rng.integers(-6, 6)
        x[rng.integers(0, 50, 3)] *= 1e6  # a few large values: their scale must not tie the small ones
        y = x.copy()
        nudged = rng.integers(0, 50, 10)
        y[nudged] = np.nextafter(y[nudged], np.inf)
        y[rng.integers(0, 50, 5)] += rng.random(5)
        want = np.where(np.abs(y - x) <= 1e-12 * np.maximum(np.abs(x), np.abs(y)), 0.0, y - x)
        assert np.array_equal(compare.differences(y, x), want)
    got = compare.differences(np.array([1.0, np.nan, 0.9999999999999999, 2.0]), np.array([1.0, 1.0, 1.0, np.inf]))
    assert got[0] == got[2] == 0.0 and np.isnan(got[1]) and got[3] == -np.inf
    assert compare.differences(np.array([]), np.array([])).size == 0

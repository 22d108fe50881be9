"""Pass@k, pass^k and intervals against hand computations and AD-Bench Table 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analytics import stats


def test_pass_at_k_matches_hand_computation() -> None:
    # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert stats.pass_at_k(np.array([5]), np.array([2]), 2)[0] == pytest.approx(0.7)
    # k=1 is the plain success rate
    assert stats.pass_at_k(np.array([4]), np.array([3]), 1)[0] == pytest.approx(0.75)
    # all correct or none
    assert stats.pass_at_k(np.array([3, 3]), np.array([3, 0]), 3).tolist() == [1.0, 0.0]


def test_pass_at_k_undefined_when_fewer_samples_than_k() -> None:
    out = stats.pass_at_k(np.array([2, 5]), np.array([1, 1]), 3)
    assert math.isnan(out[0]) and out[1] == pytest.approx(1 - math.comb(4, 3) / math.comb(5, 3))


def test_pass_hat_k_matches_hand_computation() -> None:
    # n=4, c=2, k=2: C(2,2)/C(4,2) = 1/6
    assert stats.pass_hat_k(np.array([4]), np.array([2]), 2)[0] == pytest.approx(1 / 6)
    assert stats.pass_hat_k(np.array([4]), np.array([1]), 2)[0] == 0.0
    assert stats.pass_hat_k(np.array([4]), np.array([3]), 1)[0] == pytest.approx(0.75)


def _tasks(n_tasks: int, successes: int, solved: int) -> np.ndarray:
    """Per-task success counts out of 3 with the given totals (a feasible spread)."""
    counts = np.zeros(n_tasks, dtype=int)
    counts[:solved] = 1
    left = successes - solved
    for i in range(solved):
        add = min(2, left)
        counts[i] += add
        left -= add
    assert left == 0 and counts.sum() == successes
    return counts


@pytest.mark.parametrize(
    ("n_tasks", "successes", "solved", "pass1", "pass3"),
    [
        (24, 56, 22, 77.8, 91.7),  # L1
        (47, 105, 43, 74.5, 91.5),  # L2
        (29, 43, 18, 49.4, 62.1),  # L3
    ],
)
def test_adbench_table2_gemini_row(n_tasks: int, successes: int, solved: int, pass1: float, pass3: float) -> None:
    c = _tasks(n_tasks, successes, solved)
    n = np.full(n_tasks, 3)
    assert round(100 * stats.pass_at_k(n, c, 1).mean(), 1) == pass1
    assert round(100 * stats.pass_at_k(n, c, 3).mean(), 1) == pass3


def test_adbench_table2_gemini_overall() -> None:
    c = np.concatenate([_tasks(24, 56, 22), _tasks(47, 105, 43), _tasks(29, 43, 18)])
    n = np.full(100, 3)
    assert round(100 * stats.pass_at_k(n, c, 1).mean(), 1) == 68.0
    assert round(100 * stats.pass_at_k(n, c, 3).mean(), 1) == 83.0


def test_wilson_interval_hand_computation() -> None:
    lo, hi = stats.wilson(0.5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = stats.wilson(0.0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)


def test_bootstrap_is_seeded_and_covers_the_mean() -> None:
    x = np.random.default_rng(1).normal(2.0, 1.0, 200)
    a = stats.bootstrap_mean_ci(x, stats.stable_rng(0, "run", "all"))
    b = stats.bootstrap_mean_ci(x, stats.stable_rng(0, "run", "all"))
    assert a == b
    assert a[0] < x.mean() < a[1]
    assert a[1] - a[0] == pytest.approx(2 * 1.96 * x.std(ddof=1) / np.sqrt(200), rel=0.2)


def test_intervals_overlap() -> None:
    assert stats.intervals_overlap((0.1, 0.5), (0.4, 0.9))
    assert not stats.intervals_overlap((0.1, 0.3), (0.4, 0.9))
    assert not stats.intervals_overlap((float("nan"), 0.3), (0.1, 0.9))


def test_resample_weights_count_draws_per_resample() -> None:
    w = stats.resample_weights(7, stats.stable_rng(0, "w"), n_boot=50)
    assert w.shape == (50, 7) and (w.sum(axis=1) == 7).all() and (w >= 0).all()
    assert (w == stats.resample_weights(7, stats.stable_rng(0, "w"), n_boot=50)).all()


@pytest.mark.parametrize(("n_units", "n_boot"), [(1, 3), (7, 50), (2001, 40), (66_667, 3), (300_001, 9)])
def test_resample_weights_equal_the_counts_of_the_seeded_draw(n_units: int, n_boot: int) -> None:
    """The counts are those of the draw ``rng.integers`` gives in one call (the former single bincount over every
    resample, with an offset per resample, as the reference), drawn in blocks of resamples or not (300,001 units:
    more than one block): a faster count never changes an interval."""
    idx = stats.stable_rng(3, "w", str(n_units)).integers(0, n_units, size=(n_boot, n_units))
    offsets = (np.arange(n_boot) * n_units)[:, None]
    expected = np.bincount((idx + offsets).ravel(), minlength=n_boot * n_units).reshape(n_boot, n_units)
    got = stats.resample_weights(n_units, stats.stable_rng(3, "w", str(n_units)), n_boot=n_boot)
    assert got.dtype == float and np.array_equal(got, expected.astype(float))


@pytest.mark.parametrize("seed", range(8))
def test_unique_keys_equal_numpy_unique(seed: int) -> None:
    """The (samples, successes) keys' distinct values and inverse, by a table or by a sort, are ``np.unique``'s."""
    rng = np.random.default_rng([33, 21, seed])
    size = int(rng.integers(0, 5000))
    top = int(rng.choice([1, 30, 10**9]))  # 10**9: a range too wide for the table (the sort)
    keys = rng.integers(0, top, size=size).astype(np.int64)
    found, inverse = stats._unique_keys(keys)
    want, want_inverse = np.unique(keys, return_inverse=True)
    assert np.array_equal(found, want) and np.array_equal(inverse, np.ravel(want_inverse))
    assert found.dtype == want.dtype


def test_bootstrap_mean_cis_matches_a_hand_loop_over_the_same_draw() -> None:
    rng = np.random.default_rng(4)
    x = np.column_stack([rng.normal(2.0, 1.0, 60), rng.gamma(2.0, 0.1, 60)])
    got = stats.bootstrap_mean_cis(x, stats.stable_rng(1, "s"), n_boot=400)
    # the same resamples, drawn and averaged one by one
    idx = stats.stable_rng(1, "s").integers(0, 60, size=(400, 60))
    for j in range(2):
        means = x[idx, j].mean(axis=1)
        assert got[j] == pytest.approx(np.quantile(means, [0.025, 0.975]))
    assert (got == stats.bootstrap_mean_cis(x, stats.stable_rng(1, "s"), n_boot=400)).all()


def test_bootstrap_mean_cis_nan_cells_single_values_and_the_normal_limit() -> None:
    x = np.full((5, 4), np.nan)
    x[:, 0] = [1.0, 2.0, 3.0, np.nan, 5.0]  # NaN cells are left out of each resample's mean
    x[2, 1] = 7.0  # one value: a zero-width interval
    out = stats.bootstrap_mean_cis(x, stats.stable_rng(0), n_boot=300)
    assert 1.0 <= out[0, 0] < np.nanmean(x[:, 0]) < out[0, 1] <= 5.0
    assert list(out[1]) == [7.0, 7.0]
    assert np.isnan(out[2]).all() and np.isnan(out[3]).all()
    big = np.random.default_rng(2).normal(0.0, 1.0, (stats.BOOTSTRAP_MAX_TASKS + 1, 1))
    lo, hi = stats.bootstrap_mean_cis(big, stats.stable_rng(0))[0]
    assert (lo, hi) == pytest.approx(stats.normal_mean_ci(big[:, 0]))
    assert hi - lo == pytest.approx(2 * stats.Z95 * big.std(ddof=1) / np.sqrt(big.shape[0]))


def test_the_written_out_quantiles_equal_scipys_and_scipy_stats_is_imported_on_first_use():
    """Z95 and Z80 are literals so that importing the statistics does not import scipy.stats (the app's start-up):
    they must be scipy's quantiles to the last bit; the distribution functions written without scipy (t, normal and
    binomial) agree with scipy's to 1e-12; and a fresh interpreter importing the leaderboard's statistics must not
    have scipy.stats after the leaderboard's tests (the max-gap test's normal range included)."""
    import subprocess
    import sys

    from scipy import stats as sps

    from analytics import compare

    assert float(sps.norm.ppf(0.975)) == stats.Z95
    assert float(sps.norm.ppf(0.8)) == compare.Z80
    assert stats.scipy_stats() is sps
    for n in [*range(1, 60), 99, 100, 1000, 2000, 2001, 5000, 66_667]:
        for k in {0, 1, n // 3, n // 2 - 1, n // 2, n - 1} - {-1}:
            if 0 <= k < n:
                want = float(sps.binom.cdf(k, n, 0.5))
                assert stats.binom_half_cdf(k, n) == pytest.approx(want, rel=1e-12, abs=1e-300), (k, n)
    x = np.array([-np.inf, -40.0, -8.5, -1.0, -0.0, 0.0, 1e-300, 0.3, 1.96, 8.5, 38.0, 40.0, np.inf, np.nan])
    np.testing.assert_allclose(stats.norm_sf(x), sps.norm.sf(x), rtol=1e-12, atol=1e-300)  # 38: subnormal or 0
    for q in (0.5 + np.array([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]) / 2.0).tolist() + [0.01, 0.3]:
        assert stats.norm_ppf(q) == pytest.approx(float(sps.norm.ppf(q)), rel=1e-12)
        for df in [1, 2, 3, 5, 9, 10, 29, 30, 99, 1000, 66_666, 1e6]:
            assert stats.t_ppf(q, df) == pytest.approx(float(sps.t.ppf(q, df=df)), rel=1e-12), (q, df)
    code = (
        "import sys; import numpy as np; import analytics.compare as c, analytics.leaderboard; "
        "c.mcnemar_exact(3, 9); c.score_interval(np.array([0.2, 0.5, 0.9])); c.fisher_z_ci(0.4, 30); "
        "print('scipy.special' in sys.modules); x = np.random.default_rng(0).random((400, 8)); "
        "c.max_gap_test(x, leader=int(x.mean(0).argmax()), rng=np.random.default_rng(1)); "
        "print('scipy.special' in sys.modules); c.MAX_GAP_CELLS = 10**9; "
        "c.max_gap_test(x[:20], leader=int(x[:20].mean(0).argmax()), rng=np.random.default_rng(1)); "
        "print('scipy.special' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the max-gap test's normal range (400 x 8 cells) and its permutations: neither imports scipy.special (so neither
    # scipy.stats), nor do the sign test, the score interval's t quantile and the Fisher interval
    assert done.stdout.split() == ["False", "False", "False"]


@pytest.mark.parametrize("seed", range(6))
def test_pass_rates_equal_pass_at_k_and_pass_hat_k_per_k(seed: int) -> None:
    """The grouped Pass@k / pass^k of every k (one search for the distinct (n, c) pairs) equal the per-k
    functions bit for bit, with tasks of fewer samples than k, NaN counts, and no row at all."""
    rng = np.random.default_rng([33, seed])
    size = int(rng.integers(0, 300))
    n = rng.integers(1, 25, size).astype(float)
    c = np.floor(rng.random(size) * (n + 1))
    n[rng.random(size) < 0.05] = np.nan
    c[rng.random(size) < 0.05] = np.nan
    ks = [1, 2, 3, 5, 10, 20, 50]
    full = np.isfinite(n) & np.isfinite(c)
    for n_of, c_of in ((n, c), (n[full], c[full])):  # and with no NaN count (every row has its pairs' values)
        at, hat = stats.pass_rates(n_of, c_of, ks)
        assert list(at) == ks and list(hat) == ks
        for k in ks:
            np.testing.assert_array_equal(at[k], stats.pass_at_k(n_of, c_of, k))
            np.testing.assert_array_equal(hat[k], stats.pass_hat_k(n_of, c_of, k))


def test_the_distribution_functions_without_scipy_agree_with_scipy_over_grids() -> None:
    """``t_ppf``, ``norm_ppf``, ``ndtr`` / ``norm_sf`` and ``binom_half_cdf`` replace scipy.special (whose import was
    0.2-0.7 s of the leaderboard's first render): within 1e-12 of scipy over grids, and of mpmath's 40-digit values
    near the median, where scipy's own t quantile is off (4e-4 at 4 degrees of freedom and q = 0.5 + 1e-7)."""
    import mpmath
    from scipy import special

    qs = [1e-12, 1e-6, 0.001, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.45, 0.55, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995]
    qs += [0.999, 1 - 1e-6, 1 - 1e-10]
    dfs = [*range(1, 41), 49, 50, 99, 100, 101, 500, 999, 1000, 4999, 5000, 5001, 20_000, 66_666, 66_667, 999_999]
    for df in dfs:
        for q in qs:
            assert stats.t_ppf(q, df) == pytest.approx(float(special.stdtrit(df, q)), rel=1e-12), (q, df)
    mpmath.mp.dps = 40
    for df in (1, 2, 4, 7, 30, 1000, 66_666):
        for q in (0.5 + 1e-7, 0.5 - 1e-9, 0.51):
            half, nu = mpmath.mpf(1) / 2, mpmath.mpf(df)
            front = mpmath.gamma((nu + 1) / 2) / (mpmath.sqrt(nu * mpmath.pi) * mpmath.gamma(nu / 2))

            def cdf(t, front=front, half=half, nu=nu, q=q):  # noqa: ANN001, ANN202 -- mpmath's numbers
                return half + t * front * mpmath.hyp2f1(half, (nu + 1) / 2, 3 * half, -t * t / nu) - mpmath.mpf(q)

            want = mpmath.findroot(cdf, stats.t_ppf(q, df))
            assert stats.t_ppf(q, df) == pytest.approx(float(want), rel=1e-12), (q, df)
    assert stats.t_ppf(0.5, 7) == 0.0 and stats.t_ppf(0.3, 2.5) == float(special.stdtrit(2.5, 0.3))  # other df: scipy
    grid = np.concatenate([np.logspace(-300, -1, 120), np.linspace(0.01, 0.99, 99), 1 - np.logspace(-16, -1, 40)])
    for q in grid:
        assert stats.norm_ppf(float(q)) == pytest.approx(float(special.ndtri(q)), rel=1e-12), q
    assert stats.norm_ppf(0.5) == 0.0 and stats.norm_ppf(0.0) == -np.inf and np.isnan(stats.norm_ppf(1.5))
    x = np.linspace(-37.0, 37.0, 20_001)
    np.testing.assert_allclose(stats.ndtr(x), special.ndtr(x), rtol=1e-12, atol=0)
    assert stats.ndtr(np.array([[0.0, np.nan]])).shape == (1, 2) and np.isnan(stats.ndtr(np.nan))
    from fractions import Fraction

    from scipy import stats as sps

    for n in [2001, 3000, 10_000, 100_001]:
        for k in [0, 1, 5, 600, n // 3, n // 2 - 400, n // 2 - 1, n // 2, n // 2 + 1, n - 2, n - 1]:
            if n <= 10_000:  # the exact sum (scipy's binomial cdf is itself off by up to 2e-12 here)
                term, total = 1, 1
                for i in range(k):
                    term = term * (n - i) // (i + 1)
                    total += term
                want = float(Fraction(total, 1 << n))
            else:
                want = float(sps.binom.cdf(k, n, 0.5))
            assert stats.binom_half_cdf(k, n) == pytest.approx(want, rel=1e-12, abs=1e-300), (k, n)

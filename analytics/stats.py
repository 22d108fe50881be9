"""Small, tested statistics used across reports: Pass@k, pass^k, Wilson and bootstrap intervals."""

from __future__ import annotations

import zlib
from types import ModuleType

import numpy as np

# The normal's 97.5% quantile, float(scipy.stats.norm.ppf(0.975)) written out (tests/test_stats.py checks it): a
# literal, so importing this module does not import scipy.stats (0.6-0.9 s), which the app's first page seldom needs.
Z95 = 1.959963984540054
BOOTSTRAP_MAX_TASKS = 2000  # above this a normal interval replaces the bootstrap (they agree; see README)


def scipy_stats() -> ModuleType:
    """``scipy.stats``, imported on first use: it costs 0.6-0.9 s of the app's start-up, and most calls of the
    statistics here never reach a distribution function (``analytics.compare`` imports it through this too)."""
    from scipy import stats as sps

    return sps


def t_ppf(q: float, df: float) -> float:
    """Student's t quantile, ``scipy.stats.t.ppf(q, df)`` to the last bit (it is ``scipy.special.stdtrit(df, q)``
    for 0 < q < 1 and df > 0) without importing scipy.stats: scipy.special costs a third of it."""
    from scipy import special

    return float(special.stdtrit(df, q))


def binom_half_cdf(k: int, n: int) -> float:
    """``scipy.stats.binom.cdf(k, n, 0.5)`` for 0 <= k < n, to the last bit: the function scipy.stats evaluates
    there (``scipy.special``'s ``_binom_cdf`` of floor(k)), without importing scipy.stats (tests/test_stats.py
    checks it against scipy.stats on a grid, so a scipy that moved it fails there)."""
    from scipy.special import _ufuncs

    return float(_ufuncs._binom_cdf(float(k), float(n), 0.5))


def norm_sf(x: np.ndarray) -> np.ndarray:
    """The standard normal's upper tail, ``scipy.stats.norm.sf(x)`` to the last bit (``scipy.special.ndtr(-x)``;
    NaN where x is NaN)."""
    from scipy import special

    return np.asarray(special.ndtr(-np.asarray(x, dtype=float)))


def norm_ppf(q: float) -> float:
    """The standard normal's quantile, ``scipy.stats.norm.ppf(q)`` to the last bit (``scipy.special.ndtri``)."""
    from scipy import special

    return float(special.ndtri(q))


# The grid of the normal range's integrals: the trapezoid rule on a uniform grid converges geometrically for smooth
# integrands that vanish at both ends (here a normal density times powers of normal tails); a step of 1/64 over
# [-12, 12] agrees with scipy's adaptive quadrature to about 1e-13 (tests/test_stats.py).
_RANGE_STEP = 1.0 / 64.0
_RANGE_Z = np.arange(-12.0, 12.0 + _RANGE_STEP / 2, _RANGE_STEP)


def normal_range_sf(w: np.ndarray | float, k: int) -> np.ndarray:
    """``P(R > w)`` for ``R`` the range (max - min) of ``k`` independent standard normals: Tukey's studentized
    range with unlimited degrees of freedom, ``scipy.stats.studentized_range.sf(w, k, df)`` for ``df`` above
    100,000 (where scipy evaluates this same limit) without importing scipy.stats (0.6-0.9 s of the app's start).

    ``P(R > w) = k * int phi(z) [(1 - Phi(z))^(k-1) - (Phi(z + w) - Phi(z))^(k-1)] dz`` (the run with the lowest
    value at z, the others above it, and not all within w of it), written with ``a = 1 - Phi(z)`` and
    ``c = 1 - Phi(z + w)`` as ``-a^(k-1) expm1((k-1) log1p(-c/a))`` so that small tails keep their digits
    (scipy's ``1 - cdf`` stops at about 1e-12). 1 for w <= 0; NaN where w is NaN.
    """
    from scipy import special

    w_arr = np.atleast_1d(np.asarray(w, dtype=float))
    out = np.ones(w_arr.shape)
    out[np.isnan(w_arr)] = np.nan
    if k < 2:
        out[w_arr >= 0] = 0.0
        return out.reshape(np.shape(w))
    pos = np.flatnonzero(w_arr > 0)
    if pos.size:
        z = _RANGE_Z
        a = special.ndtr(-z)  # 1 - Phi(z), exact in the upper tail
        dens = np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_a = np.log(a)
            c = special.ndtr(-(z[None, :] + w_arr[pos, None]))  # 1 - Phi(z + w)
            ratio = np.where(a[None, :] > 0, c / a[None, :], 0.0)
            term = -np.exp((k - 1) * log_a)[None, :] * np.expm1((k - 1) * np.log1p(-np.minimum(ratio, 1.0)))
        term = np.nan_to_num(term, nan=0.0, posinf=0.0, neginf=0.0)
        out[pos] = np.clip(k * _RANGE_STEP * (term * dens[None, :]).sum(axis=1), 0.0, 1.0)
    return out.reshape(np.shape(w))


def normal_range_isf(p: float, k: int) -> float:
    """The ``w`` with ``normal_range_sf(w, k) == p`` (0 < p < 1): the range's (1 - p) quantile, as
    ``scipy.stats.studentized_range.ppf(1 - p, k, df)`` for df above 100,000, by bisection to the last bit."""
    if not 0.0 < p < 1.0 or k < 2:
        return float("nan")
    lo, hi = 0.0, 1.0
    while float(normal_range_sf(hi, k)[()]) > p:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if float(normal_range_sf(mid, k)[()]) > p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _per_pair(n: np.ndarray, c: np.ndarray, k: int, fn) -> np.ndarray:  # noqa: ANN001 - a small callable
    """Apply ``fn(n, c)`` once per distinct (n, c) pair with ``n >= k``; NaN where ``n < k``."""
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    out = np.full(n.shape, np.nan)
    ok = (n >= k) & np.isfinite(n) & np.isfinite(c)
    if not ok.any():
        return out
    # one integer key per (n, c) pair: np.unique on a 1-D array is much faster than on rows (axis=0)
    ni, ci = n[ok].astype(np.int64), c[ok].astype(np.int64)
    width = int(ci.max()) + 1
    keys, inverse = _unique_keys(ni * width + ci)
    values = np.array([fn(int(key // width), int(key % width)) for key in keys])
    out[ok] = values[inverse]
    return out


def _unique_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` of non-negative integers: by a table of the keys seen when their
    range is small (samples x successes per task: a few thousand), in linear time instead of a sort (867k (run,
    task) rows of 10M attempts: 6 sorts per leaderboard). The same arrays."""
    top = int(keys.max()) if keys.size else 0
    if keys.size == 0 or keys.min() < 0 or top > 4 * keys.size + 1_000_000:
        found, inverse = np.unique(keys, return_inverse=True)
        return found, np.ravel(inverse)
    seen = np.zeros(top + 1, dtype=bool)
    seen[keys] = True
    found = np.flatnonzero(seen)
    place = np.cumsum(seen) - 1
    return found.astype(keys.dtype), place[keys]


def _pass_at_k_one(n: int, c: int, k: int) -> float:
    """Chen et al.'s numerically stable product form: ``1 - prod_{i=n-c+1}^{n} (1 - k / i)``."""
    if n - c < k:
        return 1.0
    return float(-np.expm1(np.sum(np.log1p(-k / np.arange(n - c + 1, n + 1, dtype=float)))))


def _pass_hat_k_one(n: int, c: int, k: int) -> float:
    """``C(c, k) / C(n, k) = prod_{i<k} (c - i) / (n - i)``, as a product (no overflow for any n)."""
    if c < k:
        return 0.0
    i = np.arange(k, dtype=float)
    return float(np.exp(np.sum(np.log((c - i) / (n - i)))))


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased Pass@k per task (Chen et al. 2021): ``1 - C(n-c, k) / C(n, k)``.

    Computed in the product form ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, stable for any number of samples (the
    ratio of binomial coefficients overflows above about 1,030 samples).

    Args:
        n: samples per task.
        c: correct samples per task.
        k: the k of Pass@k; tasks with ``n < k`` give NaN (undefined).
    """
    return _per_pair(n, c, k, lambda pn, pc: _pass_at_k_one(pn, pc, k))


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass^k per task (tau-bench): probability that k samples are all correct, ``C(c, k) / C(n, k)``."""
    return _per_pair(n, c, k, lambda pn, pc: _pass_hat_k_one(pn, pc, k))


def wilson(p: float, n: float, *, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed over ``n`` units (tasks, or an effective size)."""
    if n <= 0 or not np.isfinite(p):
        return (float("nan"), float("nan"))
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_rates(n: np.ndarray, c: np.ndarray, ks: list[int]) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """``{k: pass_at_k(n, c, k)}`` and ``{k: pass_hat_k(n, c, k)}`` for every k of ``ks``, the same arrays, with
    the distinct (n, c) pairs found once for all k instead of twice per k (each a pass over every (run, task)
    row); each k then evaluates the pairs alone and spreads them with one take."""
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    ok = np.isfinite(n) & np.isfinite(c)
    at: dict[int, np.ndarray] = {}
    hat: dict[int, np.ndarray] = {}
    if not ok.any():
        for k in ks:
            at[k], hat[k] = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
        return at, hat
    ni, ci = n[ok].astype(np.int64), c[ok].astype(np.int64)
    width = int(ci.max()) + 1
    keys, inverse = _unique_keys(ni * width + ci)
    pairs = [(int(key // width), int(key % width)) for key in keys]
    for k in ks:
        for out, fn in ((at, _pass_at_k_one), (hat, _pass_hat_k_one)):
            values = np.array([fn(pn, pc, k) if pn >= k else np.nan for pn, pc in pairs])
            out[k] = np.full(n.shape, np.nan)
            out[k][ok] = values[inverse]
    return at, hat


def stable_rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator seeded by ``seed`` and labels, so one run's interval does not depend on the others shown."""
    return np.random.default_rng([seed, *[zlib.crc32(label.encode()) for label in labels]])


def bootstrap_mean_ci(
    values: np.ndarray, rng: np.random.Generator, *, n_boot: int = 1000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over units (tasks); NaN values are ignored.

    Above ``BOOTSTRAP_MAX_TASKS`` units the normal interval ``mean +- z * sd / sqrt(n)`` is returned instead,
    which the bootstrap converges to and which costs O(n) instead of O(n * n_boot).
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    alpha = (1.0 - level) / 2.0
    if x.size > BOOTSTRAP_MAX_TASKS:
        return normal_mean_ci(x, level=level)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def normal_mean_ci(values: np.ndarray, *, level: float = 0.95) -> tuple[float, float]:
    """The normal interval ``mean +- z * sd / sqrt(n)`` of the finite values (NaN when fewer than two)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return (float("nan"), float("nan")) if x.size == 0 else (float(x[0]), float(x[0]))
    z = Z95 if level == 0.95 else float(scipy_stats().norm.ppf(0.5 + level / 2.0))
    half = z * x.std(ddof=1) / np.sqrt(x.size)
    return (float(x.mean() - half), float(x.mean() + half))


def resample_weights(n_units: int, rng: np.random.Generator, *, n_boot: int = 1000) -> np.ndarray:
    """How often each of ``n_units`` units is drawn in each of ``n_boot`` resamples with replacement.

    Returns an ``(n_boot, n_units)`` float matrix whose rows sum to ``n_units``: one seeded draw that every series
    over the same units can share (a mean of each resample is then one matrix product).
    """
    out = np.empty((n_boot, n_units))
    # The draws come in blocks of resamples (the generator gives the same numbers in blocks as in one call), and
    # are counted one resample at a time, whose counts fit in the cache: one bincount over every resample with an
    # offset per resample, after drawing them all, was 5-7x slower at 66,700 tasks x 500 resamples (1.7 against
    # 0.25 CPU s, and 267 MB more memory to fault in). The same counts of the same draw.
    block = max(1, _DRAW_BLOCK // max(n_units, 1))
    for start in range(0, n_boot, block):
        idx = rng.integers(0, n_units, size=(min(block, n_boot - start), n_units))
        for b, row in enumerate(idx, start):
            out[b] = np.bincount(row, minlength=n_units)
    return out


_DRAW_BLOCK = 1 << 21  # draws held at once by ``resample_weights`` (16 MB)


def bootstrap_mean_cis(
    values: np.ndarray, rng: np.random.Generator, *, n_boot: int = 1000, level: float = 0.95
) -> np.ndarray:
    """Percentile bootstrap intervals of the mean of every column of ``values`` (units x series) at once.

    The rows (units: tasks) are resampled with replacement, one draw shared by all columns, so the cost is one
    ``(n_boot x units) @ (units x series)`` product instead of a loop. NaN cells are left out: each resample's mean
    of a column is over its finite cells (the mean of the resampled tasks that have a value). A column with more
    than ``BOOTSTRAP_MAX_TASKS`` finite values gets the normal interval instead (what the bootstrap converges to);
    when no column needs the bootstrap nothing is drawn.

    Returns:
        A ``(series, 2)`` array of (low, high); NaN for a column without finite values, (x, x) for one value.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"values: expected a 2-D array (units x series), got {x.ndim} dimension(s)")
    finite = np.isfinite(x)
    counts = finite.sum(axis=0)
    out = np.full((x.shape[1], 2), np.nan)
    alpha = (1.0 - level) / 2.0
    boot = np.flatnonzero(counts > 1) if x.shape[0] else np.array([], dtype=int)
    big = boot[counts[boot] > BOOTSTRAP_MAX_TASKS]
    boot = boot[counts[boot] <= BOOTSTRAP_MAX_TASKS]
    for j in big:
        out[j] = normal_mean_ci(x[:, j], level=level)
    for j in np.flatnonzero(counts == 1):
        out[j] = x[finite[:, j], j][0]
    if boot.size:
        weights = resample_weights(x.shape[0], rng, n_boot=n_boot)
        filled = np.where(finite[:, boot], x[:, boot], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (weights @ filled) / (weights @ finite[:, boot].astype(float))
        out[boot] = np.nanquantile(means, [alpha, 1.0 - alpha], axis=0).T
    return out


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when two closed intervals share a point (NaN bounds never overlap)."""
    if not all(np.isfinite(v) for v in (*a, *b)):
        return False
    return a[0] <= b[1] and b[0] <= a[1]


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True for points no other point dominates (x <= and y >= with one strict); NaNs are never on it.

    O(n log n): sort by x then -y; a point survives when its y beats every strictly cheaper point's y and it
    is the best at its own x (exact duplicates all survive).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    mask = np.zeros(x.shape, dtype=bool)
    ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    if ok.size == 0:
        return mask
    order = ok[np.lexsort((-y[ok], x[ok]))]
    best_cheaper = -np.inf
    i = 0
    while i < order.size:
        j = i
        while j < order.size and x[order[j]] == x[order[i]]:
            j += 1
        group = order[i:j]
        top = y[group].max()
        if top > best_cheaper:
            mask[group[y[group] == top]] = True
        best_cheaper = max(best_cheaper, top)
        i = j
    return mask

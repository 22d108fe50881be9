"""Small, tested statistics used across reports: Pass@k, pass^k, Wilson and bootstrap intervals."""

from __future__ import annotations

import functools
import math
import threading
import zlib
from collections.abc import Callable, Sequence
from fractions import Fraction
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


# The distribution functions below replace scipy.special's (stdtrit, ndtr, ndtri, the binomial cdf at 1/2): the
# leaderboard's first render called them through scipy.special, whose import (and the array-API modules it pulls
# in) was 0.23-0.7 CPU s of that render. They agree with scipy to 1e-12 relative (closer in practice: about 1e-15;
# tests/test_stats.py compares them over grids), not to the last bit.
_SQRT1_2 = math.sqrt(0.5)


def ndtr(x: np.ndarray | float) -> np.ndarray:
    """The standard normal cdf ``Phi(x) = erfc(-x / sqrt 2) / 2`` element-wise (``math.erfc``: relative accuracy in
    both tails, as ``scipy.special.ndtr``, which computes the same expression); NaN where x is NaN."""
    arr = np.asarray(x, dtype=float)
    flat = (-arr * _SQRT1_2).ravel().tolist()  # map over a list: a fifth faster than a ufunc of Python objects
    return 0.5 * np.fromiter(map(math.erfc, flat), dtype=float, count=len(flat)).reshape(arr.shape)


def _upper_normal(x: float) -> float:
    """``1 - Phi(x)``, exact in the upper tail."""
    return 0.5 * math.erfc(x * _SQRT1_2)


def _newton(f: Callable[[float], float], slope: Callable[[float], float], x: float) -> float:
    """The root of ``f`` near ``x`` by Newton's steps: until a step is below 1e-15 of ``x`` (quadratic: the next would
    be below its last bit), or no longer halves (``f``'s own rounding reached: the steps only jitter)."""
    last = math.inf
    for _ in range(60):
        step = f(x) / slope(x)
        if not math.isfinite(step) or (abs(step) > 0.5 * last and abs(step) < 1e-9 * abs(x)):
            break
        x -= step
        if abs(step) <= 1e-15 * abs(x):
            break
        last = abs(step)
    return x


def norm_ppf(q: float) -> float:
    """The standard normal's quantile, ``scipy.stats.norm.ppf(q)`` to 1e-12 relative (scipy's ``ndtri``): Newton's
    steps on the upper tail ``1 - Phi`` (computed with ``math.erfc``) from Abramowitz and Stegun's 26.2.23, or on
    ``erf`` near the median."""
    q = float(q)
    if math.isnan(q) or not 0.0 <= q <= 1.0:
        return float("nan")
    if q in (0.0, 1.0):
        return -math.inf if q == 0.0 else math.inf
    if q == 0.5:
        return 0.0
    if 0.25 < q < 0.75:  # near the median: solve erf(x / sqrt 2) / 2 = q - 1/2 (exact: Sterbenz)
        centre = q - 0.5
        density = math.sqrt(2.0 * math.pi)
        x = centre * density  # Phi's slope at 0
        return _newton(lambda v: 0.5 * math.erf(v * _SQRT1_2) - centre, lambda v: math.exp(-0.5 * v * v) / density, x)
    p = 1.0 - q if q > 0.5 else q  # the tail probability (exact for q < 1/2; scipy's ndtri rounds 1 - q the same way)
    t = math.sqrt(-2.0 * math.log(p))
    x = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t**3)
    density = math.sqrt(2.0 * math.pi)
    # solve 1 - Phi(x) = p for x > 0, Newton's steps from Abramowitz and Stegun's 26.2.23
    x = _newton(lambda v: _upper_normal(v) - p, lambda v: -math.exp(-0.5 * v * v) / density, x)
    return x if q > 0.5 else -x


def _log_gamma_ratio(a: float) -> float:
    """``ln Gamma(a + 1/2) - ln Gamma(a)`` to about 1e-16 absolute: Stirling's series of both, subtracted term by term
    for a >= 15 (``math.lgamma``'s difference loses ``eps * lgamma(a)``: 4e-11 at a = 33,333)."""
    if a < 15.0:
        return math.lgamma(a + 0.5) - math.lgamma(a)

    def series(z: float) -> float:
        z2 = z * z
        return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - (1.0 / 1680.0 - 1.0 / (1188.0 * z2)) / z2) / z2) / z2) / z

    return 0.5 * math.log(a) + (a * math.log1p(0.5 / a) - 0.5) + series(a + 0.5) - series(a)


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the regularised incomplete beta ``I_x(a, b)`` (modified Lentz; converges fast for
    x < (a + 1) / (a + b + 2))."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-16:
            break
    return h


def _t_tail_and_centre(t: float, nu: int) -> tuple[float, float]:
    """``(P(T > t), P(|T| <= t))`` for Student's t with ``nu`` degrees of freedom and t >= 0, each with its own
    digits: ``P(T > t) = I_x(nu/2, 1/2) / 2`` with ``x = nu / (nu + t^2)``, ``P(|T| <= t) = I_y(1/2, nu/2)`` with
    ``y = t^2 / (nu + t^2)``; whichever continued fraction converges is evaluated, the other probability is its
    complement (then it is the larger one, so the subtraction keeps its digits)."""
    if t == 0.0:
        return 0.5, 0.0
    a, b = nu / 2.0, 0.5
    x, y = nu / (nu + t * t), t * t / (nu + t * t)
    # ln(x^a y^b / B(a, b)): a ln x = -a log1p(t^2 / nu) and ln B(a, 1/2) = ln sqrt(pi) - ln Gamma ratio, each exact
    log_front = -a * math.log1p(t * t / nu) + math.log(t) - 0.5 * math.log(nu + t * t)
    log_front += _log_gamma_ratio(a) - 0.5 * math.log(math.pi)
    if x < (a + 1.0) / (a + b + 2.0):
        tail = 0.5 * math.exp(log_front) * _beta_fraction(x, a, b) / a
        return tail, 1.0 - 2.0 * tail
    centre = math.exp(log_front) * _beta_fraction(y, b, a) / b
    return 0.5 * (1.0 - centre), centre


@functools.lru_cache(maxsize=256)
def t_ppf(q: float, df: float) -> float:
    """Student's t quantile, ``scipy.stats.t.ppf(q, df)``: for integer ``df`` (every caller: tasks - 1) to 1e-12
    relative without scipy (Newton's steps from the Cornish-Fisher start on the t distribution's incomplete beta,
    ``_t_tail_and_centre``); other df through ``scipy.special.stdtrit``, which it is for 0 < q < 1 and df > 0."""
    q, df = float(q), float(df)
    if not (0.0 < q < 1.0 and df >= 1.0 and df == math.floor(df) and df < 1e7):
        from scipy import special

        return float(special.stdtrit(df, q))
    if q == 0.5:
        return 0.0
    nu = int(df)
    p = 1.0 - q if q > 0.5 else q  # the tail probability
    z = abs(norm_ppf(q))
    # Fisher's expansion in 1/nu (Abramowitz and Stegun 26.7.5): the start of Newton's steps, and the quantile itself
    # above 5,000 degrees of freedom (the next term is below 1e-13 of it for p down to 1e-16; the continued fraction's
    # rounding grows with nu: 5e-13 at nu = 66,666)
    z2 = z * z
    x = z * (
        1.0
        + (z2 + 1.0) / (4.0 * nu)
        + ((5.0 * z2 + 16.0) * z2 + 3.0) / (96.0 * nu**2)
        + (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / (384.0 * nu**3)
        + ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / (92160.0 * nu**4)
    )
    if nu > 5000:
        return x if q > 0.5 else -x
    log_c = math.lgamma((nu + 1) / 2.0) - math.lgamma(nu / 2.0) - 0.5 * math.log(nu * math.pi)

    inner = 2.0 * q - 1.0 if q > 0.5 else 1.0 - 2.0 * q  # P(|T| <= t): exact for p >= 1/4 (Sterbenz)

    def residual(v: float) -> float:
        tail, centre = _t_tail_and_centre(v, nu)
        return p - tail if p < 0.25 else centre - inner  # in the tail its probability keeps the digits, else the centre

    def slope(v: float) -> float:
        density = math.exp(log_c - (nu + 1) / 2.0 * math.log1p(v * v / nu))
        return density if p < 0.25 else 2.0 * density

    x = _newton(residual, slope, max(x, 0.0))
    return x if q > 0.5 else -x


def _stirling_error(n: float) -> float:
    """``ln Gamma(n + 1) - (n + 1/2) ln n + n - ln sqrt(2 pi)``, Stirling's series above 15 (Loader's stirlerr)."""
    if n <= 15.0:
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - 0.5 * math.log(2.0 * math.pi)
    n2 = n * n
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - (1.0 / 1680.0 - 1.0 / (1188.0 * n2)) / n2) / n2) / n2) / n


def _deviance(x: float, mean: float) -> float:
    """``x ln(x / mean) + mean - x`` without its cancellation near ``x = mean`` (Loader's bd0)."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total, term, v2 = (x - mean) * v, 2.0 * x * v, v * v
        for j in range(1, 1000):
            term *= v2
            nxt = total + term / (2 * j + 1)
            if nxt == total:
                break
            total = nxt
        return total
    return x * math.log(x / mean) + mean - x


def _binom_half_pmf(k: int, n: int) -> float:
    """``C(n, k) / 2^n`` for 0 < k < n to about 1e-15 relative (Loader's saddle-point form, as R's dbinom)."""
    half = n / 2.0
    exponent = _stirling_error(n) - _stirling_error(k) - _stirling_error(n - k)
    exponent -= _deviance(k, half) + _deviance(n - k, half)
    return math.exp(exponent) * math.sqrt(n / (2.0 * math.pi * k * (n - k)))


def binom_half_cdf(k: int, n: int) -> float:
    """``scipy.stats.binom.cdf(k, n, 0.5)`` for 0 <= k < n, to 1e-12 relative: ``sum_{i <= k} C(n, i) / 2^n``,
    summed exactly in integers (correctly rounded) up to n = 2,000; above, from the largest term ``C(n, k) / 2^n``
    (``_binom_half_pmf``) down by the terms' ratios ``i / (n - i + 1)`` in floats (the integers' sum took 0.9 s at
    n = 66,667, and ``math.comb`` alone 0.2 s)."""
    k, n = int(k), int(n)
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= 2000:
        term, total = 1, 1
        for i in range(k):
            term = term * (n - i) // (i + 1)
            total += term
        return float(Fraction(total, 1 << n))
    if 2 * k > n:  # the upper part is the smaller sum: 1 - P(X <= n - k - 1) keeps the digits of a value above 1/2
        return 1.0 - binom_half_cdf(n - k - 1, n)
    if k == 0:
        return math.ldexp(1.0, -n)
    top = _binom_half_pmf(k, n)
    at = np.arange(k, 0, -1, dtype=float)
    return top * (1.0 + float(np.cumprod(at / (n - at + 1.0)).sum()))


def norm_sf(x: np.ndarray) -> np.ndarray:
    """The standard normal's upper tail, ``scipy.stats.norm.sf(x)`` (``ndtr(-x)``) to 1e-12 relative; NaN where x
    is NaN."""
    return ndtr(-np.asarray(x, dtype=float))


# The grid of the normal range's integrals: the trapezoid rule on a uniform grid converges geometrically for smooth
# integrands that vanish at both ends (here a normal density times powers of normal tails); a step of 1/64 over
# [-12, 12] agrees with scipy's adaptive quadrature to about 1e-13 (tests/test_stats.py).
_RANGE_STEP = 1.0 / 64.0
_RANGE_Z = np.arange(-12.0, 12.0 + _RANGE_STEP / 2, _RANGE_STEP)
_RANGE_UPPER = ndtr(-_RANGE_Z)


def normal_range_sf(w: np.ndarray | float, k: int) -> np.ndarray:
    """``P(R > w)`` for ``R`` the range (max - min) of ``k`` independent standard normals: Tukey's studentized
    range with unlimited degrees of freedom, ``scipy.stats.studentized_range.sf(w, k, df)`` for ``df`` above
    100,000 (where scipy evaluates this same limit) without importing scipy.stats (0.6-0.9 s of the app's start).

    ``P(R > w) = k * int phi(z) [(1 - Phi(z))^(k-1) - (Phi(z + w) - Phi(z))^(k-1)] dz`` (the run with the lowest
    value at z, the others above it, and not all within w of it), written with ``a = 1 - Phi(z)`` and
    ``c = 1 - Phi(z + w)`` as ``-a^(k-1) expm1((k-1) log1p(-c/a))`` so that small tails keep their digits
    (scipy's ``1 - cdf`` stops at about 1e-12). 1 for w <= 0; NaN where w is NaN.
    """
    w_arr = np.atleast_1d(np.asarray(w, dtype=float))
    out = np.ones(w_arr.shape)
    out[np.isnan(w_arr)] = np.nan
    if k < 2:
        out[w_arr >= 0] = 0.0
        return out.reshape(np.shape(w))
    pos = np.flatnonzero(w_arr > 0)
    if pos.size:
        z = _RANGE_Z
        a = _RANGE_UPPER  # 1 - Phi(z), exact in the upper tail
        dens = np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_a = np.log(a)
            c = ndtr(-(z[None, :] + w_arr[pos, None]))  # 1 - Phi(z + w)
            ratio = np.where(a[None, :] > 0, c / a[None, :], 0.0)
            term = -np.exp((k - 1) * log_a)[None, :] * np.expm1((k - 1) * np.log1p(-np.minimum(ratio, 1.0)))
        term = np.nan_to_num(term, nan=0.0, posinf=0.0, neginf=0.0)
        out[pos] = np.clip(k * _RANGE_STEP * (term * dens[None, :]).sum(axis=1), 0.0, 1.0)
    return out.reshape(np.shape(w))


@functools.lru_cache(maxsize=256)
def normal_range_isf(p: float, k: int) -> float:
    """The ``w`` with ``normal_range_sf(w, k) == p`` (0 < p < 1): the range's (1 - p) quantile, as
    ``scipy.stats.studentized_range.ppf(1 - p, k, df)`` for df above 100,000, by bisection to the last bit (about
    60 evaluations of ``normal_range_sf``: kept per (p, k), since a leaderboard asks for the same one per slice)."""
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
    every = bool(ok.all())  # the usual case: no row to leave NaN, so each k's array is one take (no mask, no fill)
    ni, ci = (n if every else n[ok]).astype(np.int64), (c if every else c[ok]).astype(np.int64)
    width = int(ci.max()) + 1
    keys, inverse = _unique_keys(ni * width + ci)
    pairs = [(int(key // width), int(key % width)) for key in keys]
    for k in ks:
        for out, fn in ((at, _pass_at_k_one), (hat, _pass_hat_k_one)):
            values = np.array([fn(pn, pc, k) if pn >= k else np.nan for pn, pc in pairs])
            if every:
                out[k] = values[inverse].reshape(n.shape)
            else:
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
    ok = np.isfinite(x)
    x = x if x.ndim == 1 and ok.all() else x[ok]  # all finite: no copy (a sum does not depend on where values sit)
    if x.size < 2:
        return (float("nan"), float("nan")) if x.size == 0 else (float(x[0]), float(x[0]))
    z = Z95 if level == 0.95 else float(scipy_stats().norm.ppf(0.5 + level / 2.0))
    half = z * x.std(ddof=1) / np.sqrt(x.size)
    mean = x.mean()
    return (float(mean - half), float(mean + half))


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
    block = max(1, DRAW_BLOCK // max(n_units, 1))
    for start in range(0, n_boot, block):
        count_draws(out, start, rng.integers(0, n_units, size=(min(block, n_boot - start), n_units)))
    return out


def count_draws(out: np.ndarray, start: int, idx: np.ndarray) -> None:
    """Rows ``start, start + 1, ...`` of ``out``: how often each unit is drawn in each row of ``idx`` (a block of
    resamples' draws, one resample a row)."""
    for b, row in enumerate(idx, start):
        out[b] = np.bincount(row, minlength=out.shape[1])


class ResampleCounts:
    """``resample_weights``' counts held as bytes: an ``(n_boot, n_units)`` uint8 matrix (an eighth of the float
    matrix: 33 MB instead of 267 MB at 500 x 66,667, whose fresh pages cost the TMF page 0.4-0.8 CPU s at 10M
    attempts), with the rare resample where a unit is drawn more than 255 times kept whole in ``wide``. ``sums``
    gives the products with the counts without ever holding the float matrix; ``dense`` the float matrix itself
    (the same counts as ``resample_weights``)."""

    def __init__(self, n_boot: int, n_units: int) -> None:
        self.small = np.empty((n_boot, n_units), dtype=np.uint8)
        self.wide: dict[int, np.ndarray] = {}  # resample -> its counts, where one is above 255

    @property
    def shape(self) -> tuple[int, int]:
        return self.small.shape

    def count(self, start: int, idx: np.ndarray) -> None:
        """Resamples ``start, start + 1, ...``: how often each unit is drawn in each row of ``idx`` (as
        ``count_draws``)."""
        n_units = self.small.shape[1]
        for b, row in enumerate(idx, start):
            counts = np.bincount(row, minlength=n_units)
            self.small[b] = counts
            if n_units > 255 and counts.max() > 255:
                self.wide[b] = counts

    def _rows(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        """Resamples ``start:stop`` as floats, written into ``out``'s first rows."""
        rows = out[: stop - start]
        rows[...] = self.small[start:stop]
        for b, counts in self.wide.items():
            if start <= b < stop:
                rows[b - start] = counts
        return rows

    def dense(self) -> np.ndarray:
        """The ``(n_boot, n_units)`` float matrix of the counts (``resample_weights``' matrix)."""
        return self._rows(0, self.small.shape[0], np.empty(self.small.shape))

    def sums(self, matrix: np.ndarray) -> np.ndarray:
        """``self.dense() @ matrix`` (units x series -> resamples x series), in products of ``SUMS_BLOCK`` bytes of
        resamples at a time: the same sums to about 1e-15 relative, not always to the last bit (the BLAS may add in
        another order for a product of fewer rows: docs/tmf.md)."""
        from threadpoolctl import threadpool_limits

        n_boot, n_units = self.small.shape
        out = np.empty((n_boot, matrix.shape[1]))
        step = max(1, SUMS_BLOCK // (8 * max(n_units, 1)))
        buf = np.empty((min(step, n_boot), n_units))  # one buffer for every block: its pages are faulted in once
        # One BLAS thread (the process's setting: one caller at a time, so none restores another's): products of a
        # few rows on two threads took 0.3-4.5 CPU s instead of 0.1 at 66,667 x 52 with the machine loaded (the
        # second thread spins while it waits for a core).
        with _ONE_BLAS_THREAD, threadpool_limits(1, user_api="blas"):
            for start in range(0, n_boot, step):
                stop = min(start + step, n_boot)
                np.matmul(self._rows(start, stop, buf), matrix, out=out[start:stop])
        return out


def resample_counts(n_units: int, rng: np.random.Generator, *, n_boot: int = 1000) -> ResampleCounts:
    """``resample_weights(n_units, rng, n_boot=n_boot)``'s counts (the same draw, the same counts) as
    ``ResampleCounts``."""
    out = ResampleCounts(n_boot, n_units)
    block = max(1, DRAW_BLOCK // max(n_units, 1))
    for start in range(0, n_boot, block):
        out.count(start, rng.integers(0, n_units, size=(min(block, n_boot - start), n_units)))
    return out


SUMS_BLOCK = 16 << 20  # bytes of float counts multiplied at once by ``ResampleCounts.sums``
_ONE_BLAS_THREAD = threading.Lock()

# draws held at once by ``resample_weights``: 1 MB of int64, under the 4 MB from which numpy asks the kernel for huge
# pages (16 MB blocks cost 0.26-0.87 CPU s for 500 x 66,667 counts in a fresh process, up to 0.70 of it system time;
# 1 MB blocks 0.20-0.40: BENCHMARKS.md "TMF first render at ten million, seventh pass"). The generator gives the same
# integers in blocks of any size, so the block changes no count.
DRAW_BLOCK = 1 << 17


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


def bootstrap_mean_cis_of(
    columns: Sequence[np.ndarray], rng: np.random.Generator, *, n_boot: int = 1000, level: float = 0.95
) -> np.ndarray:
    """``bootstrap_mean_cis`` of the columns given apart (each of the same length): when none needs the bootstrap
    (every one has more than ``BOOTSTRAP_MAX_TASKS`` finite values, or at most one) each is its own normal interval,
    with no matrix built (at 10M attempts a slice's 13 runs x 2 statistics x 66,667 tasks, and then each column read
    across it); else the matrix's, as before. The same intervals either way."""
    counts = [int(np.count_nonzero(np.isfinite(c))) for c in columns]
    if all(n <= 1 or n > BOOTSTRAP_MAX_TASKS for n in counts):
        out = np.full((len(columns), 2), np.nan)
        for j, (col, n) in enumerate(zip(columns, counts, strict=True)):
            if n:
                out[j] = normal_mean_ci(col, level=level)
        return out
    return bootstrap_mean_cis(np.column_stack(columns), rng, n_boot=n_boot, level=level)


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when two closed intervals share a point (NaN bounds never overlap)."""
    if not all(np.isfinite(v) for v in (*a, *b)):
        return False
    return a[0] <= b[1] and b[0] <= a[1]


# A run's value on a task is a mean summed in whatever order the store met its samples (DuckDB's threads, the log's
# order of the samples), so two runs with the same samples may hold 0.6433333333333334 and 0.6433333333333333, and
# a mean over tasks (a BLAS product of two equal columns) may differ so too: values within this share of their size
# are one value (``compare.differences``, ``settled``).
TIE_RELATIVE = 1e-12


def settled(a: np.ndarray) -> np.ndarray:
    """``a`` with the values of each row (its last axis) that lie within ``TIE_RELATIVE`` of their neighbour in
    sorted order one value, the smallest of them; NaN and infinities as they are. ``a`` itself when none does."""
    a = np.asarray(a, dtype=float)
    order = np.argsort(a, axis=-1, kind="stable")
    s = np.take_along_axis(a, order, axis=-1)
    close = np.zeros(s.shape, dtype=bool)
    with np.errstate(invalid="ignore"):  # an infinity and NaN are never close to anything
        gap = np.abs(s[..., 1:] - s[..., :-1])
        close[..., 1:] = np.isfinite(gap) & (gap <= TIE_RELATIVE * np.maximum(np.abs(s[..., 1:]), np.abs(s[..., :-1])))
    if not close.any():
        return a
    cols = np.broadcast_to(np.arange(s.shape[-1]), s.shape)
    first = np.maximum.accumulate(np.where(close, 0, cols), axis=-1)  # the first of each stretch of close values
    out = np.empty_like(a)
    np.put_along_axis(out, order, np.take_along_axis(s, first, axis=-1), axis=-1)
    return out


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True for points no other point dominates (x <= and y >= with one strict); NaNs are never on it.

    O(n log n): sort by x then -y; a point survives when its y beats every strictly cheaper point's y and it
    is the best at its own x (exact duplicates all survive; values within ``TIE_RELATIVE`` of each other are equal:
    ``settled``).
    """
    x = settled(np.asarray(x, dtype=float))
    y = settled(np.asarray(y, dtype=float))
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

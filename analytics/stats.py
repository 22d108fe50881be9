"""Small, tested statistics used across reports: Pass@k, pass^k, Wilson and bootstrap intervals."""

from __future__ import annotations

import zlib

import numpy as np
from scipy import stats as sps
from scipy.special import comb

Z95 = float(sps.norm.ppf(0.975))
BOOTSTRAP_MAX_TASKS = 2000  # above this a normal interval replaces the bootstrap (they agree; see README)


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased Pass@k per task (Chen et al. 2021): ``1 - C(n-c, k) / C(n, k)``.

    Args:
        n: samples per task.
        c: correct samples per task.
        k: the k of Pass@k; tasks with ``n < k`` give NaN (undefined).
    """
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    out = np.full(n.shape, np.nan)
    ok = n >= k
    out[ok] = 1.0 - comb(n[ok] - c[ok], k) / comb(n[ok], k)
    return out


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Unbiased pass^k per task (tau-bench): probability that k samples are all correct, ``C(c, k) / C(n, k)``."""
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    out = np.full(n.shape, np.nan)
    ok = n >= k
    out[ok] = comb(c[ok], k) / comb(n[ok], k)
    return out


def wilson(p: float, n: int, *, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed over ``n`` units (here: tasks)."""
    if n <= 0 or not np.isfinite(p):
        return (float("nan"), float("nan"))
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def stable_rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator seeded by ``seed`` and labels, so one run's interval does not depend on the others shown."""
    return np.random.default_rng([seed, *[zlib.crc32(label.encode()) for label in labels]])


def bootstrap_mean_ci(values: np.ndarray, rng: np.random.Generator, *, n_boot: int = 1000,
                      level: float = 0.95) -> tuple[float, float]:
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
        z = float(sps.norm.ppf(1.0 - alpha))
        half = z * x.std(ddof=1) / np.sqrt(x.size)
        return (float(x.mean() - half), float(x.mean() + half))
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when two closed intervals share a point (NaN bounds never overlap)."""
    if not all(np.isfinite(v) for v in (*a, *b)):
        return False
    return a[0] <= b[1] and b[0] <= a[1]

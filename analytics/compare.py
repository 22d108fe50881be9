"""Honest comparisons, defined once: comparison sets, paired tests on shared tasks, Holm, clustered intervals.

Every view that ranks or compares runs (leaderboard, TMF, coverage correlation, Version diff, the ``gate`` CLI)
uses these functions, so they agree with each other:

* **Comparison set** of a slice: the task set most (rankable) runs were evaluated on, ties broken by the larger
  set. Runs evaluated on exactly that set are *comparable*; the others are shown apart and never lead.
* **Paired test** of two runs: per-task differences over the tasks both ran. Exact McNemar when both runs have
  one binary sample per task; otherwise a seeded sign-flip permutation test of the mean difference (the same
  test: with 0/1 outcomes and one sample, sign flips of the discordant tasks are McNemar's binomial).
* **Holm** adjustment over the tests of one slice.
* **Clustered Wilson** interval for Pass@1: Wilson with ``n_eff = p(1-p) / SE^2`` where SE is the standard error
  clustered by task (Miller 2024, "Adding Error Bars to Evals").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy import stats as sps

from analytics import stats

K = TypeVar("K", bound=Hashable)
METRIC_BY_SCORING = {"binary": "pass@1", "graded": "mean_score", "continuous": "mean_score"}
N_PERM = 10_000  # sign flips: p resolution 1e-4, enough for Holm over ~100 rows at 5%
N_BOOT = 1_000  # bootstrap resamples of the paired difference's interval
PERM_CHUNK = 2_000  # flips drawn per block, to bound memory at (chunk x tasks)
ALPHA = 0.05
# A run that says it is a reference, not a competitor (``gem_role: baseline`` or ``role: baseline`` in runs.extra).
# The one SQL definition; every ranking view selects it as ``is_baseline`` and filters with ``is_rankable``.
IS_BASELINE_SQL = (
    "(coalesce(json_extract_string(extra, '$.gem_role') = 'baseline', false)"
    " OR coalesce(json_extract_string(extra, '$.role') = 'baseline', false))"
)


def is_rankable(kind: object, is_baseline: object) -> bool:
    """Whether a run competes in rankings: not a human run and not a baseline-marked run.

    Args:
        kind: the run's kind (``human`` runs are references).
        is_baseline: the run's ``is_baseline`` flag (``IS_BASELINE_SQL``); missing values count as False.
    """
    return str(kind) != "human" and not (isinstance(is_baseline, bool | np.bool_) and bool(is_baseline))


def ranking_metric(scoring: str | None) -> str:
    """The benchmark's own metric: ``pass@1`` for binary scoring, ``mean_score`` for graded and continuous."""
    return METRIC_BY_SCORING.get(scoring or "binary", "pass@1")


def comparison_set(task_sets: Mapping[K, Iterable[str]], *, eligible: Iterable[K] | None = None) -> frozenset[str]:
    """The task set most runs were evaluated on; ties go to the larger set, then to the smallest sorted ids.

    Args:
        task_sets: run id -> the tasks it was evaluated on (in the slice).
        eligible: the runs that vote (rankable runs: not human, not baseline); all runs when None or when none
            of them has tasks.
    """
    sets = {run: frozenset(tasks) for run, tasks in task_sets.items()}
    voters = [r for r in (eligible if eligible is not None else sets) if sets.get(r)]
    if not voters:
        voters = [r for r in sets if sets[r]]
    if not voters:
        return frozenset()
    counts = Counter(sets[r] for r in voters)
    return min(counts, key=lambda s: (-counts[s], -len(s), sorted(s)))


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison of a candidate against a reference on their shared tasks.

    Attributes:
        n_shared: tasks with a value in both runs.
        diff: mean over shared tasks of (candidate - reference); NaN when untestable.
        ci95: seeded percentile bootstrap interval of ``diff`` over tasks.
        p_value: two-sided p-value; NaN when untestable (no shared task).
        method: ``mcnemar-exact``, ``sign-flip`` or ``untestable``.
        n_worse: shared tasks where the candidate is below the reference.
        n_better: shared tasks where the candidate is above the reference.
    """

    n_shared: int
    diff: float
    ci95: tuple[float, float]
    p_value: float
    method: str
    n_worse: int
    n_better: int

    @property
    def is_testable(self) -> bool:
        """False when the runs share no task."""
        return self.n_shared > 0


def mcnemar_exact(n_worse: int, n_better: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (binomial, p = 1/2); 1 with no discordance."""
    n = n_worse + n_better
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * sps.binom.cdf(min(n_worse, n_better), n, 0.5)))


def sign_flip_pvalues(d: np.ndarray, rng: np.random.Generator, *, n_perm: int = N_PERM) -> np.ndarray:
    """Two-sided sign-flip permutation p-values of the mean of each column of ``d`` (tasks x comparisons).

    Missing cells (NaN: task not shared) count as zero differences, which a sign flip leaves unchanged, so one
    draw of signs serves every column. ``p = (1 + #{|T*| >= |T|}) / (1 + n_perm)`` with ``T`` the sum of
    differences (Phipson and Smyth 2010: never 0). A column without a nonzero difference gets p = 1. Above
    ``stats.BOOTSTRAP_MAX_TASKS`` rows the distribution's normal limit is used (``_sign_flip_normal``).
    """
    x = np.nan_to_num(np.asarray(d, dtype=float), nan=0.0)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] > stats.BOOTSTRAP_MAX_TASKS:
        return _sign_flip_normal(x)
    observed = np.abs(x.sum(axis=0))
    tol = 1e-9 * np.maximum(1.0, np.abs(x).sum(axis=0))
    hits = np.zeros(x.shape[1])
    done = 0
    while done < n_perm:
        size = min(PERM_CHUNK, n_perm - done)
        signs = rng.integers(0, 2, size=(size, x.shape[0])).astype(np.float64) * 2.0 - 1.0
        hits += (np.abs(signs @ x) >= observed - tol).sum(axis=0)
        done += size
    p = (1.0 + hits) / (1.0 + n_perm)
    p[~(np.abs(x) > 0).any(axis=0)] = 1.0
    return p


def _sign_flip_normal(x: np.ndarray) -> np.ndarray:
    """The sign-flip distribution's normal limit: ``T = sum(d)`` has mean 0 and variance ``sum(d^2)`` under
    random signs, so ``p = 2 (1 - Phi(|T| / sqrt(sum d^2)))`` (used above ``stats.BOOTSTRAP_MAX_TASKS`` tasks,
    where drawing the flips would cost O(tasks x flips) for a distribution already normal to within 1e-3)."""
    t = np.abs(x.sum(axis=0))
    sd = np.sqrt((x * x).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * sps.norm.sf(t / sd)
    return np.where(sd > 0, np.minimum(p, 1.0), 1.0)


def paired_tests(
    d: np.ndarray,
    *,
    is_binary_single: Sequence[bool] | np.ndarray,
    seed: int = 0,
    n_perm: int = N_PERM,
    n_boot: int = N_BOOT,
) -> list[PairedTest]:
    """Paired tests of several candidates against one reference on the same shared tasks.

    Args:
        d: ``(shared tasks x candidates)`` differences candidate - reference, rows in task-id order, no NaN.
        is_binary_single: per candidate, whether both runs have one 0/1 sample per task (exact McNemar).
        seed: base seed. The sign flips and bootstrap draws depend only on it and on the number of shared
            tasks, so the same pair gives the same p and interval wherever it is tested (leaderboard, diff, gate).
        n_perm: sign flips for the permutation test.
        n_boot: bootstrap resamples for the interval of the mean difference.
    """
    x = np.asarray(d, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    n = x.shape[0]
    single = np.asarray(is_binary_single, dtype=bool).reshape(-1)
    if n == 0:
        nan = float("nan")
        return [PairedTest(0, nan, (nan, nan), nan, "untestable", 0, 0) for _ in range(x.shape[1])]
    flip = np.flatnonzero(~single)
    p = np.full(x.shape[1], np.nan)
    if flip.size:
        p[flip] = sign_flip_pvalues(x[:, flip], stats.stable_rng(seed, "sign-flip", str(n)), n_perm=n_perm)
    # one resampling draw for every column (keyed by seed and n only): a matrix product, not a loop
    cis = stats.bootstrap_mean_cis(x, stats.stable_rng(seed, "paired-ci", str(n)), n_boot=n_boot)
    out = []
    for j in range(x.shape[1]):
        col = x[:, j]
        worse, better = int((col < 0).sum()), int((col > 0).sum())
        pj, method = (mcnemar_exact(worse, better), "mcnemar-exact") if single[j] else (float(p[j]), "sign-flip")
        out.append(PairedTest(n, float(col.mean()), (float(cis[j, 0]), float(cis[j, 1])), pj, method, worse, better))
    return out


def paired_test(
    reference: Mapping[str, float],
    candidate: Mapping[str, float],
    *,
    is_binary_single: bool = False,
    seed: int = 0,
    n_perm: int = N_PERM,
    n_boot: int = N_BOOT,
) -> PairedTest:
    """Paired test of ``candidate`` against ``reference`` over the tasks both have a finite value for.

    Args:
        reference: task id -> per-task value (Pass@1 estimate c/n, or mean score) of the reference run.
        candidate: the same for the candidate run.
        is_binary_single: both runs have exactly one 0/1 sample per task: the exact McNemar test is used.
        seed: base seed (see ``paired_tests``).
        n_perm: sign flips for the permutation test.
        n_boot: bootstrap resamples for the interval of the mean difference.
    """
    d = shared_differences(reference, candidate)
    return paired_tests(d[:, None], is_binary_single=[is_binary_single], seed=seed, n_perm=n_perm, n_boot=n_boot)[0]


def shared_differences(reference: Mapping[str, float], candidate: Mapping[str, float]) -> np.ndarray:
    """``candidate - reference`` over the shared tasks with finite values in both, in task-id order."""
    shared = sorted(t for t in reference if t in candidate)
    pairs = np.array([(reference[t], candidate[t]) for t in shared], dtype=float).reshape(-1, 2)
    pairs = pairs[np.isfinite(pairs).all(axis=1)]
    return pairs[:, 1] - pairs[:, 0]


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values; NaN entries (untestable) stay NaN and are not counted."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out


def clustered_n_eff(task_means: np.ndarray, n_samples: np.ndarray | None = None) -> float:
    """Effective sample size ``p(1-p) / SE^2`` of the mean of per-task means, SE clustered by task.

    ``SE^2 = var(task means, ddof=1) / tasks`` (with equal samples per task this is statsmodels' cluster-robust
    variance of the overall mean, small-sample corrected). Bounded to [1, total samples]: samples of a task can
    carry less information than independent ones, never more (so a zero variance between tasks gives the total).
    When p is 0 or 1 the number of tasks is returned (Wilson over tasks).
    """
    m = np.asarray(task_means, dtype=float)
    m = m[np.isfinite(m)]
    t = m.size
    if t == 0:
        return float("nan")
    total = float(np.sum(n_samples)) if n_samples is not None else float(t)
    p = float(m.mean())
    se2 = float(m.var(ddof=1)) / t if t > 1 else 0.0
    if p <= 0 or p >= 1:
        return float(t)
    if se2 <= 0:
        return max(total, float(t))
    return float(min(max(p * (1 - p) / se2, 1.0), max(total, t)))


def wilson_clustered(task_means: np.ndarray, n_samples: np.ndarray | None = None) -> tuple[float, float]:
    """95% Wilson interval of Pass@1 (mean of per-task success rates) with the clustered effective size."""
    m = np.asarray(task_means, dtype=float)
    m = m[np.isfinite(m)]
    if m.size == 0:
        return (float("nan"), float("nan"))
    return stats.wilson(float(m.mean()), clustered_n_eff(m, n_samples))


def fisher_z_ci(r: float, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Pearson correlation ``r`` over ``n`` independent units; NaN when n <= 3."""
    if n <= 3 or not np.isfinite(r):
        return (float("nan"), float("nan"))
    r = float(np.clip(r, -0.999999, 0.999999))
    z = float(sps.norm.ppf(0.5 + level / 2.0))
    half = z / np.sqrt(n - 3)
    centre = np.arctanh(r)
    return (float(np.tanh(centre - half)), float(np.tanh(centre + half)))

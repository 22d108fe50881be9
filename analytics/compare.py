"""Honest comparisons, defined once: comparison sets, paired tests on shared tasks, Holm, clustered intervals.

Every view that ranks or compares runs (leaderboard, TMF, coverage correlation, Version diff, the ``gate`` CLI)
uses these functions, so they agree with each other:

* **Comparison sets** of a slice (``comparison_sets``): by which runs share which tasks only. The common tasks are
  those more than half of the set's runs have, its runs every run with at least 80% of them; the set comparing
  the most (run, task) pairs is ranked, the others are shown apart and never lead.
* **Paired test** of two runs: per-task differences over the tasks both ran. Exact McNemar when both runs have
  one binary sample per task; otherwise a seeded sign-flip permutation test of the mean difference (the same
  test: with 0/1 outcomes and one sample, sign flips of the discordant tasks are McNemar's binomial).
* **Selection-aware verdicts** (``max_gap_test``): the ranked runs against the data-chosen leader, a step-down
  max-gap permutation test whose chance of any false "behind" stays at alpha for any number of runs.
* **Holm** adjustment among the rows shown apart.
* **One-sided gate** (``sign_flip_one_sided``): the exact sign-flip mid-p; ``mde80_normal``: the effect a paired
  test detects with 80% power.
* **Clustered Wilson** interval for Pass@1: Wilson with ``n_eff = p(1-p) / SE^2`` where SE is the standard error
  clustered by task (Miller 2024, "Adding Error Bars to Evals"); ``score_interval`` the same with Student's t for
  mean scores.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from analytics import comparison_sets as _rule
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


# The comparison-set rule lives in ``analytics.comparison_sets``; every view calls it through this module.
MAX_ROUNDS = _rule.MAX_ROUNDS
MIN_COVERAGE = _rule.MIN_COVERAGE
ComparisonSet = _rule.ComparisonSet
ComparisonSets = _rule.ComparisonSets
TaskMatrix = _rule.TaskMatrix
comparison_set = _rule.comparison_set
comparison_sets = _rule.comparison_sets
comparison_sets_of = _rule.comparison_sets_of
task_matrix = _rule.task_matrix
task_matrix_of_pairs = _rule.task_matrix_of_pairs


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
    return float(min(1.0, 2.0 * stats.binom_half_cdf(min(n_worse, n_better), n)))


def sign_flip_pvalues(d: np.ndarray, rng: np.random.Generator, *, n_perm: int = N_PERM) -> np.ndarray:
    """Two-sided sign-flip permutation p-values of the mean of each column of ``d`` (tasks x comparisons).

    Missing cells (NaN: task not shared) count as zero differences, which a sign flip leaves unchanged, so one
    draw of signs serves every column. ``p = (1 + #{|T*| >= |T|}) / (1 + n_perm)`` with ``T`` the sum of
    differences (Phipson and Smyth 2010: never 0). A column without a nonzero difference gets p = 1. Above
    ``stats.BOOTSTRAP_MAX_TASKS`` rows the distribution's normal limit is used (``_sign_flip_normal``).
    """
    x = np.asarray(d, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] > stats.BOOTSTRAP_MAX_TASKS:
        sums = x.sum(axis=0)
        if np.isfinite(sums).all():  # no NaN nor infinity in any column: nan_to_num's copy would be the same values
            return _sign_flip_normal(x, sums)
        return _sign_flip_normal(np.nan_to_num(x, nan=0.0))
    x = np.nan_to_num(x, nan=0.0)
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


def _sign_flip_normal(x: np.ndarray, sums: np.ndarray | None = None) -> np.ndarray:
    """The sign-flip distribution's normal limit: ``T = sum(d)`` has mean 0 and variance ``sum(d^2)`` under
    random signs, so ``p = 2 (1 - Phi(|T| / sqrt(sum d^2)))`` (used above ``stats.BOOTSTRAP_MAX_TASKS`` tasks,
    where drawing the flips would cost O(tasks x flips) for a distribution already normal to within 1e-3).
    ``sums``: ``x.sum(axis=0)`` when the caller has it."""
    t = np.abs(x.sum(axis=0) if sums is None else sums)
    sd = np.sqrt((x * x).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * stats.norm_sf(t / sd)
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
    """``candidate - reference`` over the shared tasks with finite values in both, in task-id order (``differences``:
    a difference in the last bits is none)."""
    ref, cand = shared_values(reference, candidate)
    return differences(cand, ref)


def differences(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """``mine - theirs`` element by element, a difference within ``stats.TIE_RELATIVE`` of the larger magnitude 0
    (a tie: the task is neither worse nor better, and counts as neither); NaN and infinities stay as they are."""
    mine, theirs = np.asarray(mine, dtype=float), np.asarray(theirs, dtype=float)
    d = np.subtract(mine, theirs)
    if d.size == 0:
        return d
    # the few differences near 0 by the rows' largest magnitude first (no float array beside ``d``: 12 ms -> 2 ms
    # CPU for 12 rows of 66,667 tasks, the leaderboard's paired tests at 10M attempts), then each by its own values
    top = max(np.fmax.reduce(mine), -np.fmin.reduce(mine), np.fmax.reduce(theirs), -np.fmin.reduce(theirs), 0.0)
    tol = stats.TIE_RELATIVE * top
    near = (d <= tol) & (d >= -tol) & (d != 0)
    if near.any():
        at = np.flatnonzero(near)
        gap = np.abs(d[at])
        tiny = np.isfinite(gap) & (gap <= stats.TIE_RELATIVE * np.maximum(np.abs(mine[at]), np.abs(theirs[at])))
        d[at[tiny]] = 0.0
    return d


def shared_values(reference: Mapping[str, float], candidate: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``reference`` and of ``candidate`` on the shared tasks with finite values in both, in task-id
    order (two aligned arrays)."""
    ref = np.fromiter(reference.values(), dtype=float, count=len(reference))
    cand = np.fromiter(candidate.values(), dtype=float, count=len(candidate))
    ref_keys = np.array(list(reference), dtype=object)
    cand_keys = np.array(list(candidate), dtype=object)
    # the shared tasks in sorted order, and where each sits in either mapping (no Python loop over the tasks)
    shared, at_ref, at_cand = np.intersect1d(ref_keys, cand_keys, assume_unique=True, return_indices=True)
    pairs = np.column_stack([ref[at_ref], cand[at_cand]]).reshape(-1, 2)
    pairs = pairs[np.isfinite(pairs).all(axis=1)]
    return pairs[:, 0], pairs[:, 1]


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


def _finite(values: np.ndarray) -> np.ndarray:
    """The finite values as floats; the array itself (no copy) when every value is finite (a mean or variance does
    not depend on where the values sit: at 10M attempts a run's 66,667 task means were copied three times per row)."""
    m = np.asarray(values, dtype=float)
    ok = np.isfinite(m)
    return m if ok.all() else m[ok]


def clustered_n_eff(task_means: np.ndarray, n_samples: np.ndarray | None = None) -> float:
    """Effective sample size ``p(1-p) / SE^2`` of the mean of per-task means, SE clustered by task.

    ``SE^2 = var(task means, ddof=1) / tasks`` (with equal samples per task this is statsmodels' cluster-robust
    variance of the overall mean, small-sample corrected). Bounded to [1, total samples]: samples of a task can
    carry less information than independent ones, never more (so a zero variance between tasks gives the total).
    When p is 0 or 1, or there is a single task (whose samples cannot tell how other tasks would go), the number
    of tasks is returned (Wilson over tasks).
    """
    m = _finite(task_means)
    t = m.size
    if t == 0:
        return float("nan")
    total = float(np.sum(n_samples)) if n_samples is not None else float(t)
    p = float(m.mean())
    se2 = float(m.var(ddof=1)) / t if t > 1 else 0.0
    if p <= 0 or p >= 1 or t == 1:  # one task is one cluster: its samples say nothing about other tasks
        return float(t)
    if se2 <= 0:
        return max(total, float(t))
    return float(min(max(p * (1 - p) / se2, 1.0), max(total, t)))


def wilson_clustered(task_means: np.ndarray, n_samples: np.ndarray | None = None) -> tuple[float, float]:
    """95% Wilson interval of Pass@1 (mean of per-task success rates) with the clustered effective size."""
    m = _finite(task_means)
    if m.size == 0:
        return (float("nan"), float("nan"))
    return stats.wilson(float(m.mean()), clustered_n_eff(m, n_samples))


def score_interval(task_means: np.ndarray, *, level: float = 0.95) -> tuple[float, float]:
    """Interval of a mean score in [0, 1] over tasks, for small samples and zero-inflated scores.

    Wilson's interval with the task-clustered effective size ``n_eff = m(1-m) / SE^2`` (``SE^2 = var(task
    means) / tasks``) and Student's t quantile with ``tasks - 1`` degrees of freedom in place of z. Unlike a
    percentile bootstrap it does not collapse when every task scored 0 (then ``n_eff`` is the number of tasks, as
    for a rate), and it stays inside [0, 1]. Simulated coverage at 10-30 tasks: 94-97% on continuous, graded and
    zero-inflated scores, where the bootstrap gave 58-94% (docs/statistics.md). One task: Wilson over one unit (its
    samples are not independent draws of the benchmark).
    """
    m = _finite(task_means)
    t = m.size
    if t == 0:
        return (float("nan"), float("nan"))
    p = float(np.clip(m.mean(), 0.0, 1.0))
    if t == 1:
        return stats.wilson(p, 1.0, z=stats.norm_ppf(0.5 + level / 2.0))
    se2 = float(m.var(ddof=1)) / t
    n_eff = p * (1.0 - p) / se2 if 0 < p < 1 and se2 > 0 else float(t)
    return stats.wilson(p, n_eff, z=stats.t_ppf(0.5 + level / 2.0, t - 1))


def fisher_z_ci(r: float, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Pearson correlation ``r`` over ``n`` independent units; NaN when n <= 3."""
    if n <= 3 or not np.isfinite(r):
        return (float("nan"), float("nan"))
    r = float(np.clip(r, -0.999999, 0.999999))
    z = stats.norm_ppf(0.5 + level / 2.0)
    half = z / np.sqrt(n - 3)
    centre = np.arctanh(r)
    return (float(np.tanh(centre - half)), float(np.tanh(centre + half)))


MAX_GAP_PERM = 1_000  # label permutations per step of the selection-aware test (p resolution 1e-3)
MAX_GAP_CHUNK_CELLS = 1_000_000  # permutations are drawn in blocks of at most this many (task, run) cells
MAX_GAP_CELLS = 2_500  # above tasks x runs, the permutation range is replaced by its normal limit (Tukey's range)
Z80 = 0.8416212335729143  # float(scipy.stats.norm.ppf(0.8)) written out (see stats.Z95; tests/test_stats.py)


@dataclass(frozen=True)
class SelectionTest:
    """The leaderboard's selection-aware test of every ranked run against the data-chosen leader.

    Attributes:
        p_adjusted: per run (column of the input), the step-down max-gap p-value; NaN for the leader.
        critical_gap: the first step's critical gap at ``alpha``: a run whose mean is further below the leader's
            than this is marked behind (the (1 - alpha) quantile of the permutation range of all ranked runs).
        n_perm: permutations per step.
    """

    p_adjusted: np.ndarray
    critical_gap: float
    n_perm: int


def max_gap_test(
    x: np.ndarray,
    *,
    leader: int,
    rng: np.random.Generator,
    alpha: float = ALPHA,
    n_perm: int = MAX_GAP_PERM,
) -> SelectionTest:
    """Selection-aware test of every run against a leader chosen by the data (a max-statistic permutation test).

    Null: the runs' per-task values are exchangeable within each task (the runs do equally well). The statistic of
    a set of runs is its **range**: the leader's mean minus the lowest mean. Its null distribution comes from
    permuting the runs' values within every task (tasks a run lacks stay missing), so whichever run the data make
    leader, ``P(any run marked behind) <= alpha`` under the null for any number of runs. Step-down (as
    Westfall-Young's max-T): the run furthest behind is tested against the range of all runs; when it is behind it
    leaves, and the next is tested against the range of the runs left, its p never below the previous one. After
    the first step that does not reach ``alpha`` the remaining p-values come from that step's distribution (an
    upper bound of theirs; the verdicts at ``alpha`` are the step-down's). Above ``MAX_GAP_CELLS`` (tasks x runs)
    a step uses the permutation distribution's normal limit instead: the range of ``m`` independent normals of
    standard deviation ``_permutation_sd`` (Tukey's studentized range with unlimited degrees of freedom,
    ``stats.normal_range_sf``: scipy's ``studentized_range`` to about 1e-15 without importing scipy.stats), which
    costs nothing where drawing permutations would cost seconds.

    Args:
        x: ``(tasks x runs)`` per-task values (c/n or mean score); NaN where a run lacks a task.
        leader: the column of the leader (the highest mean).
        rng: the generator of the permutations.
        alpha: the level the verdicts are read at (it decides where the step-down stops drawing).
        n_perm: permutations per step.
    """
    x = np.asarray(x, dtype=float)
    means = _col_means(x)
    p_adj = np.full(x.shape[1], np.nan)
    active = [j for j in range(x.shape[1]) if np.isfinite(means[j])]
    critical, previous = float("nan"), 0.0
    tol = 1e-9 * max(1.0, float(np.nanmax(np.abs(x))) if np.isfinite(x).any() else 1.0)
    sigma = float("nan")
    complete = bool(np.isfinite(x).all())  # then so is every step's part of it
    columns: np.ndarray | None = None  # the runs' values run by run, made once for every step's sigma
    while len(active) > 1:
        others = sorted((j for j in active if j != leader), key=lambda j: means[j])
        gaps = means[leader] - means[others]
        p: np.ndarray | None
        if x.shape[0] * len(active) <= MAX_GAP_CELLS:
            null = _permuted_ranges(x[:, active], rng, n_perm=n_perm)
            if np.isnan(critical):
                critical = float(np.quantile(null, 1.0 - alpha))
            p = (1.0 + (null[None, :] >= gaps[:, None] - tol).sum(axis=1)) / (1.0 + n_perm)
            first = p[:1]
        else:
            if complete and x.shape[0] > 1 and x.flags.c_contiguous:
                columns = np.ascontiguousarray(x.T) if columns is None else columns
                sigma = _permutation_sd_of_runs(columns, active)
            else:
                sigma = _permutation_sd(x[:, active], complete=complete)
            if np.isnan(critical):
                critical = float(sigma * stats.normal_range_isf(alpha, len(active)))
            # the run furthest behind first: the others' tails only where the step-down stops (each gap's tail is
            # computed apart, so it is the same alone as among the others)
            p, first = None, _range_tail(gaps[:1], sigma, len(active))
        first = np.where(gaps[:1] > tol, first, 1.0)
        p_adj[others[0]] = previous = max(previous, float(first[0]))
        if previous >= alpha:  # no further rejection: the rest from this step's distribution, kept monotone
            p = np.where(gaps > tol, _range_tail(gaps, sigma, len(active)) if p is None else p, 1.0)
            p_adj[others[1:]] = np.maximum.accumulate(np.maximum(p[1:], previous)) if len(others) > 1 else []
            break
        active.remove(others[0])
    return SelectionTest(p_adj, critical, n_perm)


def _range_tail(gaps: np.ndarray, sigma: float, k: int) -> np.ndarray:
    """P(range of ``k`` normals of standard deviation ``sigma`` > gap), per gap (1 where sigma is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return stats.normal_range_sf(gaps / sigma, k) if sigma > 0 else np.ones(len(gaps))


def _permutation_sd(x: np.ndarray, *, complete: bool = False) -> float:
    """The standard deviation ``sigma`` for which the runs' means under within-task permutation are close to
    ``m`` independent normals (up to a shift common to all, which the range ignores).

    Permuting ``m_t`` values within task ``t`` gives each run variance ``s_t^2`` (the values' population variance)
    and each pair covariance ``-s_t^2 / (m_t - 1)``; a mean over tasks then has ``sigma^2 = sum_t s_t^2 m_t /
    (m_t - 1) / n^2`` around the common part (averaged over runs when some lack tasks). ``complete``: the caller
    knows every value is finite (the same sigma, with no flag per value).
    """
    if complete:  # every run has every task (the usual case): the sums below without a matrix of flags
        n_tasks, m = x.shape
        with np.errstate(invalid="ignore", divide="ignore"):
            var_t = np.nan_to_num(x.var(axis=1) * m / (m - 1)) if m > 1 else np.zeros(n_tasks)
        # each run's sum of var_t is the same, added in the order numpy adds the column sums of the flags' product
        # below: task after task when x's rows are contiguous, pairwise when its columns are (x[:, list] is)
        by_rows = x.strides[0] >= x.strides[1] and m > 1
        total = (float(np.cumsum(var_t)[-1]) if by_rows else float(np.add.reduce(var_t))) if n_tasks else 0.0
        per_run = np.full(m, total / max(n_tasks, 1) ** 2)
        return float(np.sqrt(per_run.mean()))
    present = np.isfinite(x)
    m_t = present.sum(axis=1)
    # every run has every task: numpy's var, equal to nanvar bit for bit without NaNs and without its copies (a step
    # of the step-down at 10M attempts: 66,667 tasks x up to 13 runs, 5 ms instead of 10)
    complete = bool(present.all())
    with np.errstate(invalid="ignore", divide="ignore"):
        var_x = x.var(axis=1) if complete else np.nanvar(np.where(present, x, np.nan), axis=1)
        var_t = np.where(m_t > 1, var_x * m_t / np.maximum(m_t - 1, 1), 0.0)
    var_t = np.nan_to_num(var_t)
    n_j = present.sum(axis=0)
    per_run = (present * var_t[:, None]).sum(axis=0) / np.maximum(n_j, 1) ** 2
    return float(np.sqrt(per_run.mean()))


def _permutation_sd_of_runs(columns: np.ndarray, active: list[int]) -> float:
    """``_permutation_sd(x[:, active], complete=True)`` of a complete, C-contiguous ``x`` of two or more tasks, from
    ``columns`` (``x.T`` made contiguous: a run's values in a row) without copying ``x[:, active]`` at every step of
    the step-down (at 10M attempts 66,667 tasks x up to 13 runs, 48 steps a board). ``x[:, active]`` is a copy with
    contiguous columns, so numpy's variance over its rows adds the runs one after another (not pairwise): here the
    same sums, means, differences and squares vector by vector, the same bits (``tests/test_board_exact.py``)."""
    rows = [columns[j] for j in active]
    m = len(rows)
    n_tasks = columns.shape[1]
    total = rows[0].copy()
    for row in rows[1:]:
        total += row
    mean = total / m
    spread = np.subtract(rows[0], mean)
    spread *= spread
    d = np.empty_like(mean)
    for row in rows[1:]:
        np.subtract(row, mean, out=d)
        d *= d
        spread += d
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        var_t = (spread / m) * m / (m - 1)
    summed = np.add.reduce(var_t)
    if not np.isfinite(summed):  # a NaN or infinity among them (a finite sum says there is none): as nan_to_num says
        summed = np.add.reduce(np.nan_to_num(var_t))
    per_run = np.full(m, float(summed) / n_tasks**2)
    return float(np.sqrt(per_run.mean()))


def _col_means(x: np.ndarray) -> np.ndarray:
    ok = np.isfinite(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, x, 0.0).sum(axis=0) / ok.sum(axis=0)


def _permuted_ranges(x: np.ndarray, rng: np.random.Generator, *, n_perm: int) -> np.ndarray:
    """The range (max - min) of the runs' means after permuting runs' values within every task, ``n_perm`` times.

    Missing cells stay where they are: per task the values present are shuffled among the runs that have one.
    """
    n_tasks, m = x.shape
    present = np.isfinite(x)
    slots = np.argsort(~present, axis=1, kind="stable")  # per task: present columns first, then missing ones
    fill = np.where(present, 0.0, 2.0 + np.arange(m)[None, :] / m)  # missing cells sort last, in column order
    counts = present.sum(axis=0).astype(float)
    out = np.empty(n_perm)
    done = 0
    complete = bool(present.all())
    while done < n_perm:
        size = min(max(1, MAX_GAP_CHUNK_CELLS // max(1, n_tasks * m)), n_perm - done)
        if complete:  # every run has every task: shuffle each task's row in place (no missing cell to keep)
            mean = rng.permuted(np.broadcast_to(x, (size, n_tasks, m)), axis=2).mean(axis=1)
            out[done : done + size] = mean.max(axis=1) - mean.min(axis=1)
            done += size
            continue
        keys = np.where(present[None], rng.random((size, n_tasks, m)), fill[None])
        order = np.argsort(keys, axis=2)
        values = np.take_along_axis(np.broadcast_to(x, (size, n_tasks, m)), order, axis=2)
        shuffled = np.empty_like(values)
        np.put_along_axis(shuffled, np.broadcast_to(slots, (size, n_tasks, m)), values, axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nansum(shuffled, axis=1) / counts[None, :]
        out[done : done + size] = mean.max(axis=1) - mean.min(axis=1)
        done += size
    return out


def mde80_normal(sd: float, n: int, *, alpha: float = ALPHA, sided: str = "two-sided") -> float:
    """The smallest mean per-task difference a paired test on ``n`` tasks detects with 80% power.

    The sign-flip test's statistic ``sum(d) / sqrt(sum(d^2))`` is close to normal; with per-task differences of
    standard deviation ``sd`` and mean ``D``, its power at level ``alpha`` is
    ``Phi((sqrt(n) D - z_a sqrt(sd^2 + D^2)) / sd)`` (``z_a`` one- or two-sided). This solves power = 0.8 for D.
    NaN when ``n`` is 0 or ``sd`` is not finite; 0 when ``sd`` is 0.

    Args:
        sd: standard deviation of the per-task differences (observed, or planned).
        n: tasks.
        alpha: the test's level.
        sided: ``one-sided`` or ``two-sided``.
    """
    if n <= 0 or not np.isfinite(sd):
        return float("nan")
    if sd <= 0:
        return 0.0
    z = stats.norm_ppf(1.0 - (alpha if sided == "one-sided" else alpha / 2.0))
    # sqrt(n) D - z sqrt(sd^2 + D^2) = Z80 sd, a quadratic in D: (n - z^2) D^2 - 2 sqrt(n) Z80 sd D + (Z80^2 - z^2) sd^2 = 0
    a = n - z * z
    b = -2.0 * np.sqrt(n) * Z80 * sd
    c = (Z80 * Z80 - z * z) * sd * sd
    if a <= 0:
        return float("inf")  # too few tasks: no difference inside [-1, 1] reaches 80% power by this approximation
    return float((-b + np.sqrt(b * b - 4.0 * a * c)) / (2.0 * a))


def observed_mde80(sd: float, n: int, *, alpha: float = ALPHA, sided: str = "two-sided") -> float:
    """``mde80_normal`` of differences as observed: NaN when they show no spread (``sd`` 0: a run against its copy
    says nothing of the gap a test would find, which is unknown, not 0)."""
    return mde80_normal(sd, n, alpha=alpha, sided=sided) if sd > 0 else float("nan")


EXACT_MAX_TOTAL = 400_000  # the exact sign-flip distribution is computed when sum |d| (on its lattice) is below this
LATTICE_SCALES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 20, 24, 30, 60, 120, 360, 2520)
N_PERM_GATE = 20_000  # Monte Carlo sign flips when the differences are not on a small lattice


@dataclass(frozen=True)
class OneSided:
    """A one-sided paired test of "the mean per-task difference is below zero" (the bad direction).

    Attributes:
        p_value: mid-p: ``P(T* < T) + P(T* = T) / 2`` under random signs of the per-task differences.
        p_exact: the conservative ``P(T* <= T)``.
        method: ``exact-sign-flip`` (the distribution enumerated on the differences' lattice), ``sign-flip``
            (Monte Carlo) or ``untestable``.
    """

    p_value: float
    p_exact: float
    method: str


def sign_flip_one_sided(d: np.ndarray, *, seed: int = 0, n_perm: int = N_PERM_GATE) -> OneSided:
    """One-sided sign-flip test that the per-task differences ``d`` have a negative mean, with the mid-p value.

    With one binary sample per task this is the one-sided exact McNemar test (binomial on the discordant tasks),
    made less conservative by the mid-p (Lancaster 1961): half the probability of the observed value counts. Its
    size at alpha 5% is 4.6-5.0% computed exactly at one sample per task (the exact p: 2.7-4.0%) and 4.2-5.7%
    simulated over 50-300 tasks x 1-3 samples (docs/statistics.md). The distribution is computed exactly when the differences lie on a small lattice (c/n
    rates with n up to 10 samples, graded scores), else from ``n_perm`` seeded flips.
    """
    x = np.asarray(d, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return OneSided(float("nan"), float("nan"), "untestable")
    x = x[np.abs(x) > 1e-12]
    if x.size == 0:
        return OneSided(1.0, 1.0, "exact-sign-flip")
    w = _lattice(x)
    if w is not None:
        below, equal = _exact_tail(w)
        return OneSided(float(min(1.0, below + 0.5 * equal)), float(min(1.0, below + equal)), "exact-sign-flip")
    rng = stats.stable_rng(seed, "gate-flip", str(x.size))
    t = x.sum()
    tol = 1e-9 * max(1.0, float(np.abs(x).sum()))
    less = equal_n = 0
    done = 0
    while done < n_perm:
        size = min(PERM_CHUNK, n_perm - done)
        sums = (rng.integers(0, 2, size=(size, x.size)) * 2.0 - 1.0) @ x
        less += int((sums < t - tol).sum())
        equal_n += int((np.abs(sums - t) <= tol).sum())
        done += size
    # the observed signs count as one draw (Phipson and Smyth): never 0
    below, equal = less / (n_perm + 1), (equal_n + 1) / (n_perm + 1)
    return OneSided(float(below + 0.5 * equal), float(below + equal), "sign-flip")


def _lattice(x: np.ndarray) -> np.ndarray | None:
    """Signed integer weights ``x * s`` for the smallest listed scale ``s`` that makes them integers, when the
    exact distribution stays small (``EXACT_MAX_TOTAL``); None otherwise."""
    for s in LATTICE_SCALES:
        w = x * s
        r = np.round(w)
        if np.all(np.abs(w - r) < 1e-6) and np.abs(r).sum() <= EXACT_MAX_TOTAL:
            return r.astype(np.int64)
    return None


def _exact_tail(w: np.ndarray) -> tuple[float, float]:
    """``P(T* < T)`` and ``P(T* = T)`` for ``T = sum(w)`` and ``T* = sum(+-|w|)`` with fair independent signs.

    ``T* = 2 S - sum|w|`` where ``S`` is the sum of the magnitudes that get a plus sign; the ``k`` tasks of one
    magnitude ``v`` add ``v`` times a Binomial(k, 1/2) to ``S``, so the distribution of ``S`` is the convolution of
    one binomial per distinct magnitude (a handful on a lattice: c/n rates give n of them), not one step per task.
    """
    mags = np.abs(np.asarray(w, dtype=np.int64))
    dist = np.ones(1)  # the distribution of S over 0..sum|w|
    for v, k in zip(*np.unique(mags[mags > 0], return_counts=True), strict=True):
        spread = np.zeros(int(v) * int(k) + 1)
        spread[:: int(v)] = stats.scipy_stats().binom.pmf(np.arange(int(k) + 1), int(k), 0.5)
        dist = _convolve(dist, spread)
    s = int(mags[np.asarray(w) > 0].sum())  # T* < T exactly when S < the sum of the positive weights
    return float(dist[:s].sum()), float(dist[s])


EXACT_DIRECT_MAX = 20_000_000  # products of lengths up to this convolve directly; longer ones through the FFT


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distribution of the sum of two independent variables on 0, 1, 2, ... (``a`` and ``b`` their pmfs):
    directly when small, else by FFT (absolute error about 1e-16 of the largest probability; negatives clipped)."""
    if a.size * b.size <= EXACT_DIRECT_MAX:
        return np.convolve(a, b)
    n = a.size + b.size - 1
    size = 1 << (n - 1).bit_length()
    return np.clip(np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n], 0.0, None)


def mid_p_two_sided(low: OneSided, high: OneSided) -> float:
    """Two-sided mid-p: twice the smaller one-sided mid-p (capped at 1)."""
    return float(min(1.0, 2.0 * min(low.p_value, high.p_value)))

"""Version-to-version diff of two runs on one benchmark: flipped tasks, exact McNemar test, deltas (pure: frames in,
frames and the ``RunDiff`` out)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analytics import compare
from analytics import formatting as fmt
from analytics.diff.arrays import TaskColumn, same_index
from analytics.stats import bootstrap_mean_ci, stable_rng

BASES = ("sample0", "majority")
CHANGE_ORDER = {"regression": 0, "fix": 1, "both fail": 2, "both pass": 3}
SEED = 20260122


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c`` (binomial, p = 1/2)."""
    return compare.mcnemar_exact(b, c)


def without_superseded(runs: pd.DataFrame, keep: Collection[object] = ()) -> tuple[pd.DataFrame, list[str]]:
    """``runs`` (``run_pairs``) without those a retry superseded (``is_superseded``: the errored run is its retry's,
    as on the leaderboard), except the runs in ``keep`` (named by a link); and the ids of the runs left out."""
    if "is_superseded" not in runs:
        return runs, []
    gone = runs["is_superseded"].to_numpy(dtype=bool) & ~runs["run_id"].isin(list(keep)).to_numpy(dtype=bool)
    return runs[~gone].reset_index(drop=True), [str(r) for r in runs["run_id"][gone]]


def incomplete_note(runs: pd.DataFrame, result: RunDiff) -> str | None:
    """What the page says above a comparison of ``result``'s pair when either run is incomplete (``run_pairs``'
    ``is_complete``, the leaderboard's rule): which one, why, and how many tasks each holds; the counts and the
    paired statistics are of the tasks both hold (``RunDiff.tasks``). None when both are complete."""
    if "is_complete" not in runs:
        return None
    if bool(runs["is_complete"].all()):
        return None
    from analytics.leaderboard.report import incomplete_label  # the leaderboard's words, only when one is needed

    rows = runs.set_index(runs["run_id"].astype(str))
    held = {result.run_a: len(result.tasks) + result.n_only_a, result.run_b: len(result.tasks) + result.n_only_b}
    cut = [
        f"{name} {run} is incomplete ({incomplete_label(rows.loc[run])})"
        for name, run in (("A", result.run_a), ("B", result.run_b))
        if run in rows.index and not bool(rows.loc[run, "is_complete"])
    ]
    if not cut:
        return None
    return (
        f"{' and '.join(cut)}: A holds {fmt.plural(held[result.run_a], 'task')}, B "
        f"{fmt.plural(held[result.run_b], 'task')}. The flips, the paired test and the deltas are of the "
        f"{fmt.plural(len(result.tasks), 'task')} both hold only."
    )


def default_pair(runs: pd.DataFrame) -> tuple[str, str] | None:
    """The two latest runs of the family with the most recent run among families with two or more runs.

    Falls back to the two latest runs of the benchmark. Returns ``(older, newer)`` or None.
    """
    if len(runs) < 2:
        return None
    keyed = runs.assign(_family=runs["family"].fillna(runs["agent"]))
    counts = keyed["_family"].value_counts()
    for family in keyed["_family"]:  # newest first
        if counts[family] >= 2:
            two = keyed[keyed["_family"] == family].head(2)
            return str(two["run_id"].iloc[1]), str(two["run_id"].iloc[0])
    return str(runs["run_id"].iloc[1]), str(runs["run_id"].iloc[0])


@dataclass(frozen=True)
class RunDiff:
    """Everything the diff page shows for two runs A (before) and B (after)."""

    run_a: str
    run_b: str
    basis: str
    tasks: pd.DataFrame  # one row per matched task
    n_only_a: int
    n_only_b: int
    b_regressions: int  # A pass, B fail
    c_fixes: int  # A fail, B pass
    p_value: float  # exact McNemar on the flips; NaN when the runs share no task (cannot be tested)
    deltas: pd.DataFrame  # slice, n_tasks, pass_a, pass_b, delta, lo, hi
    metric: str = "pass@1"  # the benchmark's own metric (pass@1 or mean_score)
    paired: compare.PairedTest | None = None  # the leaderboard's test of B against A on the metric
    measures: pd.DataFrame | None = None  # metric, cost and latency: mean A, mean B, delta, CI, p (MEASURE_COLUMNS)
    # aligned with ``tasks``' rows when the pair was read with integer task codes (``load.compare_runs``): each
    # task's place in task-id order, and the numbers of A's and B's code lists in ``code_lists`` (``tasks_by_change``
    # sorts and writes the code changes from them, once per distinct pair of lists)
    task_rank: np.ndarray | None = field(default=None, compare=False, repr=False)
    code_ids: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False, repr=False)
    code_lists: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def is_testable(self) -> bool:
        """False when the runs share no task: nothing can be said about a difference."""
        return len(self.tasks) > 0

    @property
    def flipped(self) -> pd.DataFrame:
        """Tasks whose binary outcome changed: regressions first, then fixes."""
        return self.tasks[self.tasks["change"].isin(["regression", "fix"])].reset_index(drop=True)


def pair_tasks(a: pd.DataFrame, b: pd.DataFrame, *, basis: str = "sample0") -> pd.DataFrame:
    """The tasks both runs have (per-task outcomes of A and B, ``load.task_values``), one row each: A's and B's rates,
    the binary outcome of each on ``basis``, the change (regression, fix, both pass, both fail) and B - A, regressions
    first."""
    extra = ["n", "rate", "first", "first_sample", "score", "cost_usd", "latency_s", "tokens", "steps", "codes"]
    m = a.merge(b[["task_id", *extra]], on="task_id", suffixes=("_a", "_b"))
    col = "first" if basis == "sample0" else "rate"
    m["pass_a"] = (m[f"{col}_a"] >= 0.5) if basis == "majority" else m["first_a"].astype(bool)
    m["pass_b"] = (m[f"{col}_b"] >= 0.5) if basis == "majority" else m["first_b"].astype(bool)
    m["change"] = np.select(
        [m.pass_a & ~m.pass_b, ~m.pass_a & m.pass_b, m.pass_a & m.pass_b],
        ["regression", "fix", "both pass"],
        "both fail",
    )
    m["delta"] = compare.differences(m["rate_b"].to_numpy(), m["rate_a"].to_numpy())  # last-bit gaps are none
    m = m.sort_values(["change", "task_id"], key=lambda s: s.map(CHANGE_ORDER) if s.name == "change" else s)
    return m[
        [
            "task_id",
            "level",
            "category",
            "n_a",
            "n_b",
            "rate_a",
            "rate_b",
            "delta",
            "pass_a",
            "pass_b",
            "change",
            "first_sample_a",
            "first_sample_b",
            "score_a",
            "score_b",
            "cost_usd_a",
            "cost_usd_b",
            "latency_s_a",
            "latency_s_b",
            "tokens_a",
            "tokens_b",
            "steps_a",
            "steps_b",
            "codes_a",
            "codes_b",
        ]
    ].reset_index(drop=True)


def run_diff(
    a: pd.DataFrame,
    b: pd.DataFrame,
    tasks: pd.DataFrame,
    values: dict[str, dict[str, Any]],
    *,
    run_a: str,
    run_b: str,
    basis: str,
    metric: str,
) -> RunDiff:
    """The diff of runs A and B from their per-task outcomes (``a``, ``b``), the paired tasks (:func:`pair_tasks`)
    and the per-task values of the benchmark's ``metric`` (``load.metric_values`` of each run, keyed by run id)."""
    n_only = (int((~a.task_id.isin(b.task_id)).sum()), int((~b.task_id.isin(a.task_id)).sum()))
    return run_diff_of(tasks, values, n_only=n_only, run_a=run_a, run_b=run_b, basis=basis, metric=metric)


def run_diff_of(
    tasks: pd.DataFrame,
    values: dict[str, dict[str, Any]],
    *,
    n_only: tuple[int, int],
    run_a: str,
    run_b: str,
    basis: str,
    metric: str,
) -> RunDiff:
    """``run_diff`` from the paired tasks, the values and the numbers of tasks with an outcome in one run only."""
    change = tasks["change"].to_numpy()
    n_reg, n_fix = int(np.count_nonzero(change == "regression")), int(np.count_nonzero(change == "fix"))
    _, va, vb = aligned(values[run_a]["value"], values[run_b]["value"])
    paired = paired_test_of(va, vb, is_binary_single=_single(values, metric))
    return RunDiff(
        run_a,
        run_b,
        basis,
        tasks,
        n_only[0],
        n_only[1],
        n_reg,
        n_fix,
        mcnemar_exact(n_reg, n_fix) if len(tasks) else float("nan"),
        slice_deltas(tasks, seed_labels=(run_a, run_b)),
        metric,
        paired,
        measure_deltas(values[run_a], values[run_b], metric=metric, paired=paired),
    )


MEASURE_COLUMNS = ["measure", "n_tasks", "mean_a", "mean_b", "delta", "lo", "hi", "p_value", "method", "mde80"]
MEASURES = {
    "pass@1": "Pass@1",
    "mean_score": "mean score",
    "cost_usd": "cost per task ($)",
    "latency_s": "latency (s)",
    "tokens": "tokens per task",
    "steps": "tool calls per task",
}


def values_by_task(df: pd.DataFrame, metric: str) -> dict[str, Any]:
    """Per-task outcome rows of one run (``task_outcome_rows.sql`` columns with latency and tokens) as the dicts of
    ``load.metric_values``: the metric (c/n for Pass@1, else the mean score), cost, latency, tokens, steps and n."""
    value = df["c"] / df["n"] if metric == "pass@1" else df["score"]
    tasks = df["task_id"].astype(str).tolist()
    # columns turned into Python lists first: zipping a Series boxes each value (0.27 s a run of 66,667 tasks)
    return {
        "value": dict(zip(tasks, value.astype(float).tolist(), strict=True)),
        "cost_usd": dict(zip(tasks, df["cost_usd"].astype(float).tolist(), strict=True)),
        "latency_s": dict(zip(tasks, df["latency_s"].astype(float).tolist(), strict=True)),
        "tokens": dict(zip(tasks, df["tokens"].astype(float).tolist(), strict=True)),
        "steps": dict(zip(tasks, df["steps"].astype(float).tolist(), strict=True)),
        "n": dict(zip(tasks, df["n"].astype(int).tolist(), strict=True)),
    }


def aligned(
    reference: Mapping[str, float], candidate: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shared tasks with a finite value in both (sorted task ids) and the two runs' values on them, as three
    aligned arrays: ``compare.shared_values`` with the task ids, for callers that need them (no loop per task).
    Two ``TaskColumn``s of one index (``load.compare_runs_with_values``) line up by position."""
    if isinstance(reference, TaskColumn) and isinstance(candidate, TaskColumn) and same_index(reference, candidate):
        keep = aligned_positions(reference, candidate)
        return reference.tasks[keep], reference.data[keep], candidate.data[keep]
    ref_keys, ref = _keys_values(reference)
    cand_keys, cand = _keys_values(candidate)
    keys, at_ref, at_cand = np.intersect1d(ref_keys, cand_keys, assume_unique=True, return_indices=True)
    va, vb = ref[at_ref], cand[at_cand]
    keep = np.isfinite(va) & np.isfinite(vb)
    return keys[keep], va[keep], vb[keep]


def aligned_positions(reference: TaskColumn, candidate: TaskColumn) -> np.ndarray:
    """The positions on the two columns' index (``same_index``) of the tasks ``aligned`` keeps."""
    va, vb = reference.data, candidate.data
    return np.flatnonzero(reference.has & candidate.has & np.isfinite(va) & np.isfinite(vb))


def _keys_values(column: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """A mapping's task ids (an object array) and its values as floats."""
    if isinstance(column, TaskColumn):
        keys, values = column.as_arrays()
        return keys, values.astype(float)
    values = np.fromiter(column.values(), dtype=float, count=len(column))
    return np.array(list(column), dtype=object), values


def paired_test_of(
    va: np.ndarray, vb: np.ndarray, *, is_binary_single: bool = False, seed: int = 0
) -> compare.PairedTest:
    """``compare.paired_test`` of two runs' aligned values (``aligned``): the same test, from the arrays."""
    return paired_test_on(compare.differences(vb, va), is_binary_single=is_binary_single, seed=seed)


def paired_test_on(d: np.ndarray, *, is_binary_single: bool = False, seed: int = 0) -> compare.PairedTest:
    """``paired_test_of`` from the differences B - A already taken (``compare.differences``)."""
    return compare.paired_tests(d[:, None], is_binary_single=[is_binary_single], seed=seed)[0]


def _single(values: dict[str, dict[str, Any]], metric: str) -> bool:
    """Both runs have one sample per task of a binary metric: the paired test is the exact McNemar test."""
    return metric == "pass@1" and all(_all_one(run["n"]) for run in values.values())


def _all_one(n: Mapping[str, int]) -> bool:
    """Every task of a run has one sample."""
    if isinstance(n, TaskColumn):
        return bool(np.all(n.data[n.has] == 1))
    return all(v == 1 for v in n.values())


def measure_deltas(
    a: dict[str, Any], b: dict[str, Any], *, metric: str, paired: compare.PairedTest | None = None
) -> pd.DataFrame:
    """The metric, cost and latency of B against A on shared tasks: means, paired difference, 95% CI, p, and the
    difference detectable with 80% power (``mde80``, ``compare.mde80_normal`` from the observed per-task spread).

    The metric row is ``paired`` (the leaderboard's test) when given; cost and latency use the sign-flip test
    and the bootstrap over the tasks where both runs have a value.
    """
    rows = []
    keys = [("value", metric), ("cost_usd", "cost_usd"), ("latency_s", "latency_s")]
    keys += [(k, k) for k in ("tokens", "steps") if k in a and k in b]
    for key, name in keys:
        _, va, vb = aligned(a[key], b[key])  # the shared tasks with a finite value in both
        d = compare.differences(vb, va)
        if key in ("tokens", "steps") and not np.any((va != 0) | (vb != 0)):
            continue  # neither run logs it (no values, or only the zeros of logs without steps): no row
        test = paired if key == "value" and paired is not None else paired_test_on(d)
        rows.append(
            {
                "measure": MEASURES[name],
                "n_tasks": len(d),
                "mean_a": float(np.mean(va)) if len(va) else float("nan"),
                "mean_b": float(np.mean(vb)) if len(vb) else float("nan"),
                "delta": test.diff,
                "lo": test.ci95[0],
                "hi": test.ci95[1],
                "p_value": test.p_value,
                "method": test.method,
                # the smallest mean difference this two-sided test detects with 80% power (observed spread; unknown
                # without spread)
                "mde80": _mde80(d),
            }
        )
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS)


def _mde80(d: np.ndarray) -> float:
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
    return compare.observed_mde80(sd, len(d))


def tasks_by_change(
    result: RunDiff, *, low: float = -1.0, high: float = 1.0, regressions_only: bool = False
) -> pd.DataFrame:
    """Matched tasks sorted by regression (largest drop of the metric first), filtered to a change in [low, high]
    (and to tasks where B is worse, with ``regressions_only``).

    ``change_pp`` is the per-task change of the benchmark's metric (Pass@1 rate or mean score), B - A, in
    percentage points; cost, latency, token and tool-call changes are per task too (means over the task's samples),
    and ``error_codes`` the codes that appeared (+) or went (-) between A's and B's attempts of the task.
    """
    t = result.tasks
    metric = "rate" if result.metric == "pass@1" else "score"

    def change(name: str) -> np.ndarray:
        """B - A of a per-task mean, a difference in the last bits none (``compare.differences``: the same samples
        summed in another order are no regression)."""
        return compare.differences(t[f"{name}_b"].to_numpy(dtype=float), t[f"{name}_a"].to_numpy(dtype=float))

    out = pd.DataFrame(
        {
            "task_id": t["task_id"],
            "level": t["level"],
            "category": t["category"],
            "metric_a": t[f"{metric}_a"],
            "metric_b": t[f"{metric}_b"],
            "change_pp": 100.0 * change(metric),
            "cost_change_usd": change("cost_usd"),
            "latency_change_s": change("latency_s"),
            "tokens_change": change("tokens"),
            "tool_calls_change": change("steps"),
            "error_codes": _code_changes(t["codes_a"], t["codes_b"])
            if result.code_ids is None or result.code_lists is None
            else _code_changes_by_ids(*result.code_ids, result.code_lists),
            "outcome": t["change"],
        }
    )
    keep = out["change_pp"].between(100.0 * low - 1e-9, 100.0 * high + 1e-9)
    if regressions_only:
        keep &= out["change_pp"] < 0
    if result.task_rank is None:
        return out[keep].sort_values(["change_pp", "task_id"]).reset_index(drop=True)
    # the same order from the tasks' places in task-id order: no sort of the task ids' text
    at = np.flatnonzero(keep.to_numpy())
    at = at[np.lexsort((result.task_rank[at], out["change_pp"].to_numpy()[at]))]
    return out.iloc[at].reset_index(drop=True)


def _codes(value: Any) -> list[str]:
    return [str(c) for c in value] if isinstance(value, (list, tuple, np.ndarray)) else []


def _code_changes(before: pd.Series, after: pd.Series) -> list[str]:
    """``_code_change`` of each task without a Python step per task: each task's codes as a bit set over the codes
    that occur (bit i: the i-th in sorted order), so the codes that appeared and went are two integers per task and
    the text is made once per distinct pair of them. More than 62 distinct codes: once per distinct pair of code
    lists instead."""
    exploded = [pd.Series(np.asarray(col, dtype=object)).explode().dropna() for col in (before, after)]
    ids, found = pd.factorize(np.concatenate([e.astype(str).to_numpy(dtype=object) for e in exploded]))
    if len(found) > 62:
        return _code_changes_by_pair(before, after)
    codes = np.array(sorted(found), dtype=object)
    rank = np.argsort(np.argsort(np.array(found, dtype=object)))  # a code's place in sorted order: its bit
    bit = np.left_shift(np.int64(1), rank[ids].astype(np.int64)) if len(ids) else np.zeros(0, dtype=np.int64)
    masks = []
    for e, b in zip(exploded, np.split(bit, [len(exploded[0])]), strict=True):
        # the codes of a task are distinct (its list is DISTINCT), so the sum of its bits is their union
        mask = np.zeros(len(before), dtype=np.int64)
        np.add.at(mask, e.index.to_numpy(dtype=np.int64), b)
        masks.append(mask)
    gained, gone = masks[1] & ~masks[0], masks[0] & ~masks[1]
    at_gained, gained_sets = pd.factorize(gained)
    at_gone, gone_sets = pd.factorize(gone)
    where, pairs = pd.factorize(at_gained * len(gone_sets) + at_gone)  # each distinct (gained, gone), hashed
    bits = [(i, 1 << i) for i in range(len(codes))]
    made = np.array(
        [
            " ".join([*(f"+{codes[i]}" for i, b in bits if g & b), *(f"-{codes[i]}" for i, b in bits if x & b)])
            for g, x in zip(
                gained_sets[pairs // len(gone_sets)].tolist(), gone_sets[pairs % len(gone_sets)].tolist(), strict=True
            )
        ],
        dtype=object,
    )
    return made[where].tolist()


def _code_changes_by_ids(ids_a: np.ndarray, ids_b: np.ndarray, lists: np.ndarray) -> list[str]:
    """``_code_change`` of each task from the numbers of its code lists in A and B (``lists``: the distinct lists by
    number), made once per distinct pair of numbers."""
    if len(ids_a) == 0:
        return []
    width = max(len(lists), 1)
    pairs, where = np.unique(ids_a.astype(np.int64) * width + ids_b, return_inverse=True)
    made = np.array([_code_change(lists[p // width], lists[p % width]) for p in pairs.tolist()], dtype=object)
    return made[where.reshape(-1)].tolist()


def _code_changes_by_pair(before: pd.Series, after: pd.Series) -> list[str]:
    """``_code_change`` of each task, computed once per distinct pair of code lists."""
    seen: dict[tuple[tuple[Any, ...], tuple[Any, ...]], str] = {}
    out = []
    for a, b in zip(before, after, strict=True):
        key = (_as_key(a), _as_key(b))
        if (change := seen.get(key)) is None:
            change = seen[key] = _code_change(a, b)
        out.append(change)
    return out


def _as_key(value: Any) -> tuple[Any, ...]:
    """A task's code list as a dictionary key (its codes, or none)."""
    return tuple(value) if isinstance(value, (list, tuple, np.ndarray)) else ()


def _code_change(before: Any, after: Any) -> str:
    """Error codes B has and A had not (``+``), and those A had and B has not (``-``), e.g. ``+HAL -TE``."""
    a, b = set(_codes(before)), set(_codes(after))
    return " ".join([*(f"+{c}" for c in sorted(b - a)), *(f"-{c}" for c in sorted(a - b))])


def slice_deltas(tasks: pd.DataFrame, *, seed_labels: tuple[str, ...] = (), n_boot: int = 2000) -> pd.DataFrame:
    """Pass@1 of A and B and their difference per slice, with a paired bootstrap 95% interval over tasks."""
    cols = ["slice", "n_tasks", "pass_a", "pass_b", "delta", "lo", "hi"]
    # each slice's rows (in the tasks' order) from the codes of its level or category, not a frame per group
    groups: list[tuple[str, np.ndarray]] = [("all", np.arange(len(tasks)))]
    for col in ("level", "category"):
        codes, found = pd.factorize(tasks[col], sort=True)  # missing: -1, left out as groupby leaves it
        order = np.argsort(codes, kind="stable")
        edges = np.searchsorted(codes[order], np.arange(len(found) + 1))
        groups += [(f"{col}={v}", order[edges[i] : edges[i + 1]]) for i, v in enumerate(found.tolist())]
    delta, rate_a, rate_b = tasks["delta"], tasks["rate_a"], tasks["rate_b"]
    rows = []
    for name, at in groups:
        if len(at) == 0:
            continue
        d = delta.iloc[at]
        lo, hi = bootstrap_mean_ci(d.to_numpy(float), stable_rng(SEED, *seed_labels, name), n_boot=n_boot)
        rows.append(
            {
                "slice": name,
                "n_tasks": len(at),
                "pass_a": float(rate_a.iloc[at].mean()),
                "pass_b": float(rate_b.iloc[at].mean()),
                "delta": float(d.mean()),
                "lo": lo,
                "hi": hi,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def is_significant(p_value: float, *, alpha: float = 0.05) -> bool:
    """Whether a McNemar p-value is below ``alpha`` (NaN never is)."""
    return not math.isnan(p_value) and p_value < alpha

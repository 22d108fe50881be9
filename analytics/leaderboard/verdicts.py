"""The leaderboard's verdicts: per slice, the ranked comparison set (``runs.comparable_runs``), competition ranks
and the paired tests of every row against the data-chosen leader (selection-aware for the ranked rows, Holm among
the rows shown apart). Pure: rows and per-task arrays in, the rows completed in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics import compare, stats
from analytics.runs import comparable_runs_of, is_eligible


def nanmean(x: np.ndarray) -> float:
    """The mean of the finite values (NaN when there is none); when every value is finite, their mean as they are
    (the same sum: no copy of them first). A finite sum says every value is finite (a NaN or an infinity would
    make it NaN or infinite), so the common case costs one sum and no flag per value; ``x.mean()`` is that sum over
    the count, the same bits."""
    if not x.size:
        return float("nan")
    total = x.sum()
    if np.isfinite(total):
        return float(total / x.size)
    ok = np.isfinite(x)
    if ok.all():  # finite values whose sum overflowed
        return float(x.mean())
    return float(x[ok].mean()) if ok.any() else float("nan")


def span(rows: np.ndarray) -> np.ndarray | slice:
    """``rows`` (positions) as a slice when they are consecutive and increasing (a run's rows of the ``all`` slice,
    read in order), else as they are: ``values[span(rows)]`` then is a view instead of a gathered copy (at 10M
    attempts 66,667 values per run and column, read about ten times per row). The same values in the same order,
    and a mean, sum or deviation of a view is that of its copy (numpy's sums do not depend on where the values
    sit)."""
    n = len(rows)
    if n > 1 and int(rows[-1]) - int(rows[0]) == n - 1 and bool((rows[1:] > rows[:-1]).all()):
        return slice(int(rows[0]), int(rows[0]) + n)
    return rows


# Added per slice by ``compare_rows``: the comparison against the slice's leader.
COMPARISON_COLUMNS = [
    "metric",
    "metric_value",
    "rank",
    "is_leader",
    "is_comparable",
    "comparison_set_size",
    "n_shared_with_leader",
    "diff_vs_leader",
    "diff_vs_leader_ci95",
    "p_raw_vs_leader",
    "p_vs_leader",
    "test_method",
    "is_tied",
    "n_compared",
    "comparison_set_index",
    "own_set_size",
    "excluded_reason",
    "p_method",
    "mde80",
    "top_group",
]


def _competition_ranks(values: np.ndarray) -> np.ndarray:
    """1 + the number of strictly better values; equal values (to 1e-12) share a rank, whatever the row order."""
    v = np.round(values, 12)
    return 1 + (v[None, :] > v[:, None]).sum(axis=1)


def compare_rows(
    rows: list[dict[str, Any]],
    indices: list[np.ndarray],
    tasks: np.ndarray,
    values: np.ndarray,
    n: np.ndarray,
    *,
    metric: str,
    seed: int = 0,
) -> None:
    """Comparison set, rank and paired test against the leader for every slice, in place.

    Args:
        rows: leaderboard rows (one per run and slice).
        indices: per row, its (run, task) positions into ``tasks`` / ``values`` / ``n`` (one per task).
        tasks: task id per (run, task) position.
        values: the per-task value of the ranking metric (c/n for Pass@1, mean score otherwise).
        n: samples per (run, task) position (one binary sample per task -> exact McNemar).
        metric: ``pass@1`` or ``mean_score``.
        seed: seed of the sign flips and bootstrap draws.
    """
    by_slice: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_slice.setdefault(row["slice"], []).append(i)
    # every task id hashed once and its distinct ids sorted once, for all slices (each slice's grid then works on
    # integers: the ids' order among the slice's tasks is their order among all)
    task_place, names = _task_places(tasks)
    for members in by_slice.values():
        grid = _task_grid([indices[i] for i in members], task_place, names, values)
        single = [bool((n[span(indices[i])] == 1).all()) and metric == "pass@1" for i in members]
        _compare_slice([rows[i] for i in members], grid, single, metric=metric, seed=seed)


def _task_places(tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per position, its task's place among the distinct tasks sorted, and those tasks (an object array). Task
    codes (non-negative integers, ``load.coded_task_outcomes``'s) are counted in a table instead of each being
    made a Python object and hashed (867k positions at 10M attempts: 0.085 of 0.1 s); the same arrays."""
    arr = np.asarray(tasks)
    if arr.dtype.kind in "iu" and arr.size and int(arr.min()) >= 0 and int(arr.max()) <= 4 * arr.size + 1_000_000:
        seen = np.bincount(arr) > 0
        return (np.cumsum(seen) - 1)[arr], np.flatnonzero(seen).astype(object)
    codes, uniq = pd.factorize(np.asarray(tasks, dtype=object), use_na_sentinel=False)
    uniq = np.asarray(uniq, dtype=object)
    order = np.argsort(uniq, kind="stable")  # the task ids' own order (``sorted``)
    place = np.empty(len(uniq), dtype=np.int64)
    place[order] = np.arange(len(uniq))
    return place[codes], uniq[order]


@dataclass(frozen=True)
class _TaskGrid:
    """A slice's per-task values as a rows x tasks matrix, the columns in task-id order.

    Attributes:
        names: the task ids of the columns, sorted.
        held: the row has the task.
        value: the row's value on the task (NaN where it has none, or where its value is NaN).
        columns: per row, the columns of its own tasks in the order of its positions (for means summed in the
            order of the rows' own tasks, as before).
        own: per row, its values in that order.
    """

    names: np.ndarray
    held: np.ndarray
    value: np.ndarray
    columns: list[np.ndarray]
    own: list[np.ndarray]


def _task_grid(indices: list[np.ndarray], task_place: np.ndarray, names: np.ndarray, values: np.ndarray) -> _TaskGrid:
    """The ``_TaskGrid`` of the rows whose positions are ``indices``; ``task_place``: per position, its task's place
    in ``names`` (every task id, sorted). No loop per task, no text hashed again."""
    sizes = np.array([len(idx) for idx in indices], dtype=np.int64)
    together = _one_span(indices)
    if together is not None:  # the rows' positions one after another (the ``all`` slice read in order): views
        places, vals = task_place[together], np.asarray(values, dtype=float)[together]
    else:
        flat = np.concatenate(indices) if indices else np.array([], dtype=np.int64)
        places = task_place[flat]
        vals = np.asarray(values, dtype=float)[flat]
    full = _full_grid(places, sizes, names, vals)
    if full is not None:
        return full
    # the slice's tasks, in task-id order, and each position's column: np.unique's answer counted instead of
    # sorted (the places are integers below len(names))
    seen = np.bincount(places, minlength=len(names)) > 0 if len(places) else np.zeros(len(names), dtype=bool)
    present = np.flatnonzero(seen)
    codes = (np.cumsum(seen) - 1)[places]
    row = np.repeat(np.arange(len(indices)), sizes)
    held = np.zeros((len(indices), len(present)), dtype=bool)
    value = np.full((len(indices), len(present)), np.nan)
    cells = row * len(present) + codes  # each position's cell, flat (one index array instead of two)
    held.reshape(-1)[cells] = True
    value.reshape(-1)[cells] = vals
    bounds = np.cumsum(sizes)[:-1]
    return _TaskGrid(names[present], held, value, np.split(codes, bounds), np.split(vals, bounds))


def _one_span(indices: list[np.ndarray]) -> slice | None:
    """``np.concatenate(indices)`` as one slice when it is consecutive and increasing (each row's positions a span
    that starts where the previous one ends: a slice of every run's rows read in order), else None. At 10M attempts
    the ``all`` slice's 867k positions are then read through views instead of three copies."""
    start = end = None
    for idx in indices:
        part = span(idx)
        if not isinstance(part, slice) or (end is not None and part.start != end):
            return None
        start = part.start if start is None else start
        end = part.stop
    return None if start is None else slice(start, end)


def _full_grid(places: np.ndarray, sizes: np.ndarray, names: np.ndarray, vals: np.ndarray) -> _TaskGrid | None:
    """``_task_grid``'s answer when every row has the same tasks in task-id order (the usual board: every run on
    every task of the slice): the matrix is the values as they come, row after row, with no cell numbers, counts or
    scatter (at 10M attempts 867k positions, 0.05 of a board's 0.5 CPU s); None otherwise. The same arrays."""
    if not len(sizes) or not (sizes == sizes[0]).all() or not sizes[0]:
        return None
    width = int(sizes[0])
    first = places[:width]
    if not bool((first[1:] > first[:-1]).all()) or not bool((places.reshape(len(sizes), width) == first).all()):
        return None
    codes = np.arange(width, dtype=np.int64)  # each row's positions are the columns in order
    value = vals.reshape(len(sizes), width)
    own = list(vals.reshape(len(sizes), width))  # each row's values, as the split of ``vals`` gives them
    value.flags.writeable = False  # the values as read (a view, no copy): nothing writes into a grid's values
    return _TaskGrid(names[first], np.ones((len(sizes), width), dtype=bool), value, [codes] * len(sizes), own)


def _compare_slice(rows: list[dict[str, Any]], grid: _TaskGrid, single: list[bool], *, metric: str, seed: int) -> None:
    """Rank the rows of the slice's ranked comparison set and test every row against the leader (in place).

    The comparison sets are ``runs.comparable_runs`` (baseline-marked and incomplete runs left out); members of the
    ranked set are ranked by the metric over the set's common tasks they have (``n_compared``), so a run on a
    superset is ranked on the common tasks, not its extra ones.
    """
    kinds = {i: r["kind"] for i, r in enumerate(rows)}
    baseline = {i: bool(r["is_baseline"]) for i, r in enumerate(rows)}
    incomplete = {i for i, r in enumerate(rows) if not r.get("may_lead", True)}  # complete runs only lead
    rankable = [i for i in range(len(rows)) if is_eligible(kinds[i], baseline[i]) and i not in incomplete]
    matrix = compare.TaskMatrix(tuple(range(len(rows))), grid.names, grid.held)
    found = comparable_runs_of(matrix, kinds, baseline, also_excluded=incomplete)
    primary = found.primary
    core = primary.tasks if primary is not None else frozenset()
    if primary is not None and primary.columns is not None:  # the set's tasks among the grid's columns
        in_core = primary.columns
    else:
        in_core = pd.Index(grid.names).isin(list(core)) if core else np.zeros(len(grid.names), dtype=bool)
    members = {i for i in range(len(rows)) if primary is not None and i in primary.n_compared}
    point = np.array([r["pass_at_1"] if metric == "pass@1" else r["mean_score"] for r in rows], dtype=float)
    # the rows' values as the tests see them: a member of the ranked set on the set's common tasks only
    member_rows = np.array(sorted(members), dtype=np.int64)
    outside = np.flatnonzero(~in_core)
    compared = grid.value  # read only; a copy only where a member has tasks outside the set to hide
    if len(outside) and len(member_rows):
        compared = grid.value.copy()
        compared[np.ix_(member_rows, outside)] = np.nan
    for i in members:
        point[i] = nanmean(grid.own[i][in_core[grid.columns[i]]])
    ranked = [i for i in sorted(members) if i in rankable and np.isfinite(point[i])]
    ranks = dict(zip(ranked, _competition_ranks(point[ranked]).tolist(), strict=True)) if ranked else {}
    leaders = sorted((i for i in ranked if ranks[i] == 1), key=lambda i: str(rows[i]["run_id"]))
    ref = leaders[0] if leaders else None
    shared = (grid.held & grid.held[ref]).sum(axis=1) if ref is not None else None
    for i, row in enumerate(rows):
        k = found.index_of(i)
        row.update(
            metric=metric,
            metric_value=float(point[i]),
            rank=ranks.get(i),
            is_leader=i in leaders,
            is_comparable=i in members,
            comparison_set_size=len(core),
            n_shared_with_leader=None if shared is None else int(shared[i]),
            n_compared=primary.n_compared.get(i) if primary is not None else None,
            comparison_set_index=k,
            own_set_size=None if k is None else len(found.sets[k - 1].tasks),
            excluded_reason=found.excluded.get(i),
            **dict.fromkeys(TEST_COLUMNS),
        )
        row["top_group"] = False
    if ref is not None:
        tag = str(rows[ref]["slice"])
        held_compared = grid.held & (in_core[None, :] | ~np.isin(np.arange(len(rows)), member_rows)[:, None])
        _test_ranked(rows, compared, held_compared, single, ranked, ref, seed=seed, tag=tag)
        apart = [i for i in range(len(rows)) if i not in ranked]
        _test_apart(rows, grid.value, single, apart, ref, seed=seed)  # on every task shared with the leader


# Filled by the tests against the leader (None where there is no test).
TEST_COLUMNS = (
    "diff_vs_leader",
    "diff_vs_leader_ci95",
    "p_raw_vs_leader",
    "p_vs_leader",
    "test_method",
    "is_tied",
    "p_method",
    "mde80",
)
RANKED_P_METHOD = "max-gap permutation, step-down (leader chosen by the data)"
APART_P_METHOD = "Holm among the rows shown apart"


def _paired(
    value: np.ndarray, single: list[bool], which: list[int], ref: int, *, seed: int
) -> list[tuple[int, compare.PairedTest, np.ndarray]]:
    """The leaderboard's paired test (``compare.paired_tests``) of each row of ``which`` against ``ref``, on the
    tasks both have a finite value for (``value``: rows x tasks in task-id order, NaN where a row has none), the
    differences ``mine - theirs`` in task-id order; rows with the same shared tasks are tested together."""
    groups: dict[bytes, list[int]] = {}
    diffs: dict[int, np.ndarray] = {}
    theirs = value[ref]
    both = np.isfinite(value[which]) & np.isfinite(theirs)[None, :] if which else np.zeros((0, value.shape[1]), bool)
    for j, i in enumerate(which):
        mask = both[j]
        if mask.any():
            groups.setdefault(np.packbits(mask).tobytes(), []).append(i)
            mine, them = (value[i], theirs) if mask.all() else (value[i, mask], theirs[mask])  # no gathers if complete
            diffs[i] = compare.differences(mine, them)  # a difference in the last bits is none
    tested: list[tuple[int, compare.PairedTest, np.ndarray]] = []
    for members in groups.values():
        d = paired_columns([diffs[i] for i in members])
        flags = [single[i] and single[ref] for i in members]
        tests = compare.paired_tests(d, is_binary_single=flags, seed=seed)
        tested += [(i, t, diffs[i]) for i, t in zip(members, tests, strict=True)]
    return tested


def paired_columns(diffs: list[np.ndarray]) -> np.ndarray:
    """The (tasks x rows) matrix of the rows' differences for ``compare.paired_tests``, each column contiguous (the
    rows stacked, transposed: no copy): the tests read it column by column (a mean, counts, an interval per column,
    and column sums of its copies with contiguous columns), which across a row-major matrix touched every cache line
    once per column (66,667 tasks x 12 rows at 10M attempts: 0.034 -> 0.013 CPU s a slice). The same values, and
    the same sums (a column's is the same wherever its values sit): ``tests/test_board_exact.py``."""
    return np.array(diffs).T


def _set_test(row: dict[str, Any], test: compare.PairedTest, p_adj: float, method: str, mde: float) -> None:
    """Write one row's test; ``mde80`` stays None when no gap within the metric's range (0 to 1) would be found
    with 80% power (too few shared tasks), or when it is unknown (NaN: the row's differences to the leader are all
    equal, as between a run and its copy, so there is no spread to size a gap by)."""
    mde = mde if mde <= 1.0 else float("nan")
    row.update(
        diff_vs_leader=test.diff,
        diff_vs_leader_ci95=list(test.ci95),
        p_raw_vs_leader=test.p_value,
        p_vs_leader=float(p_adj),
        test_method=test.method,
        is_tied=bool(p_adj >= compare.ALPHA),
        p_method=method,
        mde80=None if not np.isfinite(mde) else float(mde),
    )


def _test_ranked(
    rows: list[dict[str, Any]],
    compared: np.ndarray,
    held: np.ndarray,
    single: list[bool],
    ranked: list[int],
    ref: int,
    *,
    seed: int,
    tag: str,
) -> None:
    """The ranked rows against the leader: the paired test's difference, interval and raw p per row, and the
    selection-aware verdict (``compare.max_gap_test`` over the ranked rows only) as ``p_vs_leader``.

    ``mde80``: the smallest gap to the leader marked behind with 80% power, the test's critical gap plus
    ``z_0.8`` standard errors of the row's paired difference (for the leader: the median of the others').
    """
    rows[ref]["top_group"] = True
    others = [i for i in ranked if i != ref]
    if not others:
        return
    tasks = np.flatnonzero(held[ranked].any(axis=0))  # the tasks any ranked row has, in task-id order
    x = np.ascontiguousarray(compared[np.ix_(np.asarray(ranked, dtype=np.int64), tasks)].T)
    rng = stats.stable_rng(seed, "max-gap", tag, str(len(tasks)), str(len(ranked)))
    sel = compare.max_gap_test(x, leader=ranked.index(ref), rng=rng)
    ses = []
    for i, test, d in _paired(compared, single, others, ref, seed=seed):
        se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
        se = se if se > 0 else float("nan")  # no spread seen (the same values): the detectable gap is unknown, not 0
        ses.append(se)
        p_adj = float(sel.p_adjusted[ranked.index(i)])
        _set_test(rows[i], test, p_adj, RANKED_P_METHOD, sel.critical_gap + compare.Z80 * se)
        rows[i]["top_group"] = bool(p_adj >= compare.ALPHA)
    finite = [se for se in ses if np.isfinite(se)]  # one-task comparisons and equal rows have no standard error
    lead = sel.critical_gap + compare.Z80 * float(np.median(finite)) if finite else float("nan")
    rows[ref]["mde80"] = float(lead) if np.isfinite(lead) and lead <= 1.0 else None


def _test_apart(
    rows: list[dict[str, Any]],
    value: np.ndarray,
    single: list[bool],
    apart: list[int],
    ref: int,
    *,
    seed: int,
) -> None:
    """Rows shown apart (humans, baselines, other task pools) against the leader on every task they share with
    it: their own family, Holm-adjusted among themselves; ``mde80`` two-sided at alpha over the family's size."""
    tested = _paired(value, single, apart, ref, seed=seed)
    adjusted = compare.holm([t.p_value for _, t, _ in tested])
    for (i, test, d), p_adj in zip(tested, adjusted, strict=True):
        sd = float(np.sqrt(np.mean(d * d))) if d.size else float("nan")
        mde = compare.observed_mde80(sd, d.size, alpha=compare.ALPHA / max(1, len(tested)))
        _set_test(rows[i], test, float(p_adj), APART_P_METHOD, mde)

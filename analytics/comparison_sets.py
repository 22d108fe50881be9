"""Comparison sets of a slice, by which runs share which tasks only (``comparison_sets``): the rule every view
that ranks or compares runs uses (through ``analytics.compare``, which re-exports these names).

The rule works on a runs x tasks boolean matrix (``TaskMatrix``), built from run -> tasks mappings
(``task_matrix``) or from the (run, task) rows of a frame (``task_matrix_of_pairs``) with one hash of every task
id: no Python step per task.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pandas as pd

K = TypeVar("K", bound=Hashable)

MIN_COVERAGE = 0.8  # a run is compared in a set when it has at least 80% of the set's common tasks
MAX_ROUNDS = 20  # refinements of one candidate set (it is stable after two or three in practice)


@dataclass(frozen=True)
class ComparisonSet:
    """One comparison set: the tasks its runs are compared on and the runs compared.

    Attributes:
        tasks: the set's common tasks (held by more than half of its pool's runs).
        runs: the runs compared on it, in the order they were given.
        n_compared: per run, how many of ``tasks`` it has (its n: a run that missed a few tasks has fewer).
        columns: ``tasks`` as a mask of the ``TaskMatrix`` columns the set was found in (``comparison_sets_of``;
            None otherwise): the same tasks, for callers that hold the matrix's columns (no task id hashed again).
    """

    tasks: frozenset[str]
    runs: tuple[Hashable, ...]
    n_compared: Mapping[Hashable, int]
    columns: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ComparisonSets:
    """The comparison sets of a slice, the ranked one first, and why every other run is not in the ranked one."""

    sets: tuple[ComparisonSet, ...]
    excluded: Mapping[Hashable, str]

    @property
    def primary(self) -> ComparisonSet | None:
        """The set that is ranked (None when no run has a task)."""
        return self.sets[0] if self.sets else None

    def index_of(self, run: Hashable) -> int | None:
        """1 for a run of the ranked set, 2, 3... for a run of another set, None for a run in no set."""
        return next((i + 1 for i, s in enumerate(self.sets) if run in s.n_compared), None)


@dataclass(frozen=True)
class TaskMatrix:
    """Which run has which task, as a boolean matrix (the input of ``comparison_sets_of``).

    Attributes:
        runs: the row labels (runs, in the order given).
        tasks: the column labels (task ids; their order changes nothing in a comparison set).
        held: ``(runs, tasks)`` booleans: the run was evaluated on the task.
    """

    runs: tuple[Hashable, ...]
    tasks: np.ndarray
    held: np.ndarray


def task_matrix(task_sets: Mapping[K, Iterable[str]]) -> TaskMatrix:
    """The ``TaskMatrix`` of a run -> tasks mapping (one hash of every task id, no loop per task)."""
    runs = tuple(task_sets)
    lists = [list(task_sets[r]) for r in runs]
    lens = np.array([len(t) for t in lists], dtype=np.int64)
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=object, count=int(lens.sum()))
    codes, names = pd.factorize(flat, use_na_sentinel=False)
    held = np.zeros((len(runs), len(names)), dtype=bool)
    held[np.repeat(np.arange(len(runs)), lens), codes] = True
    return TaskMatrix(runs, np.asarray(names, dtype=object), held)


def task_matrix_of_pairs(run_ids: Sequence[Hashable] | np.ndarray, task_ids: Sequence[str] | np.ndarray) -> TaskMatrix:
    """The ``TaskMatrix`` of (run, task) pairs (rows of a frame; repeats allowed), runs in order of first
    appearance (as ``groupby(sort=False)`` lists them)."""
    r_codes, r_names = pd.factorize(np.asarray(run_ids, dtype=object), use_na_sentinel=False)
    t_codes, t_names = pd.factorize(np.asarray(task_ids, dtype=object), use_na_sentinel=False)
    held = np.zeros((len(r_names), len(t_names)), dtype=bool)
    held[r_codes, t_codes] = True
    return TaskMatrix(tuple(r_names), np.asarray(t_names, dtype=object), held)


def comparison_sets(task_sets: Mapping[K, Iterable[str]], *, eligible: Iterable[K] | None = None) -> ComparisonSets:
    """The comparison sets of a slice, by a rule that looks only at which runs share which tasks.

    A comparison set is a set of common tasks T and the runs compared on it, consistent with each other:

    * its runs are those that have at least ``MIN_COVERAGE`` (80%) of T; each is compared on the tasks of T it
      has (``n_compared``: a run that missed a few tasks is kept, with its n);
    * T is the tasks more than half of its runs have (a run on a superset brings its extra tasks, but they are
      not common, so it is compared on T).

    Candidates grow from each run's task set (take the runs with 80% of it, then the tasks more than half of them
    have, and again until nothing changes). The **ranked** set is the candidate that compares the most (run, task)
    pairs among those of two or more runs (the most evidence: ten runs on 24 tasks rank before eleven on 12), then
    the one with more runs, then more common tasks. The same rule on the runs left gives the other sets (shown
    apart). Only candidates that mirror each other exactly (equal counts everywhere) are left tied by these;
    between those the set holding the smallest run id comes first. Renaming or reordering tasks or runs changes
    nothing else.

    Args:
        task_sets: run id -> the tasks it was evaluated on (in the slice).
        eligible: the runs that can be compared (rankable runs: not human, not baseline); all runs when None or
            when none of them has tasks. Other runs are in no set and get no reason here (the caller knows theirs).
    """
    return comparison_sets_of(task_matrix(task_sets), eligible=eligible)


def comparison_sets_of(matrix: TaskMatrix, *, eligible: Iterable[Hashable] | None = None) -> ComparisonSets:
    """``comparison_sets`` of a ``TaskMatrix`` (runs x tasks), the same sets without a loop per task."""
    has_task = np.asarray(matrix.held.any(axis=1), dtype=bool).tolist()
    pos = {r: i for i, r in enumerate(matrix.runs)}
    has = {r: bool(has_task[i]) for r, i in pos.items()}
    chosen: list[Hashable] = list(eligible if eligible is not None else matrix.runs)
    voters = [r for r in chosen if has.get(r, False)]
    if not voters:
        voters = [r for r in matrix.runs if has[r]]
    excluded: dict[Hashable, str] = {r: "no scored task in this slice" for r in chosen if not has.get(r, False)}
    rows = matrix.held[[pos[r] for r in voters]]
    cols = rows.any(axis=0)
    held, names = rows[:, cols], matrix.tasks[cols]
    found: list[ComparisonSet] = []
    commons: list[np.ndarray] = []
    left = np.ones(len(voters), dtype=bool)
    while left.any():
        members, common = _best_candidate(held, left, voters)
        n = held[:, common].sum(axis=1)
        tasks = frozenset(names[common].tolist())
        columns = np.zeros(len(matrix.tasks), dtype=bool)
        columns[np.flatnonzero(cols)[common]] = True
        found.append(
            ComparisonSet(
                tasks, tuple(voters[i] for i in members), {voters[i]: int(n[i]) for i in members}, columns=columns
            )
        )
        commons.append(common)
        left[members] = False
    if not found:
        return ComparisonSets((), excluded)
    ranked = found[0]
    voter_pos = {r: i for i, r in enumerate(voters)}
    for k, other in enumerate(found[1:], start=2):
        for run in other.runs:
            own = held[voter_pos[run]]
            inside = int((own & commons[0]).sum())
            excluded[run] = (
                f"has {inside} of the {len(ranked.tasks)} tasks of the comparison set (fewer than 80%)"
                if 2 * inside >= int(own.sum())
                else f"evaluated on other tasks (set {k}: {len(other.tasks)} tasks, {len(other.runs)} run(s))"
            )
    return ComparisonSets(tuple(found), excluded)


def _grow(held: np.ndarray, left: np.ndarray, seed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From a task mask, alternate "runs with 80% of the tasks" and "tasks more than half of those runs have"
    until stable: ``(member rows, common task mask)``."""
    tasks = seed
    members = np.flatnonzero(left)[:0]
    for _ in range(MAX_ROUNDS):
        size = int(tasks.sum())
        cover = held[:, tasks].sum(axis=1)
        new_members = np.flatnonzero(left & (cover >= MIN_COVERAGE * size - 1e-9) & (cover > 0))
        count = held[new_members].sum(axis=0)
        new_tasks = 2 * count > len(new_members)
        if np.array_equal(new_members, members) and np.array_equal(new_tasks, tasks):
            break
        members, tasks = new_members, new_tasks if new_tasks.any() else tasks
    return members, tasks


def _best_candidate(held: np.ndarray, left: np.ndarray, voters: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """The candidate set grown from each distinct task set of the runs left, best first (``comparison_sets``)."""
    seen: set[bytes] = set()
    best: tuple[tuple[int, int, int, int, str], np.ndarray, np.ndarray] | None = None
    for i in np.flatnonzero(left):
        key = np.packbits(held[i]).tobytes()
        if key in seen:
            continue
        seen.add(key)
        members, tasks = _grow(held, left, held[i].copy())
        if members.size == 0:
            continue
        pairs = int(held[np.ix_(members, tasks)].sum())
        rank = (-int(members.size >= 2), -pairs, -members.size, -int(tasks.sum()), min(str(voters[m]) for m in members))
        if best is None or rank < best[0]:
            best = (rank, members, tasks)
    if best is None:  # cannot happen (a run always covers its own tasks); kept for the type checker
        first = int(np.flatnonzero(left)[0])
        return np.array([first]), held[first].copy()
    return best[1], best[2]


def comparison_set(task_sets: Mapping[K, Iterable[str]], *, eligible: Iterable[K] | None = None) -> frozenset[str]:
    """The common tasks of the ranked comparison set (``comparison_sets``); empty when no run has a task.

    Args:
        task_sets: run id -> the tasks it was evaluated on (in the slice).
        eligible: the runs that vote (rankable runs: not human, not baseline); all runs when None or when none
            of them has tasks.
    """
    primary = comparison_sets(task_sets, eligible=eligible).primary
    return primary.tasks if primary is not None else frozenset()

"""The two runs of a diff over integer task codes (pure): each run's per-task values as arrays on one index of task
ids (the tasks either run has, sorted), so pairing, the paired tests, the gate and the tasks' changes take positions
in arrays instead of dicts keyed by task id (issue 33: at 66,667 tasks a run the dicts and their alignment were
about half of the diff's CPU).

``load.compare_runs_with_values`` reads both runs' rows in one statement (``load._PAIR_SQL``) and hands them to
``split_pair``; ``pair_arrays`` gives the frame ``compute.pair_tasks`` gave, the same values in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics import compare

CHANGES = np.array(["regression", "fix", "both fail", "both pass"], dtype=object)  # by CHANGE_ORDER

# per-run columns of a pair's rows (load._PAIR_SQL): the outcome over the attempts with a verdict and the means over
# every attempt (run_task_first, migration 011), the leaderboard's per-task values (run_task_stats, 008, prefixed v_)
OUTCOME = ["n", "rate", "first", "first_sample", "score", "cost_usd", "latency_s", "tokens", "steps"]
VALUES = ["v_n", "v_c", "v_score", "v_steps", "v_cost_usd", "all_latency_s", "all_tokens", "first_attempt"]


class TaskColumn(Mapping[str, Any]):
    """One run's value per task on an index of task ids (``tasks``: sorted, unique, the same array for every
    column of both runs of a pair): ``data[i]`` is task ``tasks[i]``'s where ``has[i]``. Reads as the mapping
    task -> value ``metric_values`` gives (over the tasks the run has a row for), and ``compute.aligned`` pairs two
    columns of one index by position."""

    __slots__ = ("data", "has", "tasks")

    def __init__(self, tasks: np.ndarray, data: np.ndarray, has: np.ndarray) -> None:
        self.tasks, self.data, self.has = tasks, data, has

    def __getitem__(self, task: str) -> Any:
        at = int(np.searchsorted(self.tasks, task))
        if at >= len(self.tasks) or self.tasks[at] != task or not self.has[at]:
            raise KeyError(task)
        return self.data[at].item()

    def __iter__(self) -> Iterator[str]:
        return iter(self.tasks[self.has].tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self.has))

    def __getstate__(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.tasks, self.data, self.has

    def __setstate__(self, state: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        self.tasks, self.data, self.has = state

    def as_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The tasks the run has and their values (task-id order)."""
        return self.tasks[self.has], self.data[self.has]


def same_index(*columns: Any) -> bool:
    """Whether every column is a ``TaskColumn`` on one index (positions line up without a look-up)."""
    return all(isinstance(c, TaskColumn) for c in columns) and all(c.tasks is columns[0].tasks for c in columns)


@dataclass(frozen=True)
class Side:
    """One run of a pair on the pair's index: ``has_outcome`` (a run_task_first row with an attempt with a verdict),
    ``has_row`` (any run_task_first row), ``has_value`` (a run_task_stats row with a scored attempt), the columns
    (OUTCOME, VALUES; level and category; the number of the task's code list) and NaN or 0 where the run has none."""

    has_outcome: np.ndarray
    has_row: np.ndarray
    has_value: np.ndarray
    cols: dict[str, np.ndarray]


def split_pair(rows: pd.DataFrame) -> tuple[np.ndarray, Side, Side, np.ndarray]:
    """The rows of both runs (``load._PAIR_SQL``: ``is_a``, ``is_b``, ``task_id``, ``codes`` as JSON text) as the
    pair's index of task ids (sorted as Python sorts them), run A's and run B's ``Side`` and the distinct code lists
    by number (``codes_id`` of each side; each list as the database gives one: an object array of its codes, or NA),
    each task id and each distinct list turned into an object once."""
    at, found = pd.factorize(rows["task_id"].to_numpy(dtype=object))
    order = np.argsort(np.asarray(found, dtype=object), kind="stable")
    names = np.asarray(found, dtype=object)[order]
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    task = rank[at]
    k = len(names)
    code_id, texts = pd.factorize(rows["codes"].to_numpy(dtype=object))  # NULL: -1
    lists = np.empty(len(texts) + 1, dtype=object)
    for i, text in enumerate(texts.tolist()):
        lists[i] = np.array(json.loads(text), dtype=object)
    lists[len(texts)] = pd.NA
    code_id = np.where(code_id < 0, len(texts), code_id)
    labels = {col: _one_object_each(rows[col].to_numpy()) for col in ("level", "category")}
    sides = []
    for flag in ("is_a", "is_b"):
        mine = rows[flag].to_numpy(dtype=bool)
        at = task[mine]

        def spread(values: np.ndarray, fill: Any, at: np.ndarray = at, mine: np.ndarray = mine) -> np.ndarray:
            out = np.full(k, fill, dtype=values.dtype)
            out[at] = values[mine]
            return out

        cols: dict[str, np.ndarray] = {}
        for col in [*OUTCOME, *VALUES, "level", "category"]:
            values = labels[col] if col in labels else rows[col].to_numpy()
            fill: Any = None if values.dtype == object else 0 if values.dtype.kind in "iub" else np.nan
            cols[col] = spread(values, fill)
        cols["codes_id"] = spread(code_id, -1)
        in_f = spread(rows["in_f"].to_numpy(dtype=bool), False)
        sides.append(
            Side(
                has_outcome=in_f & (cols["n"] > 0),
                has_row=in_f,
                has_value=spread(rows["in_s"].to_numpy(dtype=bool), False),
                cols=cols,
            )
        )
    return names, sides[0], sides[1], lists


def _one_object_each(values: np.ndarray) -> np.ndarray:
    """``values`` with equal texts as one object (the database gives an object per row): the same values, but a
    cached diff pickles each distinct level and category once, not an object per task (66,667 a column at 10M)."""
    if values.dtype != object:
        return values
    at, found = pd.factorize(values)  # missing: -1, left as it was
    out = values.copy()
    known = at >= 0
    out[known] = np.asarray(found, dtype=object)[at[known]]
    return out


def run_values(names: np.ndarray, side: Side, metric: str) -> dict[str, Any]:
    """``load.metric_values`` of one run of the pair as ``TaskColumn``s on the pair's index (the metric c/n or the
    mean score, cost, latency, tokens, steps, n; the leaderboard's per-task rows with the means over every
    attempt), and ``first_attempt`` (every task with a run_task_first row)."""
    c, has = side.cols, side.has_value
    with np.errstate(divide="ignore", invalid="ignore"):
        value = c["v_c"] / c["v_n"] if metric == "pass@1" else c["v_score"]
    return {
        "value": TaskColumn(names, value.astype(float), has),
        "cost_usd": TaskColumn(names, c["v_cost_usd"].astype(float), has),
        "latency_s": TaskColumn(names, c["all_latency_s"].astype(float), has),
        "tokens": TaskColumn(names, c["all_tokens"].astype(float), has),
        "steps": TaskColumn(names, c["v_steps"].astype(float), has),
        "n": TaskColumn(names, c["v_n"].astype(np.int64), has),
        "first_attempt": TaskColumn(names, c["first_attempt"].astype(float), side.has_row),
    }


def pair_arrays(
    names: np.ndarray, a: Side, b: Side, lists: np.ndarray, *, basis: str
) -> tuple[pd.DataFrame, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``compute.pair_tasks`` of the pair's two sides: the tasks both have an outcome for, regressions first (then
    fixes, both fail, both pass; task-id order within each), one row each; with each row's place in task-id order
    and A's and B's code-list numbers."""
    shared = np.flatnonzero(a.has_outcome & b.has_outcome)  # task-id order
    ca, cb = a.cols, b.cols
    if basis == "majority":
        pass_a, pass_b = ca["rate"][shared] >= 0.5, cb["rate"][shared] >= 0.5
    else:
        pass_a, pass_b = ca["first"][shared].astype(bool), cb["first"][shared].astype(bool)
    change = np.where(pass_a, np.where(pass_b, 3, 0), np.where(pass_b, 1, 2))  # CHANGE_ORDER
    order = np.argsort(change, kind="stable")
    at = shared[order]
    sides = (("a", ca), ("b", cb))

    def both(*cols: str) -> dict[str, np.ndarray]:  # A's and B's value of each column, on the rows
        return {f"{col}_{x}": c[col][at] for col in cols for x, c in sides}

    code_ids = ca["codes_id"][at], cb["codes_id"][at]
    frame = pd.DataFrame(
        {
            "task_id": names[at],
            "level": ca["level"][at],
            "category": ca["category"][at],
            **both("n", "rate"),
            "delta": compare.differences(cb["rate"][at], ca["rate"][at]),  # as pair_tasks: last-bit gaps are none
            "pass_a": pass_a[order],
            "pass_b": pass_b[order],
            "change": CHANGES[change[order]],
            **both("first_sample", "score", "cost_usd", "latency_s", "tokens", "steps"),
            "codes_a": lists[code_ids[0]],
            "codes_b": lists[code_ids[1]],
        }
    )
    return frame, at, code_ids

"""The Version diff over integer task codes (``analytics/diff/arrays.py``, issue 33) gives what the per-run frames
and dicts gave: the former composition (each run's run_task_first frame, ``pair_tasks``' merge, dicts of values
keyed by task, the slices by groupby, the changes sorted by task id) is kept here as the reference, on the demo and a
small generated store, every pair of a benchmark's first runs, both bases, with the gate and the tasks' changes."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics import compare, gate
from analytics import diff as rd
from analytics.diff import load as diff_load
from analytics.diff.arrays import TaskColumn
from analytics.diff.compute import SEED, _code_change, _code_changes_by_ids
from analytics.stats import bootstrap_mean_ci, stable_rng
from tests.test_aggregates import assert_same


def _bare(diff: rd.RunDiff) -> rd.RunDiff:
    """The diff without the arrays kept for the changes table (compared through the changes themselves)."""
    return dataclasses.replace(diff, task_rank=None, code_ids=None, code_lists=None)


def _former_slices(tasks: pd.DataFrame, seed_labels: tuple[str, ...]) -> pd.DataFrame:
    """``slice_deltas`` as it was: a frame per group of ``groupby``."""
    groups: list[tuple[str, pd.DataFrame]] = [("all", tasks)]
    for col in ("level", "category"):
        groups += [(f"{col}={v}", g) for v, g in tasks.dropna(subset=[col]).groupby(col, sort=True)]
    rows = []
    for name, g in groups:
        if g.empty:
            continue
        lo, hi = bootstrap_mean_ci(g["delta"].to_numpy(float), stable_rng(SEED, *seed_labels, name), n_boot=2000)
        rows.append(
            {
                "slice": name,
                "n_tasks": len(g),
                "pass_a": float(g["rate_a"].mean()),
                "pass_b": float(g["rate_b"].mean()),
                "delta": float(g["delta"].mean()),
                "lo": lo,
                "hi": hi,
            }
        )
    return pd.DataFrame(rows, columns=["slice", "n_tasks", "pass_a", "pass_b", "delta", "lo", "hi"])


def _former_compare(con: Any, run_a: str, run_b: str, basis: str) -> tuple[rd.RunDiff, dict[str, Any]]:
    """``compare_runs_with_values`` as it was: each run's frame, the merge, dicts keyed by task id."""
    rows = {r: diff_load._run_tasks(con, r) for r in (run_a, run_b)}
    a, b = diff_load._outcomes_of(rows[run_a]), diff_load._outcomes_of(rows[run_b])
    if a.empty or b.empty:
        raise rdb.RunlensError("no scored attempts")
    tasks = rd.pair_tasks(a, b, basis=basis)
    metric = compare.ranking_metric(rd.run_benchmark(con, run_a)[1])
    values = {}
    for run, got in rows.items():
        means = got[["task_id", "all_latency_s", "all_tokens"]].rename(
            columns={"all_latency_s": "latency_s", "all_tokens": "tokens"}
        )
        values[run] = diff_load._values_with(diff_load._outcome_rows(con, run), means, metric)
        values[run]["first_attempt"] = dict(
            zip(got["task_id"].astype(str).tolist(), got["first_attempt"].astype(float).tolist(), strict=True)
        )
    diff = rd.run_diff(a, b, tasks, values, run_a=run_a, run_b=run_b, basis=basis, metric=metric)
    return dataclasses.replace(diff, deltas=_former_slices(tasks, (run_a, run_b))), values


def test_the_diff_gate_and_changes_over_arrays_equal_the_former_frames(store_db: Path) -> None:
    n_checked = 0
    with rdb.reader(store_db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT benchmark FROM runs GROUP BY 1 HAVING count(*) > 1 ORDER BY 1"):
            runs = rd.run_pairs(con, benchmark=bench)["run_id"].tolist()[:3]
            for run_a, run_b in [*zip(runs, runs[1:], strict=False), (runs[-1], runs[0])]:
                for basis in rd.BASES:
                    try:
                        former, values = _former_compare(con, run_a, run_b, basis)
                    except rdb.RunlensError:
                        with pytest.raises(rdb.RunlensError):
                            rd.compare_runs(con, run_a=run_a, run_b=run_b, basis=basis)
                        continue
                    both = gate.diff_and_gate(con, run_a=run_a, run_b=run_b, basis=basis)
                    where = f"{run_a} {run_b} {basis}"
                    assert both.diff.task_rank is not None and both.diff.code_ids is not None
                    assert_same(_bare(both.diff), former, where)  # tasks frame: dtypes too
                    # the gate from the TaskColumns equals the gate from the former dicts
                    ref = gate.gate(con, baseline=run_a, candidate=run_b, sequential=True, values=values)
                    assert_same(both.gate, ref, where)
                    # the page's read: the gate run later from the values kept with the diff is the same gate
                    lazy = gate.diff_and_gate(con, run_a=run_a, run_b=run_b, basis=basis, gated=False)
                    assert lazy.gate is None and lazy.values is not None
                    assert_same(_bare(lazy.diff), _bare(both.diff), where)
                    assert_same(gate.changes_of(lazy), gate.changes_of(both), where)
                    check, error = gate.gate_of(pickle.loads(pickle.dumps(lazy)))  # as the page's cache holds it
                    assert error is None and check is not None
                    assert_same(check, ref, where)
                    # the changes (task-rank order, code changes per pair of list numbers) equal the former path's
                    for kw in ({}, {"low": -0.5, "high": 0.25}, {"regressions_only": True}):
                        got = gate.changes_of(both, **kw)  # type: ignore[arg-type]
                        assert_same(got, rd.tasks_by_change(former, **kw), f"{where} {kw}")  # type: ignore[arg-type]
                    n_checked += 1
    assert n_checked >= 4


def test_a_task_column_reads_as_the_mapping_it_replaces() -> None:
    tasks = np.array(["a", "b", "c", "é"], dtype=object)
    col = TaskColumn(tasks, np.array([1.0, np.nan, 3.0, 4.0]), np.array([True, True, False, True]))
    assert list(col) == ["a", "b", "é"] and len(col) == 3
    assert col["a"] == 1.0 and np.isnan(col["b"]) and col["é"] == 4.0
    for missing in ("c", "d", "0"):
        with pytest.raises(KeyError):
            col[missing]
    other = TaskColumn(tasks, np.array([2.0, 5.0, 1.0, np.inf]), np.array([True, True, True, True]))
    keys, va, vb = rd.aligned(col, other)  # one index: by position; the shared tasks finite in both
    assert keys.tolist() == ["a"] and va.tolist() == [1.0] and vb.tolist() == [2.0]
    as_dicts = rd.aligned(dict(col), dict(other))
    for x, y in zip((keys, va, vb), as_dicts, strict=True):
        np.testing.assert_array_equal(x, y)
    mixed = rd.aligned(col, dict(other))  # a TaskColumn beside a dict: by task id
    for x, y in zip((keys, va, vb), mixed, strict=True):
        np.testing.assert_array_equal(x, y)


def test_code_changes_from_list_numbers_equal_the_change_of_each_task() -> None:
    rng = np.random.default_rng(7)
    lists = np.empty(5, dtype=object)
    for i, codes in enumerate([["CE"], ["CE", "TE"], [], ["a b", "é"]]):
        lists[i] = np.array(codes, dtype=object)
    lists[4] = pd.NA
    ids_a, ids_b = rng.integers(0, 5, 300), rng.integers(0, 5, 300)
    want = [_code_change(lists[x], lists[y]) for x, y in zip(ids_a, ids_b, strict=True)]
    assert _code_changes_by_ids(ids_a, ids_b, lists) == want
    assert _code_changes_by_ids(ids_a[:0], ids_b[:0], lists) == []

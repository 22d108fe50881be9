"""The Version diff and the gate without a Python loop per task (issue 33) give what the loops gave: the former
per-task code of ``run_diff``, ``measure_deltas`` and ``gate`` is kept here as the reference, on the demo and on a
small generated store (``tests/test_scale_equal.py``'s fixtures), every pair of a benchmark's first runs, both
bases, each metric the gate takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics import compare, gate
from analytics import diff as rd
from analytics.diff import load as diff_load
from analytics.gate.compute import decide, sequential_test
from tests.test_aggregates import assert_same


def _former_order(con: Any, candidate: str, shared: list[str]) -> np.ndarray:
    first = rdb.query_df(
        con, "SELECT task_id, min(attempt_id) AS at FROM attempts WHERE run_id = ? GROUP BY task_id", [candidate]
    )
    at = dict(zip(first["task_id"].astype(str), first["at"].astype(float), strict=True))
    return np.array(sorted(range(len(shared)), key=lambda i: (at.get(shared[i], np.inf), shared[i])), dtype=int)


def _former_gate(con: Any, values: dict[str, Any], baseline: str, candidate: str, metric: str) -> dict[str, Any]:
    """The gate's figures as its loop over the shared tasks computed them (seed 0, one-sided, no margin)."""
    key = "cost_usd" if metric == "cost" else "value"
    a, b = values[baseline][key], values[candidate][key]
    test = compare.paired_test(a, b, is_binary_single=metric == "pass@1" and rd._single(values, metric))
    shared = sorted(t for t in a if t in b and np.isfinite(a[t]) and np.isfinite(b[t]))
    sign = 1.0 if metric == "cost" else -1.0
    regressed = [
        {"task_id": t, "baseline": a[t], "candidate": b[t], "delta": b[t] - a[t]}
        for t in shared
        if sign * (b[t] - a[t]) > 0
    ]
    regressed.sort(key=lambda r: (-sign * r["delta"], r["task_id"]))
    good = np.array([-sign * (b[t] - a[t]) for t in shared], dtype=float)
    spread = [np.array([run[t] for t in shared], dtype=float) for run in (a, b)]
    decision = (
        decide(good, alpha=compare.ALPHA, sided="one-sided", margin=0.0, seed=0, spread=spread) if shared else None
    )
    seq = None
    if metric != "cost" and shared:
        order = _former_order(con, candidate, shared)
        seq = sequential_test(
            good[order], alpha=compare.ALPHA, margin=0.0, stop_delta=gate.STOP_DELTA, order="log order"
        )
    mean = lambda run: float(np.mean([run[t] for t in shared])) if shared else float("nan")  # noqa: E731
    return {
        "test": test,
        "baseline_mean": mean(a),
        "candidate_mean": mean(b),
        "regressed": regressed,
        "decision": decision,
        "sequential": seq,
    }


def _former_measures(a: dict[str, Any], b: dict[str, Any], metric: str, paired: compare.PairedTest) -> Any:
    """``measure_deltas`` as it was: each measure's shared values and test through the task-keyed dicts."""
    rows = []
    keys = [("value", metric), ("cost_usd", "cost_usd"), ("latency_s", "latency_s")]
    keys += [(k, k) for k in ("tokens", "steps") if k in a and k in b]
    for key, name in keys:
        va, vb = compare.shared_values(a[key], b[key])
        d = vb - va
        if key in ("tokens", "steps") and not np.any((va != 0) | (vb != 0)):
            continue
        test = paired if key == "value" else compare.paired_test(a[key], b[key])
        sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
        rows.append(
            {
                "measure": rd.MEASURES[name],
                "n_tasks": len(d),
                "mean_a": float(np.mean(va)) if len(va) else float("nan"),
                "mean_b": float(np.mean(vb)) if len(vb) else float("nan"),
                "delta": test.diff,
                "lo": test.ci95[0],
                "hi": test.ci95[1],
                "p_value": test.p_value,
                "method": test.method,
                "mde80": compare.mde80_normal(sd, len(d)) if sd > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=rd.MEASURE_COLUMNS)


def test_the_diff_and_gate_equal_the_per_task_loops(store_db: Path) -> None:
    n_checked = 0
    with rdb.reader(store_db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT benchmark FROM runs GROUP BY 1 HAVING count(*) > 1 ORDER BY 1"):
            runs = rd.run_pairs(con, benchmark=bench)["run_id"].tolist()[:3]
            for run_a, run_b in zip(runs, runs[1:], strict=False):
                for basis in rd.BASES:
                    try:
                        result, values = rd.compare_runs_with_values(con, run_a=run_a, run_b=run_b, basis=basis)
                    except rdb.RunlensError:
                        continue
                    metric = result.metric
                    # the values read once equal each run's own metric_values (its separate reads)
                    former = {r: diff_load.metric_values(con, r, metric) for r in (run_a, run_b)}
                    for r in (run_a, run_b):
                        first = values[r]["first_attempt"]
                        assert set(first) >= set(former[r]["value"])
                        assert values[r]["benchmark"] == rd.run_benchmark(con, r)
                        # the values are TaskColumns on the pair's index: as mappings, the former dicts
                        got = {k: dict(v) for k, v in values[r].items() if k not in ("first_attempt", "benchmark")}
                        assert_same(got, former[r], r)
                    # the task outcomes read with the values equal the former query's (codes too)
                    assert_same(diff_load._task_outcomes(con, run_a), diff_load.task_values(con, run_a))
                    paired = compare.paired_test(
                        former[run_a]["value"], former[run_b]["value"], is_binary_single=rd._single(former, metric)
                    )
                    assert_same(result.paired, paired, "paired")
                    assert_same(result.measures, _former_measures(former[run_a], former[run_b], metric, paired))
                    both = gate.diff_and_gate(con, run_a=run_a, run_b=run_b, basis=basis)
                    assert both.gate is not None
                    ref = _former_gate(con, former, run_a, run_b, metric)
                    for field, want in ref.items():
                        assert_same(getattr(both.gate, field), want, field)
                    for m in ("mean_score", "cost"):  # the gate's other metrics read their own values
                        check = gate.gate(con, baseline=run_a, candidate=run_b, metric=m, sequential=m != "cost")
                        vals = {r: diff_load.metric_values(con, r, "mean_score") for r in (run_a, run_b)}
                        for field, want in _former_gate(con, vals, run_a, run_b, m).items():
                            assert_same(getattr(check, field), want, f"{m}.{field}")
                    n_checked += 1
    assert n_checked >= 2


@pytest.mark.parametrize("n_codes", [0, 3, 62, 70])
def test_code_changes_as_bit_sets_equal_the_change_of_each_task(n_codes: int) -> None:
    """The tasks' code changes from bit sets (or, past 62 codes, per distinct pair of lists) equal ``_code_change``
    task by task: missing lists, empty lists, codes with spaces and accents, a shifted index."""
    from analytics.diff.compute import _code_change, _code_changes

    rng = np.random.default_rng(n_codes)
    pool = np.array([f"C{i:02d}" for i in range(max(n_codes - 2, 0))] + ["a b", "é"][: min(n_codes, 2)], dtype=object)

    def column(n: int) -> pd.Series:
        rows: list[Any] = []
        for _ in range(n):
            k = int(rng.integers(0, min(4, len(pool)) + 1)) if len(pool) else 0
            rows.append(None if k == 0 and rng.random() < 0.5 else np.array(sorted(rng.choice(pool, k, replace=False))))
        return pd.Series(rows, index=np.arange(n) + 5, dtype=object)

    for n in (0, 1, 400):
        before, after = column(n), column(n)
        assert _code_changes(before, after) == [_code_change(x, y) for x, y in zip(before, after, strict=True)]


def test_a_long_sequential_path_is_drawn_with_each_buckets_extremes() -> None:
    """The gate's chart draws every task of a short path, and of a long one the first, the last and each bucket's
    lowest and highest point of both paths (the download keeps every task)."""
    from analytics.gate.figures import drawn_points, fig_sequential
    from analytics.gate.report import sequential_frame

    rng = np.random.default_rng(33)
    assert drawn_points(np.arange(7.0), np.arange(7.0)).tolist() == list(range(7))
    n, buckets = 9001, 50
    up, down = np.exp(np.cumsum(rng.normal(0, 0.05, n))), np.exp(np.cumsum(rng.normal(0, 0.05, n)))
    at = drawn_points(up, down, buckets=buckets)
    assert at[0] == 0 and at[-1] == n - 1 and len(at) <= 4 * buckets + 2
    edges = np.linspace(0, n, buckets + 1).astype(int)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        for y in (up, down):
            assert lo + int(np.argmin(y[lo:hi])) in at and lo + int(np.argmax(y[lo:hi])) in at
    seq = gate.Sequential("undecided", n, n, 1.0, 1.0, 0.05, "log order", tuple(up), tuple(down))
    fig = fig_sequential(seq)
    drawn = drawn_points(up, down)
    assert list(fig.data[0].x) == (drawn + 1).tolist() and list(fig.data[0].y) == up[drawn].tolist()
    assert len(sequential_frame(seq)) == n

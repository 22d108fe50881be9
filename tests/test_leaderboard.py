"""Leaderboard analytics and its JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analytics import leaderboard as lb
from store import RunFilter, reader
from tests.conftest import ROOT


def test_report_shape_and_values(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        rep = lb.report(con, RunFilter(benchmark="mini-bench"))
    assert rep["benchmark"] == "mini-bench"
    rows = {(r["run_id"], r["slice"]): r for r in rep["rows"]}
    a = rows[("mini-a-v1", "all")]
    assert set(a) >= {
        "run_id",
        "agent",
        "agent_version",
        "kind",
        "eval_date",
        "slice",
        "n_tasks",
        "n_attempts",
        "pass_at",
        "pass_hat",
        "mean_score",
        "ci95",
        "mean_steps",
        "mean_cost_usd",
        "rank",
        "is_leader",
        "is_comparable",
        "n_shared_with_leader",
        "p_vs_leader",
        "is_tied",
    }
    # T1: 1 of 2 samples, T2: 1 of 2 samples -> Pass@1 = 0.5, Pass@2 = 1.0, pass^2 = 0
    assert a["pass_at"] == {"1": 0.5, "2": 1.0}
    assert a["pass_hat"]["2"] == 0.0
    assert a["n_tasks"] == 2 and a["n_attempts"] == 4 and a["eval_date"] == "2026-01-15"
    lo, hi = a["ci95"]["pass@1"]
    assert 0 <= lo < 0.5 < hi <= 1
    # tool calls per attempt: 1, 0, 3, 1 -> 1.25
    assert a["mean_steps"] == pytest.approx(1.25)
    assert rows[("mini-a-v1", "level=L1")]["pass_at"]["1"] == 0.5
    assert rows[("mini-a-v1", "category=compute")]["n_tasks"] == 1
    assert rows[("mini-human", "all")]["kind"] == "human"


def test_humans_and_baselines_apart_and_ties_by_paired_test() -> None:
    rng = np.random.default_rng(11)
    truth = rng.random(60) < 0.7
    flip = rng.random(60) < 0.08  # b disagrees with a on a few tasks: tied
    parts = [
        _outcomes("a", [1] * 60, list(truth.astype(int)), ["L1"] * 60, list(truth.astype(float))),
        _outcomes("b", [1] * 60, list((truth ^ flip).astype(int)), ["L1"] * 60, [0.0] * 60),
        _outcomes("c", [1] * 60, [0] * 60, ["L1"] * 60, [0.0] * 60),  # far behind
        _outcomes("h", [1] * 60, [1] * 60, ["L1"] * 60, [1.0] * 60),  # human, better than all
        _outcomes("base", [1] * 60, [1] * 60, ["L1"] * 60, [1.0] * 60),  # a baseline run, better than all
    ]
    runs = _runs("a", "b", "c", "h", "base")
    runs.loc[runs["run_id"] == "h", "kind"] = "human"
    runs["is_baseline"] = runs["run_id"] == "base"
    out = lb.leaderboard_rows(runs, pd.concat(parts)).set_index(["run_id", "slice"]).xs("all", level=1)
    p_b = out.loc["b", "pass_at_1"]
    assert out.loc["a", "is_leader"] if out.loc["a", "pass_at_1"] > p_b else out.loc["b", "is_leader"]
    assert not out.loc["h", "is_leader"] and not out.loc["base", "is_leader"]
    assert pd.isna(out.loc["h", "rank"]) and pd.isna(out.loc["base", "rank"]) and out.loc["c", "rank"] == 3
    assert out.loc["c", "is_tied"] is False and out.loc["c", "test_method"] == "mcnemar-exact"
    non_leader = "b" if out.loc["a", "is_leader"] else "a"
    assert out.loc[non_leader, "is_tied"] is True and out.loc[non_leader, "n_shared_with_leader"] == 60
    # rows shown apart (the human, the baseline) are their own family: Holm over their exact McNemar p-values only
    from statsmodels.stats.multitest import multipletests

    raw = out.loc[["h", "base"], "p_raw_vs_leader"].astype(float)
    want = multipletests(raw.to_numpy(), method="holm")[1]
    assert np.allclose(out.loc[["h", "base"], "p_vs_leader"].astype(float), want)
    assert (out.loc[["h", "base"], "p_method"] == lb.APART_P_METHOD).all()
    # ranked rows: the selection-aware test, whatever is shown apart
    assert (out.loc[["b", "c"], "p_method"] == lb.RANKED_P_METHOD).all()
    alone = lb.leaderboard_rows(_runs("a", "b", "c"), pd.concat(parts[:3])).set_index(["run_id", "slice"])
    assert list(alone.xs("all", level=1).loc[["b", "c"], "p_vs_leader"]) == list(out.loc[["b", "c"], "p_vs_leader"])


def test_leaderboard_with_two_task_pools() -> None:
    """Three runs on pool P, two on pool Q that shares 5 tasks with P: only P's runs are ranked."""
    rng = np.random.default_rng(5)
    pool_p = [f"p{i:02d}" for i in range(40)]
    pool_q = pool_p[:5] + [f"q{i:02d}" for i in range(30)]

    def run(name: str, tasks: list[str], rate: float) -> pd.DataFrame:
        c = (rng.random(len(tasks)) < rate).astype(int)
        return pd.DataFrame(
            {
                "run_id": name,
                "task_id": tasks,
                "n": 1,
                "c": c,
                "score": c.astype(float),
                "steps": 1.0,
                "cost_usd": np.nan,
                "level": None,
                "category": None,
            }
        )

    parts = [
        run("p1", pool_p, 0.5),
        run("p2", pool_p, 0.6),
        run("p3", pool_p, 0.4),
        run("q1", pool_q, 1.0),
        run("q2", pool_q, 0.95),
    ]
    runs = _runs("p1", "p2", "p3", "q1", "q2")
    out = lb.leaderboard_rows(runs, pd.concat(parts)).set_index("run_id")
    assert (out["comparison_set_size"] == 40).all()
    assert set(out.index[out["is_comparable"]]) == {"p1", "p2", "p3"}
    assert out.loc[["q1", "q2"], "rank"].isna().all() and not out.loc[["q1", "q2"], "is_leader"].any()
    leader = out.index[out["is_leader"]][0]
    assert leader in {"p1", "p2", "p3"} and out.loc[leader, "rank"] == 1
    assert out.loc[leader, "pass_at_1"] == out.loc[["p1", "p2", "p3"], "pass_at_1"].max()
    assert (out.loc[["q1", "q2"], "n_shared_with_leader"] == 5).all()  # tested on the 5 shared tasks only
    assert lb.apart_reason(out.loc["q1"].to_dict()) == "evaluated on other tasks: 5 shared"
    assert out.loc[leader, "is_tied"] is None and out.loc[leader, "p_vs_leader"] is None


def test_equal_estimates_share_rank_whatever_the_order() -> None:
    a = _outcomes("a", [1] * 4, [1, 1, 0, 0], [None] * 4, [1.0, 1.0, 0.0, 0.0])
    b = _outcomes("b", [1] * 4, [0, 0, 1, 1], [None] * 4, [0.0, 0.0, 1.0, 1.0])
    for order in (("a", "b"), ("b", "a")):
        out = lb.leaderboard_rows(_runs(*order), pd.concat([a, b])).set_index("run_id")
        assert list(out["rank"]) == [1, 1] and out["is_leader"].all()
        assert out.loc["a", "is_tied"] is None and out.loc["b", "is_tied"] is True  # reference: smallest run id


def test_graded_benchmark_ranks_by_mean_score() -> None:
    # Pass@1 (thresholded) ties at 50%, mean score separates them
    a = _outcomes("a", [1] * 4, [1, 1, 0, 0], [None] * 4, [0.9, 0.9, 0.4, 0.4])
    b = _outcomes("b", [1] * 4, [1, 1, 0, 0], [None] * 4, [0.6, 0.6, 0.1, 0.1])
    out = lb.leaderboard_rows(_runs("b", "a"), pd.concat([a, b]), metric="mean_score").set_index("run_id")
    assert out.loc["a", "rank"] == 1 and out.loc["b", "rank"] == 2 and out.loc["b", "test_method"] == "sign-flip"
    assert out.loc["b", "diff_vs_leader"] == pytest.approx(-0.3)


def test_no_shared_tasks_is_untestable_not_tied() -> None:
    a = _outcomes("a", [1] * 3, [1, 1, 0], [None] * 3, [1.0, 1.0, 0.0])
    b = _outcomes("b", [1] * 3, [1, 0, 0], [None] * 3, [1.0, 0.0, 0.0]).assign(task_id=["x", "y", "z"])
    out = lb.leaderboard_rows(_runs("a", "b"), pd.concat([a, b])).set_index("run_id")
    # two pools mirroring each other (one run, three tasks each): the set holding the smallest run id is ranked
    assert out.loc["a", "is_leader"] and not out.loc["b", "is_comparable"]
    assert out.loc["b", "n_shared_with_leader"] == 0
    assert out.loc["b", "is_tied"] is None and out.loc["b", "p_vs_leader"] is None


def test_filters_by_agent_and_date(fixture_db: Path) -> None:
    import datetime as dt

    with reader(fixture_db) as con:
        only_a = lb.leaderboard(con, RunFilter(benchmark="mini-bench", agents=("Agent A",)))
        late = lb.leaderboard(con, RunFilter(benchmark="mini-bench", date_from=dt.date(2026, 1, 12)))
        none = lb.leaderboard(con, RunFilter(benchmark="no-such-bench"))
    assert set(only_a["run_id"]) == {"mini-a-v1"}
    assert set(late["run_id"]) == {"mini-a-v1"}
    assert none.empty and list(none.columns)[:3] == ["run_id", "agent", "agent_version"]


def test_bootstrap_interval_is_deterministic(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        a = lb.report(con, RunFilter(benchmark="mini-bench"))
        b = lb.report(con, RunFilter(benchmark="mini-bench"))
    assert a == b


def test_cli_json(fixture_db: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "analytics",
            "leaderboard",
            "--db",
            str(fixture_db),
            "--benchmark",
            "mini-bench",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["benchmark"] == "mini-bench" and {r["slice"] for r in rep["rows"]} >= {"all", "level=L1", "level=L2"}


def test_display_table_and_figure(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        df = lb.leaderboard(con, RunFilter(benchmark="mini-bench"))
    overall = df[df["slice"] == "all"]
    table = lb.display_table(overall)
    assert {"Pass@1 %", "Pass@1 95% CI", "pass^2 %", "Cost per task", "Tasks"} <= set(table.columns)
    fig = lb.fig_pass_at_1(overall)
    xs = sorted(x for trace in fig.data for x in trace.x)
    assert xs == [50.0, 100.0]
    pivot = lb.slice_pivot(df, "level")
    assert list(pivot.columns) == ["Run", "L1", "L2"]


def _runs(*ids: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": list(ids),
            "agent": [i.upper() for i in ids],
            "agent_version": None,
            "family": None,
            "kind": "llm",
            "eval_date": pd.NaT,
        }
    )


def _outcomes(run: str, n: list[int], c: list[int], levels: list[str | None], score: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": run,
            "task_id": [f"t{i}" for i in range(len(n))],
            "n": n,
            "c": c,
            "score": score,
            "steps": 1.0,
            "cost_usd": float("nan"),
            "level": levels,
            "category": None,
        }
    )


def test_leaderboard_rows_slices_pass_at_k_and_k_max_by_hand() -> None:
    # run a: three tasks with 3, 2 and 2 samples -> k_max = 2 for every slice of the run
    out = _outcomes("a", [3, 2, 2], [1, 2, 0], ["L1", "L1", None], [0.2, 1.0, 0.0])
    df = lb.leaderboard_rows(_runs("a"), out).set_index("slice")
    assert list(df.index) == ["all", "level=L1"]  # no category anywhere; the level-less task only in "all"
    assert (df["k_max"] == 2).all()
    # Pass@2 per task: 1 - C(2,2)/C(3,2) = 2/3, 1, 0
    assert df.loc["all", "pass_at"]["2"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert df.loc["level=L1", "pass_at"]["1"] == pytest.approx((1 / 3 + 1) / 2)
    assert df.loc["level=L1", "pass_hat"]["2"] == pytest.approx((0 + 1) / 2)
    assert df.loc["all", "n_attempts"] == 7 and df.loc["level=L1", "n_tasks"] == 2
    assert df.loc["all", "mean_cost_usd"] is None and np.isnan(df.loc["all", "ci95"]["mean_cost_usd"]).all()


def test_leaderboard_rows_interval_does_not_depend_on_the_other_runs_shown() -> None:
    rng = np.random.default_rng(3)
    a = _outcomes("a", [1] * 30, list(rng.integers(0, 2, 30)), ["L1"] * 30, list(rng.random(30)))
    b = _outcomes("b", [1] * 30, list(rng.integers(0, 2, 30)), ["L1"] * 30, list(rng.random(30)))
    alone = lb.leaderboard_rows(_runs("a"), a).set_index(["run_id", "slice"])
    both = lb.leaderboard_rows(_runs("b", "a"), pd.concat([a, b])).set_index(["run_id", "slice"])
    assert list(both.index.get_level_values(0).unique()) == ["b", "a"]  # the runs' order is kept
    for key in (("a", "all"), ("a", "level=L1")):
        got, ref = both.loc[key, "ci95"], alone.loc[key, "ci95"]
        assert got.keys() == ref.keys()
        assert all(np.array_equal(got[m], ref[m], equal_nan=True) for m in ref)
    lo, hi = alone.loc[("a", "all"), "ci95"]["mean_score"]
    assert lo < alone.loc[("a", "all"), "mean_score"] < hi


def test_figure_plots_the_ranking_metric() -> None:
    a = _outcomes("a", [1] * 4, [1, 1, 0, 0], [None] * 4, [0.9, 0.9, 0.4, 0.4])
    b = _outcomes("b", [1] * 4, [1, 1, 0, 0], [None] * 4, [0.6, 0.6, 0.1, 0.1])
    graded = lb.leaderboard_rows(_runs("a", "b"), pd.concat([a, b]), metric="mean_score")
    fig = lb.fig_pass_at_1(graded)
    assert sorted(fig.data[0].x) == pytest.approx([35.0, 65.0]) and "Mean score" in fig.layout.xaxis.title.text
    binary = lb.leaderboard_rows(_runs("a", "b"), pd.concat([a, b]))
    assert sorted(lb.fig_pass_at_1(binary).data[0].x) == [50.0, 50.0]


def _costed(run: str, c: list[int], cost: float | None) -> pd.DataFrame:
    out = _outcomes(run, [1] * len(c), c, [None] * len(c), [float(v) for v in c])
    return out.assign(cost_usd=np.nan if cost is None else cost)


def test_pareto_flags_by_hand() -> None:
    """HAL's cost-accuracy frontier: dominated (costlier and no better), ties (both optimal), no cost (None)."""
    c = [1] * 6 + [0] * 4  # 60% pass
    parts = [
        _costed("cheap", [1] * 5 + [0] * 5, 0.10),  # 50% at $0.10: optimal (cheapest)
        _costed("best", [1] * 8 + [0] * 2, 0.50),  # 80% at $0.50: optimal (best)
        _costed("mid", c, 0.30),  # 60% at $0.30: optimal
        _costed("mid-twin", c, 0.30),  # exactly the same point: both optimal
        _costed("waste", c, 0.60),  # 60% at $0.60: dominated by mid (and by best)
        _costed("free", [1] * 4 + [0] * 6, None),  # no cost: not assessed
    ]
    out = lb.leaderboard_rows(_runs("cheap", "best", "mid", "mid-twin", "waste", "free"), pd.concat(parts))
    flags = out[out["slice"] == "all"].set_index("run_id")["is_pareto_optimal"].to_dict()
    assert flags == {"cheap": True, "best": True, "mid": True, "mid-twin": True, "waste": False, "free": None}


def test_pareto_is_in_the_json_report(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        rep = lb.report(con, RunFilter(benchmark="mini-bench"))
    assert rep["rows"] and all("is_pareto_optimal" in r for r in rep["rows"])
    assert {r["is_pareto_optimal"] for r in rep["rows"]} <= {True, False, None}


def test_each_run_has_its_own_chart_row() -> None:
    """Three runs of one agent (o3 on three dates, two of them the same day) are three rows, never one."""
    runs = _runs("r1", "r2", "r3").assign(
        agent="o3", eval_date=pd.to_datetime(["2025-01-01", "2025-02-01", "2025-02-01"])
    )
    parts = [_costed(r, [1, 0, 1, 0], 0.1 * (i + 1)) for i, r in enumerate(["r1", "r2", "r3"])]
    out = lb.leaderboard_rows(runs, pd.concat(parts))
    overall = out[out["slice"] == "all"]
    labels = [y for trace in lb.fig_pass_at_1(overall).data for y in trace.y]
    assert sorted(labels) == ["o3 · 2025-01-01", "o3 · 2025-02-01 · r2", "o3 · 2025-02-01 · r3"]
    points = [t for t in lb.fig_cost_accuracy(overall).data]
    assert sum(len(t.x) for t in points) == 3


@pytest.mark.parametrize("costs", [(0.001, 0.01, 0.1, 0.2), (0.001, 0.002, 0.003, 0.004)])
def test_frontier_labels_stay_on_the_chart_clear_of_the_line(costs: tuple[float, ...]) -> None:
    """A label to the left of the cheapest run ran off the chart (the name cut to its date); one to the right of the
    next crossed the frontier's step line. Every frontier run is named, inside the plot, clear of every marker, of
    the other names and of the line (log and linear cost axes)."""
    from analytics import figures as placing
    from analytics.leaderboard import figures as lb_figures

    runs = _runs("agent-one-long-name", "agent-two-long-name", "agent-three-long-name", "agent-four", "dominated")
    outcomes = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]]
    # the dominated run beside the cheapest on the frontier's line (the demo's: its marker took the name's place)
    costs = (*costs, costs[0] * 1.8)
    parts = [_costed(r, o, c) for r, o, c in zip(runs["run_id"], outcomes, costs, strict=True)]
    out = lb.leaderboard_rows(runs, pd.concat(parts))
    fig = lb.fig_cost_accuracy(out[out["slice"] == "all"])
    (frontier,) = [t for t in fig.data if t.name == "Pareto frontier"]
    width, height = lb_figures.COST_ACCURACY_PLOT_PX
    is_log = fig.layout.xaxis.type == "log"
    assert is_log == (costs[3] / costs[0] > 20)

    def place(trace: Any) -> tuple[np.ndarray, np.ndarray]:
        xs = placing.axis_fraction(list(trace.x), log=is_log, span=tuple(fig.layout.xaxis.range))
        return xs * width, placing.axis_fraction(list(trace.y), span=tuple(fig.layout.yaxis.range)) * height

    half = placing.MARKER_PX / 2
    markers = [(x - half, y - half, x + half, y + half) for t in fig.data for x, y in zip(*place(t), strict=True)]
    xs, ys = place(frontier)
    line = placing.step_boxes(xs / width, ys / height, plot=(width, height))
    boxes = []
    for x, y, text, pos in zip(xs, ys, frontier.text, frontier.textposition, strict=True):
        assert text, (list(frontier.text), list(frontier.textposition))
        box = placing.label_box(x, y, text, pos)
        assert box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height, (text, pos)
        assert not any(placing._overlaps(box, other) for other in boxes + markers + line), (text, pos)
        boxes.append(box)


def test_the_cost_axis_never_goes_below_zero() -> None:
    """One costed run (a fresh upload): the linear cost axis starts at $0, not at -0.5."""
    runs = _runs("r1")
    out = lb.leaderboard_rows(runs, _costed("r1", [1, 0, 1, 0], 0.0018))
    fig = lb.fig_cost_accuracy(out[out["slice"] == "all"])
    assert fig.layout.xaxis.type == "linear" and fig.layout.xaxis.rangemode == "nonnegative"
    assert 0.0 <= fig.layout.xaxis.range[0] < 0.0018 < fig.layout.xaxis.range[1]

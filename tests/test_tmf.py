"""Tech-Market-Fit analytics: frontier (property-based against brute force), hull, value area, stage, inputs."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analytics import stats, tmf
from store import RunFilter, reader


def brute_force_frontier(x: list[float], y: list[float]) -> set[int]:
    """Points that no other point dominates: cheaper-or-equal and better-or-equal with one strict."""
    out = set()
    for i in range(len(x)):
        dominated = any(x[j] <= x[i] and y[j] >= y[i] and (x[j] < x[i] or y[j] > y[i]) for j in range(len(x)) if j != i)
        if not dominated:
            out.add(i)
    return out


# small value sets make ties and equal costs frequent
coarse = st.sampled_from([0.01, 0.1, 0.5, 1.0, 2.0, 10.0])
fine = st.floats(min_value=0.001, max_value=100.0, allow_nan=False, allow_infinity=False)
perf = st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0]) | st.floats(min_value=0.0, max_value=1.0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(coarse | fine, perf), min_size=1, max_size=25))
def test_pareto_mask_equals_brute_force(pairs: list[tuple[float, float]]) -> None:
    x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    # values within 1e-12 of each other are one value (stats.settled: (1.0, 0) and (0.9999999999999999, 0) tie)
    want = brute_force_frontier(list(stats.settled(x)), list(stats.settled(y)))
    assert set(np.flatnonzero(tmf.pareto_mask(x, y))) == want


def test_settled_makes_values_within_their_last_bits_one_value() -> None:
    a = np.array([[1.0, 0.9999999999999999, np.nan, 2.0, np.inf, 1.0 + 1e-9], [0.3, 0.1 + 0.2, -0.0, 0.0, 5.0, 5.0]])
    got = stats.settled(a)
    assert got[0, :2].tolist() == [0.9999999999999999] * 2 and np.isnan(got[0, 2])
    assert got[0, 3:].tolist() == [2.0, np.inf, 1.0 + 1e-9]  # a difference above 1e-12 of the size stays
    assert got[1].tolist() == [0.3, 0.3, 0.0, 0.0, 5.0, 5.0]
    b = np.array([0.5, 0.25])
    assert stats.settled(b) is b  # nothing close: the array itself


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(coarse | fine, perf), min_size=1, max_size=25))
def test_hull_is_on_frontier_and_concave(pairs: list[tuple[float, float]]) -> None:
    x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    hull = tmf.upper_hull(x, y)
    assert set(hull) <= set(np.flatnonzero(tmf.pareto_mask(x, y)))
    # values a last bit apart are one value (stats.settled): (0.001, 0.0) and (0.0010000000000000002, 0.2) are at
    # one cost, so the second is the cheapest point, and two points at one cost never both rise on the hull
    sx, sy = stats.settled(x), stats.settled(y)
    assert np.all(np.diff(sx[hull]) > 0) and np.all(np.diff(sy[hull]) > 0)
    # every frontier point lies on or under the hull's piecewise-linear curve
    for i in np.flatnonzero(tmf.pareto_mask(x, y)):
        if x[hull[0]] <= x[i] <= x[hull[-1]]:
            assert y[i] <= np.interp(x[i], x[hull], y[hull]) + 1e-9
    # the cheapest point with the best performance at that cost and the best point are hull ends
    assert sy[hull[-1]] == sy.max() and sx[hull[0]] == sx.min()


def test_hull_of_two_runs_a_cost_last_bit_apart() -> None:
    """Found by the property above: equal performances a cost's last bit apart are one point of the hull, not a
    flat step; a better one a last bit dearer is the cheapest point."""
    x = np.array([0.001, 0.0010000000000000002])
    assert tmf.upper_hull(x, np.array([0.2, 0.2])).tolist() == [0]
    assert tmf.upper_hull(x, np.array([0.0, 0.2])).tolist() == [1]


def test_pareto_mask_ignores_nan_and_keeps_exact_duplicates() -> None:
    x = np.array([1.0, 1.0, 2.0, np.nan, 0.5])
    y = np.array([0.5, 0.5, 0.5, 0.9, np.nan])
    assert list(tmf.pareto_mask(x, y)) == [True, True, False, False, False]


def test_supply_cost_step_and_hull() -> None:
    fx, fy = np.array([1.0, 4.0]), np.array([0.4, 0.8])
    p = np.array([0.0, 0.4, 0.41, 0.6, 0.8, 0.81])
    assert list(tmf.supply_cost(p, fx, fy, supply="step")) == [1.0, 1.0, 4.0, 4.0, 4.0, math.inf]
    assert tmf.supply_cost(np.array([0.6]), fx, fy, supply="hull")[0] == pytest.approx(2.5)


def _frontier(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["run_id", "cost_per_task_usd", "performance"])


def test_value_area_by_hand() -> None:
    # A(p) = 10 p; S = 1 on [0, 0.5], 4 on (0.5, 0.8]
    # area = int_0.1^0.5 (10p - 1) dp + int_0.5^0.8 (10p - 4) dp = 0.8 + 0.75 = 1.55
    acc = tmf.Acceptance(human_x=10.0, human_performance=1.0)
    val = tmf.value_and_stage(_frontier([("a", 1.0, 0.5), ("b", 4.0, 0.8)]), acc)
    assert val.area == pytest.approx(1.55, rel=1e-4)
    # best saving: max(A(0.5) - 1, A(0.8) - 4) = max(4, 4) -> the cheaper run first (argmax takes the first)
    assert val.best_saving == pytest.approx(4.0)
    assert val.best_run_id == "a"
    assert val.stage == 2


def test_value_area_hull_by_hand() -> None:
    # hull supply: S = 1 up to p = 0.5 then linear to 4 at 0.8: S(p) = 1 + 10 (p - 0.5); A - S = 10p - 1 - 10p + 5 = 4
    acc = tmf.Acceptance(human_x=10.0, human_performance=1.0)
    fr = _frontier([("a", 1.0, 0.5), ("b", 4.0, 0.8)])
    val = tmf.value_and_stage(fr, acc, supply="hull", hull=fr)
    assert val.area == pytest.approx(0.8 + 4 * 0.3, rel=1e-4)


def test_stage_one_when_regions_do_not_meet() -> None:
    acc = tmf.Acceptance(human_x=1.0, human_performance=1.0)  # A(0.5) = 0.5 < 2
    val = tmf.value_and_stage(_frontier([("a", 2.0, 0.5), ("b", 5.0, 0.9)]), acc)
    assert (val.stage, val.area) == (1, 0.0)
    assert val.best_saving == pytest.approx(0.5 - 2.0)


def test_stage_three_when_an_agent_matches_the_human_below_its_cost() -> None:
    acc = tmf.Acceptance(human_x=10.0, human_performance=0.8)
    assert tmf.value_and_stage(_frontier([("a", 1.0, 0.5), ("b", 9.0, 0.8)]), acc).stage == 3
    # at human performance but dearer than the human: still stage 2
    assert tmf.value_and_stage(_frontier([("a", 1.0, 0.5), ("b", 11.0, 0.85)]), acc).stage == 2


def test_acceptance_curve_shapes() -> None:
    acc = tmf.Acceptance(human_x=8.0, human_performance=0.8, willingness=0.5, exponent=2.0)
    assert acc.cost(np.array([0.4]))[0] == pytest.approx(0.5 * 8.0 * 0.25)
    flat = tmf.Acceptance(human_x=8.0, human_performance=0.8, exponent=0.0)
    assert flat.cost(np.array([0.1, 0.9])) == pytest.approx([8.0, 8.0])


def _tasks(rows: list[dict]) -> pd.DataFrame:
    base = {
        "agent_version": None,
        "family": None,
        "kind": "llm",
        "eval_date": pd.Timestamp("2026-01-15"),
        "price_input_per_mtok": np.nan,
        "price_output_per_mtok": np.nan,
        "level": "L1",
        "category": "c",
        "human_minutes": 6.0,
        "n": 1,
        "c": 1.0,
        "score": 1.0,
        "cost_usd": np.nan,
        "input_tokens": np.nan,
        "output_tokens": np.nan,
        "latency_s": np.nan,
    }
    return pd.DataFrame([{**base, **r} for r in rows])


def _inputs(rows: list[dict]) -> tmf.TmfInputs:
    return tmf.TmfInputs("b", _tasks(rows), pd.DataFrame(columns=["subject", "ability", "ability_lo", "ability_hi"]))


def test_runs_without_cost_are_listed_not_dropped() -> None:
    rows = [{"run_id": "cheap", "agent": "A", "task_id": t, "cost_usd": 0.1, "c": float(t == "1")} for t in "12"] + [
        {"run_id": "free", "agent": "B", "task_id": t} for t in "12"
    ]
    res = tmf.analyse(_inputs(rows))
    rep = tmf.report(res)
    by_id = {p["run_id"]: p for p in rep["points"]}
    assert set(by_id) == {"cheap", "free"}
    assert by_id["free"]["cost_per_task_usd"] is None and not by_id["free"]["on_frontier"]
    assert rep["assumptions"]["runs_without_cost"] == ["free"]
    assert rep["frontier"] == ["cheap"]
    # human: 6 minutes at 50 USD/hour = 5 USD per task, default performance 100%
    assert rep["human"] == {"cost_per_task_usd": pytest.approx(5.0), "performance": 1.0}
    json.dumps(rep)


def test_points_pass_at_1_tokens_cost_and_reprice() -> None:
    rows = [
        {
            "run_id": "old",
            "agent": "M",
            "family": "F",
            "eval_date": pd.Timestamp("2025-01-01"),
            "task_id": "1",
            "price_input_per_mtok": 10.0,
            "price_output_per_mtok": 20.0,
            "input_tokens": 1000.0,
            "output_tokens": 500.0,
            "cost_usd": 0.02,
            "n": 2,
            "c": 1.0,
        },
        {
            "run_id": "new",
            "agent": "M2",
            "family": "F",
            "eval_date": pd.Timestamp("2026-01-01"),
            "task_id": "1",
            "price_input_per_mtok": 1.0,
            "price_output_per_mtok": 2.0,
            "input_tokens": 2000.0,
            "output_tokens": 0.0,
            "cost_usd": 0.002,
        },
    ]
    pts = tmf.run_points(_tasks(rows)).set_index("run_id")
    assert pts.loc["old", "performance"] == pytest.approx(0.5)
    assert pts.loc["old", "cost_per_task_usd"] == pytest.approx(0.02)
    repriced = tmf.run_points(_tasks(rows), is_repriced=True).set_index("run_id")
    # old tokens at the family's newest prices: (1000 x 1 + 500 x 2) / 1e6
    assert repriced.loc["old", "cost_per_task_usd"] == pytest.approx(0.002)
    assert repriced.loc["old", "price_run_id"] == "new" and bool(repriced.loc["old", "is_repriced"])


def test_human_run_sets_human_performance_and_is_not_a_point() -> None:
    rows = [{"run_id": "a", "agent": "A", "task_id": t, "cost_usd": 0.5} for t in "12"]
    rows += [{"run_id": "h", "agent": "Human", "kind": "human", "task_id": t, "c": float(t == "1")} for t in "12"]
    res = tmf.analyse(_inputs(rows))
    assert res.human is not None and res.human.performance == pytest.approx(0.5)
    assert [p["run_id"] for p in tmf.report(res)["points"]] == ["a"]
    assert res.value is not None and res.value.stage == 3  # 100% at $0.50 vs a 50% human at $5


def test_by_period_is_cumulative() -> None:
    rows = []
    for run, date, cost, c in (("q1", "2025-02-01", 1.0, 0.0), ("q3", "2025-08-01", 0.5, 1.0)):
        rows += [
            {"run_id": run, "agent": run, "eval_date": pd.Timestamp(date), "task_id": t, "cost_usd": cost, "c": c}
            for t in "12"
        ]
    movie = tmf.by_period(_inputs(rows), freq="quarter")
    assert [label for label, _ in movie] == ["2025Q1", "2025Q3"]
    assert movie[0][1].frontier == ("q1",) and movie[1][1].frontier == ("q3",)
    assert tmf.period_end("2025Q3", "quarter").isoformat() == "2025-09-30"
    table = tmf.period_table(movie)
    assert list(table["n_runs"]) == [1, 2]


def test_slices_and_bad_options() -> None:
    rows = [
        {"run_id": "a", "agent": "A", "task_id": t, "level": lvl, "cost_usd": 1.0}
        for t, lvl in (("1", "L1"), ("2", "L3"))
    ]
    inputs = _inputs(rows)
    assert tmf.slice_names(inputs.tasks, "level") == ["level=L1", "level=L3"]
    assert tmf.analyse(inputs, slice_name="level=L3").points["n_tasks"].tolist() == [1]
    with pytest.raises(tmf.TmfError):
        tmf.analyse(inputs, slice_name="colour=red")
    with pytest.raises(tmf.TmfError):
        tmf.run_points(inputs.tasks, performance="elo")


def test_intervals_are_seeded_and_bracket_the_estimate() -> None:
    rng = np.random.default_rng(7)
    rows = [
        {
            "run_id": "a",
            "agent": "A",
            "task_id": str(t),
            "cost_usd": float(rng.gamma(2.0, 0.1)),
            "c": float(rng.random() < 0.6),
        }
        for t in range(40)
    ]
    p1 = tmf.run_points(_tasks(rows), seed=3)
    p2 = tmf.run_points(_tasks(rows), seed=3)
    pd.testing.assert_frame_equal(p1, p2)
    r = p1.iloc[0]
    assert r.cost_lo < r.cost_per_task_usd < r.cost_hi and r.perf_lo < r.performance < r.perf_hi


def test_irt_performance_uses_stored_abilities() -> None:
    rows = [
        {"run_id": "a", "agent": "A", "agent_version": "1", "task_id": "1", "cost_usd": 1.0},
        {"run_id": "b", "agent": "B", "agent_version": None, "task_id": "1", "cost_usd": 2.0},
    ]
    abil = pd.DataFrame(
        {"subject": ["A 1", "B"], "ability": [0.5, 1.5], "ability_lo": [0.1, 1.0], "ability_hi": [0.9, 2.0]}
    )
    res = tmf.analyse(
        tmf.TmfInputs("b", _tasks(rows), abil), options=tmf.TmfOptions(performance="irt", human_performance=2.0)
    )
    pts = res.points.set_index("run_id")
    assert pts.loc["a", "performance"] == 0.5 and pts.loc["b", "performance"] == 1.5
    assert res.frontier == ("a", "b")


def test_fixture_db_end_to_end(fixture_db) -> None:
    with reader(fixture_db) as con:
        inputs = tmf.load(con, RunFilter(benchmark="mini-bench"))
    res = tmf.analyse(inputs)
    rep = tmf.report(res)
    # fixture: Agent A passes 2 of 4 attempts -> Pass@1 = mean(1/2, 1/2); human run passes both tasks
    assert rep["points"][0]["performance"] == pytest.approx(0.5)
    assert rep["human"]["performance"] == pytest.approx(1.0)
    # human cost = mean(4, 9) minutes x 50 / 60
    assert rep["human"]["cost_per_task_usd"] == pytest.approx(6.5 * 50 / 60)
    assert rep["stage"] == 2 and rep["value_area_usd"] > 0
    fig = tmf.fig_tmf(res)
    assert any(t.name == "Optimal supply curve (Pareto frontier)" for t in fig.data)
    assert any("mini-a-v1" in str(t.customdata) for t in fig.data if t.customdata is not None)


@pytest.mark.parametrize(("passed", "below"), [(9, True), (2, False)])
def test_the_best_points_label_keeps_clear_of_the_stage_badge(passed: int, below: bool) -> None:
    # above a point high in the plot the label covered the stage badge and the AI value in the top-left corner, where
    # the cheapest agent's point is when it is also the best: there it goes below the point
    rows = [
        {"run_id": "r", "agent": "A", "task_id": str(t), "cost_usd": 0.01, "c": float(t < passed)} for t in range(10)
    ]
    fig = tmf.fig_tmf(tmf.analyse(_inputs(rows)))
    best = next(a for a in fig.layout.annotations if "Best operating point" in (a.text or ""))
    assert best.y == pytest.approx(10 * passed) and (best.ay > 0) == below and best.ax > 0


def test_cli_json(fixture_db, capsys) -> None:
    from cli import main

    assert main(["tmf", "--db", str(fixture_db), "--benchmark", "mini-bench", "--hourly-usd", "60", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"points", "frontier", "human", "value_area_usd", "best_saving_usd", "stage", "assumptions"}
    assert out["human"]["cost_per_task_usd"] == pytest.approx(6.5)
    assert out["assumptions"]["hourly_usd"] == 60


@pytest.mark.parametrize("n", [1, 2, 5])
def test_frontier_sorted_by_cost(n: int) -> None:
    rows = [
        {"run_id": f"r{i}", "agent": f"A{i}", "task_id": "1", "cost_usd": float(i + 1), "c": 1.0}
        for i, _ in zip(range(n), itertools.count())
    ]
    res = tmf.analyse(_inputs(rows))
    assert res.frontier == ("r0",)  # same performance: only the cheapest


def test_value_area_with_a_curved_acceptance_by_hand() -> None:
    # A(p) = 10 p^2, S = 1 up to p = 0.5: area = int_{sqrt(0.1)}^{0.5} (10 p^2 - 1) dp
    acc = tmf.Acceptance(human_x=10.0, human_performance=1.0, exponent=2.0)
    lo = math.sqrt(0.1)
    expected = 10 / 3 * (0.5**3 - lo**3) - (0.5 - lo)
    assert tmf.value_and_stage(_frontier([("a", 1.0, 0.5)]), acc).area == pytest.approx(expected, rel=1e-5)


def test_latency_axis_uses_human_run_latency() -> None:
    rows = [{"run_id": "a", "agent": "A", "task_id": t, "cost_usd": 0.1, "latency_s": 30.0} for t in "12"]
    rows += [{"run_id": "h", "agent": "Human", "kind": "human", "task_id": t, "latency_s": 600.0} for t in "12"]
    res = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(axis="latency"))
    assert res.x_col == "latency_per_task_s" and res.human is not None and res.human.x == 600.0
    rep = tmf.report(res)
    assert rep["human"]["latency_per_task_s"] == 600.0 and rep["assumptions"]["unit"] == "s"
    assert res.value is not None and res.value.stage == 3  # same quality in 30 s instead of 10 minutes


def test_irt_without_a_human_ability_asks_for_one() -> None:
    rows = [{"run_id": "a", "agent": "A", "agent_version": "1", "task_id": "1", "cost_usd": 1.0}]
    abil = pd.DataFrame({"subject": ["A 1"], "ability": [0.5], "ability_lo": [0.1], "ability_hi": [0.9]})
    res = tmf.analyse(tmf.TmfInputs("b", _tasks(rows), abil), options=tmf.TmfOptions(performance="irt"))
    assert res.value is None and res.acceptance is None
    assert "enter the human performance" in tmf.headline(res)
    assert tmf.report(res)["stage"] is None
    tmf.fig_tmf(res)  # draws without a human curve


@pytest.mark.parametrize(("rows", "cols", "n_titles"), [(1, 1, 1), (1, 3, 3), (2, 3, 4), (3, 3, 9), (1, 2, 2)])
def test_subplot_grid_is_the_layout_make_subplots_builds(rows: int, cols: int, n_titles: int) -> None:
    from plotly.subplots import make_subplots

    titles = [f"panel {i}" for i in range(n_titles)]
    ref = make_subplots(
        rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.06, vertical_spacing=0.14
    ).layout.to_plotly_json()
    ref.pop("template", None)
    got = tmf.subplot_grid(rows, cols, titles, horizontal_spacing=0.06, vertical_spacing=0.14)
    assert set(got) == set(ref)
    for key, value in ref.items():
        if key == "annotations":
            assert [a["text"] for a in got[key]] == [a["text"] for a in value]
            for mine, theirs in zip(got[key], value, strict=True):
                assert {k: v for k, v in mine.items() if k not in ("x", "y")} == {
                    k: v for k, v in theirs.items() if k not in ("x", "y")
                }
                assert (mine["x"], mine["y"]) == pytest.approx((theirs["x"], theirs["y"]), abs=1e-12)
        else:
            assert got[key]["anchor"] == value["anchor"]
            assert got[key]["domain"] == pytest.approx(list(value["domain"]), abs=1e-12)


def test_figures_validate_as_plotly_figures(fixture_db) -> None:
    import plotly.graph_objects as go

    with reader(fixture_db) as con:
        view = tmf.overview(con, RunFilter(benchmark="mini-bench"))
    figs = [
        tmf.fig_tmf(view.overall, title="t"),
        tmf.fig_small_multiples(view.by_kind["level"]),
        tmf.fig_movie(list(view.movie)),
    ]
    for fig in figs:
        again = go.Figure(fig.to_dict())  # what Streamlit does before sending a figure: validate it whole
        assert again.to_dict()["data"] and again.layout.template.layout.paper_bgcolor == "white"
    assert {t.xaxis for t in figs[1].data} == {"x", "x2"}  # one panel per level of the fixture (L1, L2)


def _pool_rows(run: str, tasks: list[str], rate: float, cost: float, rng: np.random.Generator) -> list[dict]:
    return [
        {"run_id": run, "agent": run.upper(), "task_id": t, "cost_usd": cost, "c": float(rng.random() < rate)}
        for t in tasks
    ]


def test_tmf_uses_the_comparison_set_and_bootstraps_the_stage() -> None:
    rng = np.random.default_rng(3)
    pool = [f"p{i:02d}" for i in range(40)]
    rows = _pool_rows("a", pool, 0.6, 0.01, rng) + _pool_rows("b", pool, 0.62, 0.02, rng)
    rows += _pool_rows("c", pool, 0.3, 0.005, rng)
    rows += _pool_rows("other", [f"q{i}" for i in range(12)], 1.0, 0.001, rng)  # 12/12 on another pool
    res = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(n_replicates=200))
    assert "other" not in set(res.points["run_id"]) and res.assumptions["runs_on_other_tasks"] == ["other"]
    assert res.assumptions["comparison_set_size"] == 40
    assert "; 1 run on other tasks is left out" in tmf.comparison_caption(res)  # no "1 run(s)"
    unc = res.uncertainty
    assert unc is not None and unc.n_replicates == 200 and unc.n_tasks == 40
    assert sum(unc.stage_probability.values()) == pytest.approx(1.0)
    assert sum(unc.p_best.values()) == pytest.approx(1.0)
    assert unc.p_frontier["c"] == 1.0  # the cheapest run is on the frontier in every replicate
    assert 0 < unc.p_frontier["b"] < 1  # a and b trade places with the task sample
    assert unc.value_ci95[0] <= res.value.area <= unc.value_ci95[1]
    rep = tmf.report(res)
    assert set(rep["stage_probability"]) == {"1", "2", "3"} and len(rep["value_per_task_ci95"]) == 2
    assert all({"p_frontier", "p_best", "is_few_tasks"} <= set(p) for p in rep["points"])
    assert not any(p["is_few_tasks"] for p in rep["points"])
    head = tmf.headline(res)
    share = round(100 * unc.stage_probability[str(res.value.stage)])
    assert head.startswith(f"Stage {res.value.stage} ({share}%)")
    again = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(n_replicates=200))
    assert again.uncertainty == unc  # seeded
    json.dumps(rep)


def test_tmf_flags_runs_on_few_tasks() -> None:
    rng = np.random.default_rng(0)
    rows = _pool_rows("a", list("abcdefghij"), 0.5, 0.01, rng) + _pool_rows("b", list("abcdefghij"), 0.7, 0.1, rng)
    res = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(n_replicates=50))
    assert res.points.loc[res.points["kind"] != "human", "is_few_tasks"].all()
    assert "fewer than 30 tasks" in tmf.headline(res)


def test_tmf_leaves_out_baseline_runs_like_the_leaderboard() -> None:
    rng = np.random.default_rng(5)
    pool = [f"p{i:02d}" for i in range(40)]
    rows = _pool_rows("a", pool, 0.5, 0.01, rng) + _pool_rows("b", pool, 0.6, 0.02, rng)
    base = [{**r, "is_baseline": True} for r in _pool_rows("base", pool, 1.0, 0.0001, rng)]
    rows = [{**r, "is_baseline": False} for r in rows] + base
    res = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(n_replicates=0))
    assert "base" not in set(res.points["run_id"])
    assert res.assumptions["baseline_runs"] == ["base"] and res.assumptions["runs_on_other_tasks"] == []


def test_one_baseline_definition_in_sql_and_python() -> None:
    import duckdb

    from analytics import compare

    con = duckdb.connect()
    con.execute("CREATE TABLE runs (extra JSON)")
    con.execute("""INSERT INTO runs VALUES ('{"gem_role": "baseline"}'), ('{"role": "baseline"}'), ('{}'), (NULL)""")
    flags = [r[0] for r in con.execute(f"SELECT {compare.IS_BASELINE_SQL} FROM runs").fetchall()]
    assert flags == [True, True, False, False]
    assert not compare.is_rankable("llm", True) and not compare.is_rankable("human", False)
    assert compare.is_rankable("llm", False) and compare.is_rankable("llm", None)


def test_exports_carry_the_assumptions_and_the_demo_caveat(fixture_db) -> None:
    with reader(fixture_db) as con:
        result = tmf.analyse(
            tmf.load(con, RunFilter(benchmark="mini-bench")), options=tmf.TmfOptions(willingness=0.8, exponent=2.0)
        )
    sentence = tmf.assumptions_sentence(result)
    assert "0.8x the human cost, scaled by performance to the power 2" in sentence
    assert "human time: human_minutes of 2 tasks x 50 USD/hour" in sentence
    fig = tmf.fig_tmf(result, title="t")
    for is_demo in (False, True):
        printed = tmf.export_figure(fig, result, is_demo=is_demo)
        footer = printed.layout.annotations[-1].text.replace("<br>", " ")
        assert "0.8x the human cost" in footer and ("DEMO DATA" in footer) is is_demo
        assert len(printed.layout.annotations) == len(fig.layout.annotations) + 1  # the chart itself is unchanged
        html_page = tmf.page_export(result, fig, "mini-bench", is_demo=is_demo)
        assert "Assumptions: human performance" in html_page and ("not real" in html_page) is is_demo
        assert "The value AI adds per task" in html_page  # every dollar figure defined


def _same_value(a: tmf.Value, b: tmf.Value) -> bool:
    """Equal to the last bit (NaN equals NaN), run id and stage too."""
    nums = ((a.area, b.area), (a.best_saving, b.best_saving), (a.best_performance, b.best_performance))
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in nums) and (a.best_run_id, a.stage) == (
        b.best_run_id,
        b.stage,
    )


@pytest.mark.parametrize("exponent", [1.0, 2.0, 0.5, 1.7])
def test_the_bootstrap_in_one_pass_gives_the_numbers_of_one_call_per_replicate(exponent: float) -> None:
    """The replicates' frontiers (``_pareto_masks``) and values (``values_from_frontiers``) computed for all
    replicates at once equal ``pareto_mask`` and ``value_from_arrays`` called once per replicate, exactly."""
    from analytics.tmf.bootstrap import _pareto_masks, _sorted_rows
    from analytics.tmf.model import values_from_frontiers

    rng = np.random.default_rng(11)
    n_rep, n_runs = 200, 12
    x = np.round(rng.uniform(0.0, 3.0, (n_rep, n_runs)), 1)  # rounded: ties in cost and performance
    y = np.round(rng.uniform(0.0, 1.0, (n_rep, n_runs)), 1)
    x[rng.random(x.shape) < 0.1] = np.nan
    x[0] = np.nan  # a replicate where no run has a cost: no frontier
    ok = np.isfinite(x) & (x > 0)
    x, y = np.where(ok, x, np.nan), np.where(ok, y, np.nan)
    masks = _pareto_masks(x, y)
    ids = np.array([f"run-{j:02d}" for j in range(n_runs)], dtype=object)
    rank = np.argsort(np.argsort(ids))
    acceptance = tmf.Acceptance(1.5, 0.9, 0.0, 0.8, exponent)
    frontiers = []
    for i in range(n_rep):
        assert np.array_equal(masks[i], tmf.pareto_mask(x[i], y[i]))
        f = _sorted_rows(masks[i], x[i], y[i], rank)
        frontiers.append((x[i][f], y[i][f], ids[f]))
    assert any(len(f[0]) == 0 for f in frontiers) and any(len(f[0]) > 2 for f in frontiers)
    batched = values_from_frontiers(frontiers, acceptance, grid_points=tmf.BOOT_GRID_POINTS)
    for (fx, fy, fids), value in zip(frontiers, batched, strict=True):
        single = tmf.value_from_arrays(fx, fy, fids, acceptance, vx=fx, vy=fy, grid_points=tmf.BOOT_GRID_POINTS)
        assert _same_value(single, value), (single, value)


def _canon(result: tmf.TmfResult) -> tuple:
    """Every field of a result in a form ``==`` compares exactly (frames as their full JSON)."""
    return (
        result.points.to_json(double_precision=15),
        *(repr(getattr(result, f.name)) for f in dataclasses.fields(result) if f.name != "points"),
    )


def _market_rows(is_timed: bool) -> list[dict]:
    rng = np.random.default_rng(5)
    pool = [f"p{i:02d}" for i in range(36)]
    rows = []
    for run, rate, cost, date in (
        ("a", 0.55, 0.02, "2025-02-01"),
        ("b", 0.7, 0.09, "2025-05-01"),
        ("c", 0.35, 0.004, "2025-08-01"),
        ("d", 0.72, 0.3, "2025-08-15"),
    ):
        for r in _pool_rows(run, pool, rate, cost, rng):
            r["eval_date"], r["level"] = pd.Timestamp(date), "L1" if r["task_id"] < "p18" else "L2"
            r["human_minutes"] = 4.0 + int(r["task_id"][1:]) % 5 if is_timed else np.nan
            rows.append(r)
    return rows


@pytest.mark.parametrize(
    ("is_timed", "changes"),
    [
        (True, {}),
        (True, {"supply": "hull"}),
        (True, {"axis": "latency"}),
        (False, {"human_minutes": 5.0}),  # no human time in the data: the bootstrap waits for the input
    ],
)
def test_a_prepared_analysis_finishes_as_a_fresh_one_for_every_rate(is_timed: bool, changes: dict) -> None:
    """What the page caches apart from the rate (``prepare``) finished under two rates, in both orders, gives the
    results of fresh analyses at those rates, exactly: nothing prepared depends on the human or the market."""
    rows = _market_rows(is_timed)
    for r in rows:
        r["latency_s"] = 30.0 + 100 * r["cost_usd"]
    inputs = _inputs(rows)
    markets = [
        {"hourly_usd": 30.0, "willingness": 1.0},
        {"hourly_usd": 120.0, "willingness": 0.6, "exponent": 2.0, "human_performance": 0.9},
    ]
    options = [tmf.TmfOptions(n_replicates=120, **changes, **m) for m in markets]
    fresh = [_canon(tmf.analyse(inputs, options=o)) for o in options]
    assert fresh[0] != fresh[1]  # the rate changes the result
    for prepared_with in options:
        supply = tmf.prepare(inputs, options=prepared_with)
        for o, expected in [*zip(options, fresh, strict=True), *zip(options[::-1], fresh[::-1], strict=True)]:
            assert _canon(tmf.finish(supply, o)) == expected
    finished = tmf.finish(tmf.prepare(inputs, options=options[0]), options[1])
    assert finished.uncertainty is not None and finished.value is not None
    periods = tmf.prepare_periods(inputs, options=options[1])
    assert [(label, _canon(tmf.finish(s, options[0]))) for label, s in periods] == [
        (label, _canon(r)) for label, r in tmf.by_period(inputs, options=options[0])
    ]
    slices = tmf.prepare_slices(inputs, options=options[0])
    assert [_canon(r) for r in tmf.finish_slices(slices, options[1])] == [
        _canon(r) for r in tmf.analyse_slices(inputs, options=options[1])
    ]


def test_a_prepared_overview_finishes_as_a_fresh_one(fixture_db) -> None:
    run_filter = RunFilter(benchmark="mini-bench")
    rates = [tmf.TmfOptions(hourly_usd=h, n_replicates=80) for h in (50.0, 140.0)]
    with reader(fixture_db) as con:
        prepared = tmf.prepare_overview(con, run_filter, options=rates[1], slice_kinds=("level", "category"))
        for o in rates:
            fresh = tmf.overview(con, run_filter, options=o, slice_kinds=("level", "category"))
            again = tmf.finish_overview(prepared, o)
            assert fresh.overall is not None and again.overall is not None
            assert _canon(again.overall) == _canon(fresh.overall)
            assert [(k, _canon(r)) for k, r in again.movie] == [(k, _canon(r)) for k, r in fresh.movie]
            assert {k: [_canon(r) for r in v] for k, v in again.by_kind.items()} == {
                k: [_canon(r) for r in v] for k, v in fresh.by_kind.items()
            }
        assert tmf.prepare_overview(con, run_filter, options=rates[0]) is not None
    assert prepared.overall is not None and prepared.overall.points.equals(tmf.finish(prepared.overall).points)


def test_runs_tied_exactly_share_the_replicates_where_they_are_best() -> None:
    rng = np.random.default_rng(8)
    pool = [f"p{i:02d}" for i in range(30)]
    twin = _pool_rows("a", pool, 0.7, 0.02, rng)
    rows = twin + [{**r, "run_id": "a2", "agent": "A2"} for r in twin] + _pool_rows("c", pool, 0.3, 0.01, rng)
    res = tmf.analyse(_inputs(rows), options=tmf.TmfOptions(n_replicates=100))
    unc = res.uncertainty
    assert unc is not None and res.value is not None
    assert unc.p_best["a"] == unc.p_best["a2"] > 0 and unc.p_frontier["a"] == unc.p_frontier["a2"]
    assert sum(unc.p_best.values()) == pytest.approx(1.0)
    assert res.value.best_run_id in ("a", "a2")


def test_runs_whose_task_values_differ_in_their_last_bits_are_tied() -> None:
    """A task's mean is summed in the order its samples are met: a run with its twin's samples in another order may
    hold 0.020000000000000004 where the twin holds 0.02. Both are one point (``stats.settled``): the same shares, and
    both on the frontier."""
    rng = np.random.default_rng(8)
    pool = [f"p{i:02d}" for i in range(30)]
    twin = _pool_rows("a", pool, 0.7, 0.02, rng)
    nudged = [
        {**r, "run_id": "a2", "agent": "A2", "cost_usd": float(np.nextafter(r["cost_usd"], 1.0)) if i % 3 else 0.02}
        for i, r in enumerate(twin)
    ]
    res = tmf.analyse(
        _inputs(twin + nudged + _pool_rows("c", pool, 0.3, 0.01, rng)), options=tmf.TmfOptions(n_replicates=100)
    )
    unc = res.uncertainty
    assert unc is not None and unc.p_best["a"] == unc.p_best["a2"] > 0
    assert unc.p_frontier["a"] == unc.p_frontier["a2"] == 1.0
    assert set(res.points.loc[res.points["on_frontier"], "run_id"]) >= {"a", "a2"}


def test_intervals_in_the_runs_table_read_a_to_b(fixture_db) -> None:
    """Cost and performance intervals are written alike ("a to b"), as every table of the app writes them."""
    with reader(fixture_db) as con:
        res = tmf.analyse(tmf.load(con, RunFilter(benchmark="mini-bench")))
    shown = tmf.runs_display(tmf.points_table(res), res)
    cost = shown["Cost per task [95% CI]"].iloc[0]
    assert " to " in cost and "–" not in cost, cost


def test_analyse_passes_on_exactly_the_keywords_of_prepare() -> None:
    """``analyse`` takes ``prepare``'s keywords through one TypedDict: a keyword added to ``prepare`` and not to
    ``PrepareArgs`` (or the reverse) fails here instead of being repeated by hand in ``analyse``."""
    from analytics.tmf import analysis

    params = inspect.signature(analysis.prepare).parameters
    keywords = {name for name, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords == set(analysis.PrepareArgs.__annotations__)
    rows = _market_rows(is_timed=True)
    opt = tmf.TmfOptions(n_replicates=30, hourly_usd=40.0)
    got = tmf.analyse(_inputs(rows), slice_name="all", options=opt)
    assert got.uncertainty is not None  # the options reached prepare (the bootstrap) and finish (the market)
    want = analysis.finish(analysis.prepare(_inputs(rows), slice_name="all", options=opt), opt)
    assert _canon(got) == _canon(want)


@pytest.fixture(scope="module")
def generated_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small store of ``bench/gen_logs.py`` logs (2 benchmarks, 8 runs over several quarters)."""
    from ingest.pipeline import ingest_paths

    root = Path(__file__).resolve().parent.parent
    out = tmp_path_factory.mktemp("tmf-gen")
    cmd = [sys.executable, str(root / "bench" / "gen_logs.py"), "--attempts", "3000", "--runs", "8"]
    subprocess.run(
        [*cmd, "--benchmarks", "2", "--out", str(out / "logs"), "--seed", "5"], check=True, capture_output=True
    )
    db = out / "gen.duckdb"
    assert {r.outcome for r in ingest_paths(sorted((out / "logs").glob("*")), db=db, jobs=1)} == {"ingested"}
    return db


@pytest.mark.parametrize("store", ["demo_db", "generated_store"])
def test_an_overview_equals_its_analyses_each_slicing_the_rows_itself(
    store: str, request: pytest.FixtureRequest
) -> None:
    """``prepare_overview`` slices every run's rows once for the analysis and its periods (and skips the copies
    and products that change nothing): the same results as ``analyse``, ``by_period`` and ``analyse_slices``,
    which slice the rows each time, on the demo and on a generated store."""
    opt = tmf.TmfOptions(n_replicates=60)
    n_periods = []
    with reader(request.getfixturevalue(store)) as con:
        benchmarks = [r[0] for r in con.execute("SELECT benchmark FROM benchmarks ORDER BY 1").fetchall()]
        for bench in benchmarks:
            run_filter = RunFilter(benchmark=bench)
            view = tmf.overview(con, run_filter, options=opt)
            inputs = tmf.load(con, run_filter)
            if view.overall is None:
                continue
            assert _canon(view.overall) == _canon(tmf.analyse(inputs, options=opt))
            movie = tmf.by_period(inputs, options=opt)
            assert [(k, _canon(r)) for k, r in view.movie] == [(k, _canon(r)) for k, r in movie]
            slices = tmf.analyse_slices(inputs, kind="level", options=opt)
            assert [_canon(r) for r in view.by_kind["level"]] == [_canon(r) for r in slices]
            n_periods.append(len(movie))
    assert n_periods and max(n_periods) > 1


def test_the_runs_table_writes_every_cost_with_the_same_decimals(fixture_db) -> None:
    """One money format per column: every dollar figure of the cost column has the same number of decimals."""
    with reader(fixture_db) as con:
        res = tmf.analyse(tmf.load(con, RunFilter(benchmark="mini-bench")))
    shown = tmf.runs_display(tmf.points_table(res), res)
    decimals = [len(d) for cell in shown["Cost per task [95% CI]"] for d in re.findall(r"\$[\d,]+(?:\.(\d+))?", cell)]
    assert len(decimals) >= 2 and len(set(decimals)) == 1, list(shown["Cost per task [95% CI]"])


@pytest.mark.parametrize("store", ["demo_db", "generated_store"])
def test_the_first_view_and_the_movie_on_demand_equal_the_overview(store: str, request: pytest.FixtureRequest) -> None:
    """The page's first view (``prepare_current``: the overall analysis and the period labels) and the movie it
    prepares when asked (``prepare_movie``) give exactly the overview's analyses and labels, for every period kind,
    on the demo and on a generated store."""
    opt = tmf.TmfOptions(n_replicates=60)
    seen = 0
    with reader(request.getfixturevalue(store)) as con:
        benchmarks = [r[0] for r in con.execute("SELECT benchmark FROM benchmarks ORDER BY 1").fetchall()]
        for bench, freq in itertools.product(benchmarks, tmf.PERIODS):
            run_filter = RunFilter(benchmark=bench)
            view = tmf.overview(con, run_filter, options=opt, freq=freq)
            first = tmf.finish_overview(tmf.prepare_current(con, run_filter, options=opt, freq=freq), opt)
            movie = tmf.finish_movie(tmf.prepare_movie(con, run_filter, options=opt, freq=freq), opt)
            if view.overall is None:
                assert first.overall is None and movie == ()
                continue
            assert first.overall is not None and _canon(first.overall) == _canon(view.overall)
            assert first.movie == () and first.by_kind == {}
            assert first.periods == view.periods == tuple(label for label, _ in view.movie)
            assert [(k, _canon(r)) for k, r in movie] == [(k, _canon(r)) for k, r in view.movie]
            seen += len(view.movie) > 1
    assert seen


def test_period_labels_of_a_frame_built_by_hand_are_the_movies() -> None:
    """Without ``load``'s run details (every row holds its run's), the labels come from the runs' first rows."""
    rows = _market_rows(is_timed=True)
    dates = ["2025-01-10", "2025-05-02", None, "2025-05-20"]
    for i, run in enumerate(sorted({r["run_id"] for r in rows})):
        for r in rows:
            if r["run_id"] == run:
                r["eval_date"] = dates[i % len(dates)]
    inputs = _inputs(rows)
    for freq in tmf.PERIODS:
        want = [label for label, _ in tmf.prepare_periods(inputs, freq=freq)]
        assert tmf.period_labels(inputs, freq) == want
    with pytest.raises(tmf.TmfError):
        tmf.period_labels(inputs, "week")

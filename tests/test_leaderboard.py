"""Leaderboard analytics and its JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analytics import leaderboard as lb
from analytics.db import reader
from tests.conftest import ROOT


def test_report_shape_and_values(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        rep = lb.report(con, benchmark="mini-bench")
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


def test_ties_and_humans_apart() -> None:
    def row(run: str, kind: str, p: float, ci: tuple[float, float]) -> dict:
        return {
            "run_id": run,
            "agent": run,
            "agent_version": None,
            "family": None,
            "kind": kind,
            "eval_date": None,
            "slice": "all",
            "n_tasks": 50,
            "n_attempts": 50,
            "k_max": 1,
            "pass_at": {"1": p},
            "pass_hat": {"1": p},
            "mean_score": p,
            "ci95": {"pass@1": list(ci)},
            "mean_steps": 1.0,
            "mean_cost_usd": None,
        }

    df = pd.DataFrame(
        [
            row("a", "llm", 0.80, (0.70, 0.88)),
            row("b", "llm", 0.74, (0.62, 0.84)),
            row("c", "llm", 0.40, (0.30, 0.52)),
            row("h", "human", 0.95, (0.88, 0.98)),
        ],
        columns=lb.COLUMNS,
    )
    out = lb.mark_ties(df).set_index("run_id")
    assert out.loc["a", "is_leader"] and not out.loc["h", "is_leader"]
    assert out.loc["b", "is_tied"] and not out.loc["c", "is_tied"]
    assert pd.isna(out.loc["h", "rank"]) and out.loc["c", "rank"] == 3


def test_filters_by_agent_and_date(fixture_db: Path) -> None:
    import datetime as dt

    with reader(fixture_db) as con:
        only_a = lb.leaderboard(con, benchmark="mini-bench", agents=["Agent A"])
        late = lb.leaderboard(con, benchmark="mini-bench", date_from=dt.date(2026, 1, 12))
        none = lb.leaderboard(con, benchmark="no-such-bench")
    assert set(only_a["run_id"]) == {"mini-a-v1"}
    assert set(late["run_id"]) == {"mini-a-v1"}
    assert none.empty and list(none.columns)[:3] == ["run_id", "agent", "agent_version"]


def test_bootstrap_interval_is_deterministic(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        a = lb.report(con, benchmark="mini-bench")
        b = lb.report(con, benchmark="mini-bench")
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
        df = lb.leaderboard(con, benchmark="mini-bench")
    overall = df[df["slice"] == "all"]
    table = lb.display_table(overall)
    assert {"Pass@1 %", "Pass@1 95% CI", "pass^2 %", "Mean cost/task $", "Tasks"} <= set(table.columns)
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

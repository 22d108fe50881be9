"""AppTest of the leaderboard's comparisons on the demo: task pools apart, baselines apart, p against the leader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import store as rdb
from analytics import formatting as fmt
from analytics import leaderboard as lb
from store import RunFilter
from tests.apptest import open_page


def test_two_task_pools_on_the_demo(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/leaderboard.py", demo_db, monkeypatch, benchmark="ad-bench")
    with rdb.reader(demo_db) as con:
        board = lb.leaderboard(con, RunFilter(benchmark="ad-bench"))
    overall = board[board["slice"] == "all"]
    ranked = overall[overall["rank"].notna()]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Comparison set"] == f"{int(overall['comparison_set_size'].iloc[0])} tasks" == "100 tasks"
    assert metrics["Runs ranked"] == f"{len(ranked)} of {len(overall)}"
    assert "Shown apart" in [s.value for s in at.subheader]
    table = next(
        d.value for d in at.dataframe if "p vs leader (adjusted)" in d.value.columns and "Why apart" not in d.value
    )
    # the table read first: one row per ranked run, metric with its interval as text, no None anywhere
    summary = next(d.value for d in at.dataframe if "Pass@1 % [95% CI]" in d.value.columns)
    assert list(summary["run_id"]) == list(table["run_id"])
    assert not summary.astype(str).isin(["None", "nan", "NaT"]).any().any()
    lead = ranked[ranked["is_leader"]].sort_values("run_id").iloc[0]
    lo, hi = lead["ci95"]["pass@1"]
    shown = summary.set_index("run_id").loc[lead["run_id"], "Pass@1 % [95% CI]"]
    assert shown == f"{100 * lead['metric_value']:.1f} [{100 * lo:.1f} to {100 * hi:.1f}]"
    assert set(table["run_id"]) == set(ranked["run_id"]) and table["Tasks"].eq("100").all()
    assert (table["vs leader"] == "leader").sum() == 1
    apart = next(d.value for d in at.dataframe if "Why apart" in d.value.columns)
    assert apart["Why apart"].str.startswith("evaluated on other tasks: ").all()
    assert set(apart["run_id"]) == set(overall.loc[overall["rank"].isna(), "run_id"])
    # p shown on the page is the adjusted p of the analytics (selection-aware for ranked rows; issue 28 renamed the column)
    row = ranked[~ranked["is_leader"]].iloc[0]
    shown = table.set_index("run_id").loc[row["run_id"], "p vs leader (adjusted)"]
    assert shown == fmt.p_value(row["p_vs_leader"]) and shown != "–"
    # HAL's cost-accuracy view: the table's Pareto column and the frontier chart agree with the analytics
    optimal = set(ranked.loc[ranked["is_pareto_optimal"].eq(True), "run_id"])
    assert optimal and set(table.loc[table["Cost-accuracy Pareto"] == "✓ optimal", "run_id"]) == optimal
    assert "Cost vs accuracy" in [s.value for s in at.subheader]
    fig = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if "Pareto frontier" in c.proto.spec))
    on_line = next(t for t in fig["data"] if t["name"] == "Pareto frontier")
    assert {row[0] for row in on_line["customdata"]} == optimal


def test_gem_baseline_is_shown_apart_and_graded_ranks_by_mean_score(demo_db: Path) -> None:
    with rdb.reader(demo_db) as con:
        gem = lb.leaderboard(con, RunFilter(benchmark="gem-bench"))
        xb = lb.leaderboard(con, RunFilter(benchmark="xbench-marketing"))
    g = gem[gem["slice"] == "all"].set_index("run_id")
    assert g.loc["gem-bench-ad-free", "is_baseline"] and pd_isna(g.loc["gem-bench-ad-free", "rank"])
    assert not g.loc["gem-bench-ad-free", "is_leader"]
    x = xb[xb["slice"] == "all"]
    assert (x["metric"] == "mean_score").all()
    leader_score = x.loc[x["is_leader"], "mean_score"].max()
    assert leader_score == x.loc[x["rank"].notna(), "mean_score"].max()


def pd_isna(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_every_column_table_names_the_run_among_its_default_columns(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The expander with every column shows, in the columns a 1280 px window draws first, which run a row is (the
    table above's label), not only ranks and p-values."""
    at = open_page("views/leaderboard.py", demo_db, monkeypatch, benchmark="ad-bench")
    every = next(d for d in at.dataframe if "MDE80 (pp)" in d.value.columns and "Why apart" not in d.value.columns)
    summary = next(d for d in at.dataframe if "Pass@1 % [95% CI]" in d.value.columns)
    shown = list(every.proto.column_order)
    assert shown[:2] == ["Rank", "Run"], shown
    # the test behind the p-values, the same for every row, is one caption above the table, not a cut-off column
    assert "p method" not in every.value.columns
    assert any(c.value.startswith("p vs leader (adjusted): max-gap permutation, step-down") for c in at.caption)
    assert list(every.value["Run"]) == list(summary.value["Run"])


def test_every_column_table_writes_intervals_a_to_b(demo_db: Path) -> None:
    with rdb.reader(demo_db) as con:
        board = lb.leaderboard(con, RunFilter(benchmark="ad-bench"))
    table = lb.display_table(board[board["slice"] == "all"])
    cis = table["Pass@1 95% CI"]
    assert cis.str.contains(" to ").all() and not cis.str.contains("–").any(), list(cis)

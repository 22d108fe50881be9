"""analytics.runs: the one comparison rule (its include_baselines difference), the one run label, and run loading
with the run filter."""

from __future__ import annotations

from pathlib import Path

import pytest

import store as rdb
from analytics import leaderboard as lb
from analytics import runs
from tests.otlp_lines import otlp_line, otlp_span


def test_the_one_rule_differs_only_by_include_baselines() -> None:
    tasks = [f"t{i}" for i in range(10)]
    sets = {"a": tasks, "b": tasks[:9], "base": tasks, "human": tasks, "other": [f"x{i}" for i in range(10)]}
    kinds = {"a": "llm", "b": "llm", "base": "llm", "human": "human", "other": "llm"}
    flags = {"base": True}
    without = runs.comparable_runs(sets, kinds, flags).primary
    with_base = runs.comparable_runs(sets, kinds, flags, include_baselines=True).primary
    assert without is not None and with_base is not None
    assert set(without.runs) == {"a", "b"}
    assert set(with_base.runs) == {"a", "b", "base"}
    assert without.tasks == frozenset(tasks[:9])  # t9: one of two runs, not more than half
    assert with_base.tasks == frozenset(tasks) and with_base.n_compared["b"] == 9  # t9: two of three
    assert "human" not in with_base.runs  # humans are references under either rule
    assert set(runs.comparable_runs(sets, kinds, flags, also_excluded=["b"]).primary.runs) == {"a"}
    assert not runs.is_eligible("llm", True) and runs.is_eligible("llm", True, include_baselines=True)
    assert not runs.is_eligible("human", False, include_baselines=True) and runs.is_eligible("llm", None)


def test_one_run_label() -> None:
    assert runs.run_label("o3", "o3") == "o3"  # the version adds nothing
    assert runs.run_label("Qwen3", "3-8B", "2026-01-15") == "Qwen3 3-8B · 2026-01-15"
    assert runs.row_label({"agent": "A", "agent_version": "2", "eval_date": "2026-01-15"}, with_date=False) == "A 2"
    import pandas as pd

    df = pd.DataFrame(
        {
            "run_id": ["r1", "r2", "r3"],
            "agent": ["A", "A", "B"],
            "agent_version": ["1", "1", None],
            "eval_date": ["2026-01-15", "2026-01-15", None],
        }
    )
    assert runs.unique_run_labels(df) == {"r1": "A 1 · 2026-01-15 · r1", "r2": "A 1 · 2026-01-15 · r2", "r3": "B"}


def test_load_runs_follows_the_filter_and_feeds_the_leaderboard(fixture_db: Path) -> None:
    with rdb.reader(fixture_db) as con:
        everything = runs.load_runs(con, rdb.RunFilter(benchmark="mini-bench"))
        only_a = runs.load_runs(con, rdb.RunFilter(benchmark="mini-bench", agents=("Agent A",)))
        nothing = runs.load_runs(con, rdb.ALL_RUNS)  # a leaderboard's runs are of one benchmark
        member = lb.comparison_membership(con, rdb.RunFilter(benchmark="mini-bench"), kinds=("all",))
    assert sorted(everything["run_id"]) == ["mini-a-v1", "mini-human"]
    assert list(everything.columns[: len(runs.RUN_COLUMNS)]) == list(runs.RUN_COLUMNS)
    assert only_a["run_id"].tolist() == ["mini-a-v1"] and nothing.empty
    assert everything["is_complete"].all()
    assert dict(zip(member["run_id"], member["is_comparable"], strict=True)) == {"mini-a-v1": True, "mini-human": False}


def test_every_statistic_is_a_column_and_a_json_field() -> None:
    names = [s.name for s in lb.STATISTICS]
    assert set(names) <= set(lb.COLUMNS) and set(names) <= set(lb.REPORT_KEYS)
    assert {s.source for s in lb.STATISTICS} <= set(lb.OUTCOME_COLUMNS)
    assert [name for name, _ in lb.BOOTSTRAPPED] == ["mean_steps", "mean_cost_usd"]  # the seeded draws' order


def test_run_health_counts_partial_traces_and_a_run_with_any_is_not_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.pipeline import ingest_paths
    from tests.apptest import open_page

    path = tmp_path / "traces.jsonl"
    path.write_text(
        "\n".join(
            [
                otlp_line(otlp_span("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"), service="whole"),
                otlp_line(
                    otlp_span("6c9f0008a9149214e37ac744924fd71d", "fff19b7ec3c1b170"),  # a whole trace
                    otlp_span("7d9f0008a9149214e37ac744924fd71e", "fff19b7ec3c1b175", parent="00000000000000aa"),
                    otlp_span("8e9f0008a9149214e37ac744924fd71f", "fff19b7ec3c1b176", parent="00000000000000bb"),
                    service="part",
                ),
            ]
        )
        + "\n"
    )
    db = tmp_path / "db.duckdb"
    [result] = ingest_paths([path], db=db)  # the real OTLP reader marks the two traces without their root
    assert result.outcome == "ingested", result.error
    with rdb.reader(db) as con:
        [(bench,)] = rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs")
        health = runs.run_health(con, benchmark=bench).set_index("run_id")
    assert health["n_partial"].to_dict() == {"part": 2, "whole": 0}
    assert health["is_complete"].to_dict() == {"part": False, "whole": True}
    table = runs.incomplete_table(health.reset_index())
    assert table["Run"].tolist() == ["part"] and table["Partial traces"].tolist() == [2]
    board = open_page("views/leaderboard.py", db, monkeypatch, benchmark=bench)  # where the leaderboard lists them
    assert any(s.value == "Runs that are not complete" for s in board.subheader)
    assert any(c.value.startswith("Partial traces: attempts stored from a trace") for c in board.caption)
    [shown] = [df.value for df in board.dataframe if "Partial traces" in df.value.columns]
    assert shown["Partial traces"].astype(str).tolist() == ["2"]  # a display table: its cells as text


def test_run_health_without_partial_traces_is_unchanged(fixture_db: Path) -> None:
    with rdb.reader(fixture_db) as con:
        health = runs.run_health(con, benchmark="mini-bench")
    assert (health["n_partial"] == 0).all() and health["n_partial"].dtype == "int64"
    assert "Partial traces" not in runs.incomplete_table(health.assign(is_complete=False)).columns

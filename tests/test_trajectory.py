"""Coverage, recall/precision and LCS alignment against hand-made trajectories."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

import store as rdb
from analytics import trajectory as tr

REF = ["get_user_account_list", "search", "daily_data", "calculator"]


@pytest.mark.parametrize(
    ("reference", "calls", "expected"),
    [
        (REF, REF, True),
        (REF, ["get_user_account_list", "search", "search", "daily_data", "calculator", "summarize"], True),
        (REF, ["search", "get_user_account_list", "daily_data", "calculator"], False),  # order matters
        (REF, ["get_user_account_list", "daily_data", "calculator"], False),
        (REF, [], False),  # empty trajectory
        (["daily_data", "daily_data"], ["daily_data"], False),  # a repeated reference tool needs two calls
        (["daily_data", "daily_data"], ["daily_data", "calculator", "daily_data"], True),
        (REF + REF, REF, False),  # reference longer than the trajectory
    ],
)
def test_is_subsequence(reference: list[str], calls: list[str], expected: bool) -> None:
    assert tr.is_subsequence(reference, calls) is expected
    assert tr.align(reference, calls).is_covered is expected


def test_recall_precision_is_order_free_multiset() -> None:
    recall, precision = tr.recall_precision(["a", "b", "b", "c"], ["b", "a", "x", "b", "b"])
    assert recall == pytest.approx(3 / 4)
    assert precision == pytest.approx(3 / 5)
    assert math.isnan(tr.recall_precision(["a"], [])[1])
    assert math.isnan(tr.recall_precision([], ["a"])[0])


def test_alignment_marks_matched_missing_extra_in_order() -> None:
    al = tr.align(["acct", "search", "data", "calc"], ["acct", "data", "data", "calc"])
    ops = [(s.op, s.tool) for s in al.steps]
    assert ops == [
        ("matched", "acct"),
        ("missing", "search"),
        ("matched", "data"),
        ("extra", "data"),
        ("matched", "calc"),
    ]
    assert al.n_matched == 3 and not al.is_covered
    assert al.first_divergence == 1
    assert al.first_divergence_call == 1  # the agent's second call is where it left the reference


def test_alignment_extra_first_and_counts() -> None:
    al = tr.align(["a", "b"], ["x", "a", "b", "y"])
    assert [s.op for s in al.steps] == ["extra", "matched", "matched", "extra"]
    assert al.is_covered and al.first_divergence == 0 and al.first_divergence_call == 0
    assert sum(s.op != "missing" for s in al.steps) == al.n_calls
    assert sum(s.op != "extra" for s in al.steps) == al.n_reference


def test_alignment_empty_and_longer_reference() -> None:
    empty = tr.align(["a", "b"], [])
    assert [s.op for s in empty.steps] == ["missing", "missing"]
    assert empty.first_divergence == 0 and empty.first_divergence_call is None
    long = tr.align(["a", "b", "c", "d"], ["b", "d"])
    assert [s.op for s in long.steps] == ["missing", "matched", "missing", "matched"]
    assert long.n_matched == 2
    perfect = tr.align(["a"], ["a"])
    assert perfect.first_divergence is None and perfect.first_divergence_call is None


def test_attempt_metrics_without_reference_is_undefined() -> None:
    m = tr.attempt_metrics(None, ["a"])
    assert math.isnan(m["coverage"]) and m["first_divergence_call"] is None
    m = tr.attempt_metrics(["a", "b"], ["a", "c"])
    assert m["coverage"] == 0.0 and m["lcs_ratio"] == 0.5 and m["recall"] == 0.5 and m["precision"] == 0.5


def test_alignment_is_fast_on_long_trajectories() -> None:
    import time

    calls = ["search", "daily_data"] * 1000
    t0 = time.perf_counter()
    al = tr.align(REF, calls)
    assert time.perf_counter() - t0 < 1.0
    assert al.n_matched == 2 and len(al.steps) == 2000 + 2


def test_fits_pearson_and_line_match_numpy() -> None:
    df = pd.DataFrame(
        {
            "run_id": list("abcd"),
            "agent": list("ABCD"),
            "level": ["L1"] * 4,
            "coverage": [0.2, 0.4, 0.6, 0.9],
            "pass_at_1": [0.1, 0.35, 0.5, 0.8],
        }
    )
    (l1, overall) = tr.pass_vs_coverage_fits(df)
    assert l1.level == "L1" and overall.level == "all" and l1.n == 4
    import numpy as np

    assert l1.r == pytest.approx(float(np.corrcoef(df["coverage"], df["pass_at_1"])[0, 1]))
    slope = ((df.coverage - df.coverage.mean()) * (df.pass_at_1 - df.pass_at_1.mean())).sum() / (
        (df.coverage - df.coverage.mean()) ** 2
    ).sum()
    assert l1.slope == pytest.approx(slope)
    fig = tr.fig_pass_vs_coverage(df, [l1, overall])
    assert len(fig.data) == 2 and "r = " in fig.data[0].name


# ---------------------------------------------------------------------------------------------
# On the fixture database (tests/fixtures/good.jsonl): hand-computed values
# ---------------------------------------------------------------------------------------------


def test_attempt_trajectories_on_fixture(fixture_db) -> None:
    with rdb.reader(fixture_db) as con:
        att = tr.attempt_trajectories(con, rdb.RunFilter(benchmark="mini-bench"))
    att = att.set_index(["run_id", "task_id", "sample"])
    # T1 reference [search, summarize_results]; sample 0 called only search -> not covered, recall 1/2
    assert att.loc[("mini-a-v1", "T1", 0), "coverage"] == 0.0
    assert att.loc[("mini-a-v1", "T1", 0), "recall"] == 0.5
    # T2 sample 0 followed [get_accounts, daily_data, calculator] exactly
    assert att.loc[("mini-a-v1", "T2", 0), "coverage"] == 1.0
    assert att.loc[("mini-a-v1", "T2", 0), "precision"] == 1.0
    # T2 sample 1 called daily_data only
    assert att.loc[("mini-a-v1", "T2", 1), "recall"] == pytest.approx(1 / 3)


def test_coverage_table_slices_on_fixture(fixture_db) -> None:
    with rdb.reader(fixture_db) as con:
        table = tr.coverage_table(con, rdb.RunFilter(benchmark="mini-bench"))
    row = table[(table.run_id == "mini-a-v1") & (table.slice == "all")].iloc[0]
    assert row["coverage"] == pytest.approx(1 / 4)
    assert row["n"] == 4
    assert row["mean_tool_calls"] == pytest.approx((1 + 0 + 3 + 1) / 4)
    assert row["pass_at_1"] == pytest.approx(0.5)  # T1 1/2, T2 1/2
    l2 = table[(table.run_id == "mini-a-v1") & (table.slice == "level=L2")].iloc[0]
    assert l2["coverage"] == pytest.approx(0.5) and l2["n"] == 2
    assert set(table["slice"]) >= {"all", "level=L1", "level=L2", "category=lookup", "category=compute"}


def _run_cli(argv: list[str]) -> int:
    """``python -m analytics coverage`` in process (the CLI imports only the chosen report's module)."""
    from cli import main

    return main(["coverage", *argv])


def test_coverage_cli_json(fixture_db, capsys) -> None:
    assert _run_cli(["--db", str(fixture_db), "--benchmark", "mini-bench", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and set(rows[0]) == set(tr.COVERAGE_KEYS)
    alls = {r["run_id"]: r for r in rows if r["slice"] == "all"}
    assert alls["mini-a-v1"]["coverage"] == 0.25
    assert _run_cli(["--db", str(fixture_db), "--benchmark", "nope", "--json"]) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.slow
def test_coverage_cli_subprocess(fixture_db) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "analytics", "coverage", "--db", str(fixture_db), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert {r["slice"] for r in json.loads(out.stdout)["rows"]} >= {"all", "level=L1"}


def test_alignment_frame_and_steps_page(fixture_db) -> None:
    with rdb.reader(fixture_db) as con:
        detail = tr.attempt_detail(con, run_id="mini-a-v1", task_id="T2", sample=1)
        frame = tr.alignment_frame(con, attempt_id=detail["attempt_id"], reference=detail["reference_trajectory"])
        page = tr.steps_page(con, attempt_id=detail["attempt_id"], offset=0, limit=10)
    assert frame["op"].tolist() == ["missing", "matched", "missing"]
    assert frame["is_first_divergence"].tolist() == [True, False, False]
    assert page["tool"].tolist() == ["daily_data"] and page["error"].iloc[0] == "timeout"


# ---------------------------------------------------------------------------------------------
# On the demo data: AD-Bench's quoted L3 coverage (Figure 4 / section 3.2)
# ---------------------------------------------------------------------------------------------

PAPER_L3_COVERAGE = {"Gemini-3-Pro": 0.701, "GPT-5.1": 0.368, "o3": 0.483}


def test_demo_l3_coverage_matches_paper(demo_db) -> None:
    with rdb.reader(demo_db) as con:
        benches = [
            r[0] for r in rdb.query_rows(con, "SELECT benchmark FROM benchmarks WHERE benchmark ILIKE 'ad-bench%'")
        ]
        assert benches, "the paper-calibrated AD-Bench demo (data/demo/adbench.py) is missing from the demo data"
        by_level = tr.coverage_by_level(con, rdb.RunFilter(benchmark=benches[0]))
    # the paper's runs are each agent's latest (the demo also holds older "history" runs)
    l3 = by_level[by_level["level"] == "L3"].sort_values("eval_date").groupby("agent").last()
    for agent, quoted in PAPER_L3_COVERAGE.items():
        assert round(float(l3.loc[agent, "coverage"]), 3) == pytest.approx(quoted), agent


def test_steps_page_reads_long_results_from_texts(tmp_path) -> None:
    from ingest.pipeline import ingest_paths

    long_text = "row " * 800  # 3,200 characters: stored once in `texts`, keyed by hash
    lines = [
        {"record": "benchmark", "benchmark": "lt", "scoring": "binary"},
        {"record": "task", "benchmark": "lt", "task_id": "t1"},
        {"record": "run", "run_id": "lt-run", "benchmark": "lt", "agent": "A", "kind": "agent"},
        {
            "record": "attempt",
            "run_id": "lt-run",
            "task_id": "t1",
            "sample": 0,
            "score": 1,
            "steps": [
                {"round": 1, "kind": "tool_call", "tool": "q", "result": long_text},
                {"round": 2, "kind": "tool_call", "tool": "q", "result": "short"},
                {"round": 3, "kind": "final", "content": "done"},
            ],
        },
    ]
    src = tmp_path / "lt.jsonl"
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    db = tmp_path / "lt.duckdb"
    assert [r.outcome for r in ingest_paths([src], db=db)] == ["ingested"]
    with rdb.reader(db) as con:
        attempt_id = int(rdb.query_rows(con, "SELECT attempt_id FROM attempts")[0][0])
        assert rdb.query_rows(con, "SELECT count(*) FROM steps WHERE result_hash IS NOT NULL")[0][0] == 1
        page = tr.steps_page(con, attempt_id=attempt_id)
        second = tr.steps_page(con, attempt_id=attempt_id, offset=1, limit=1)
    assert page["result_preview"].iloc[0] == long_text[: tr.PREVIEW_CHARS]
    assert page["result_chars"].iloc[0] == len(long_text)
    assert page["result_preview"].iloc[1] == "short" and page["result_preview"].isna().iloc[2]
    assert second["step"].tolist() == [1] and "result_hash" not in second.columns


def test_fits_use_comparable_runs_one_point_per_run_and_fisher_interval() -> None:
    import numpy as np

    from analytics.compare import fisher_z_ci

    df = pd.DataFrame(
        {
            "run_id": list("abcdeab"),
            "agent": list("ABCDEAB"),
            "level": ["L1"] * 5 + ["L2"] * 2,
            "coverage": [0.2, 0.4, 0.6, 0.9, 0.1, 0.5, 0.7],
            "pass_at_1": [0.1, 0.35, 0.5, 0.8, 0.95, 0.4, 0.6],
            "is_comparable": [True, True, True, True, False, True, True],  # e: another task pool
        }
    )
    fits = {f.level: f for f in tr.pass_vs_coverage_fits(df)}
    l1 = df[(df.level == "L1") & df.is_comparable]
    assert fits["L1"].n == 4
    assert fits["L1"].r == pytest.approx(float(np.corrcoef(l1.coverage, l1.pass_at_1)[0, 1]))
    assert (fits["L1"].r_lo, fits["L1"].r_hi) == pytest.approx(fisher_z_ci(fits["L1"].r, 4))
    assert fits["all"].n == 4  # runs, not (run, level) points
    assert np.isnan(fits["L2"].r_lo)  # two runs: no interval

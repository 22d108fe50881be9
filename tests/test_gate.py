"""The gate CLI and the agreement of leaderboard, Version diff and gate on one paired test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics import compare, diff, gate
from analytics import leaderboard as lb
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.conftest import ROOT


def _bench(path: Path, runs: dict[str, dict[str, list[int]]], *, costs: dict[str, float] | None = None) -> Path:
    """A binary benchmark: run id -> task id -> scores of its samples."""
    lines: list[dict] = [{"record": "benchmark", "benchmark": "g-bench", "scoring": "binary"}]
    tasks = sorted({t for outcomes in runs.values() for t in outcomes})
    lines += [{"record": "task", "benchmark": "g-bench", "task_id": t, "level": "L1"} for t in tasks]
    for run, outcomes in runs.items():
        lines.append({"record": "run", "run_id": run, "benchmark": "g-bench", "agent": run, "eval_date": "2026-01-01"})
        for t, scores in outcomes.items():
            for sample, score in enumerate(scores):
                cost = (costs or {}).get(run, 0.01)
                lines.append(
                    {
                        "record": "attempt",
                        "run_id": run,
                        "task_id": t,
                        "sample": sample,
                        "score": score,
                        "cost_usd": cost,
                    }
                )
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


@pytest.fixture
def gate_db(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    base = rng.random(60) < 0.75
    worse = base & (rng.random(60) < 0.6)  # loses ~40% of the baseline's successes
    close = base ^ (rng.random(60) < 0.05)
    two = {f"t{i:02d}": [int(v), int(rng.random() < 0.7)] for i, v in enumerate(base)}
    runs = {
        "base": {f"t{i:02d}": [int(v)] for i, v in enumerate(base)},
        "worse": {f"t{i:02d}": [int(v)] for i, v in enumerate(worse)},
        "close": {f"t{i:02d}": [int(v)] for i, v in enumerate(close)},
        "two": two,
        "other": {f"x{i:02d}": [1] for i in range(10)},
    }
    db = tmp_path / "gate.duckdb"
    ingest_paths([_bench(tmp_path / "g.jsonl", runs, costs={"worse": 0.02})], db=db)
    return db


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analytics", "gate", "--db", str(db), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gate_exit_codes(gate_db: Path) -> None:
    worse = _cli(gate_db, "--baseline", "base", "--candidate", "worse")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert worse.stdout.startswith("WORSE") and "regressed" in worse.stdout
    close = _cli(gate_db, "--baseline", "base", "--candidate", "close", "--json")
    assert close.returncode == 0, close.stderr
    rep = json.loads(close.stdout)
    # the gate decides by its own one-sided mid-p test (issue 28); the leaderboard's two-sided test is kept beside
    assert rep["verdict"] == "not worse" and rep["method"] == "exact-sign-flip-mid-p" and rep["n_shared"] == 60
    assert rep["paired_method"] == "mcnemar-exact" and rep["sided"] == "one-sided" and rep["margin"] == 0.0
    assert rep["mde80"] > 0 and rep["sequential"] is None
    untestable = _cli(gate_db, "--baseline", "base", "--candidate", "other")
    assert untestable.returncode == 2 and untestable.stdout.startswith("UNTESTABLE")
    missing = _cli(gate_db, "--baseline", "base", "--candidate", "nope")
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_gate_json_lists_regressed_tasks_and_cost(gate_db: Path) -> None:
    out = _cli(gate_db, "--baseline", "base", "--candidate", "worse", "--json")
    rep = json.loads(out.stdout)
    assert rep["exit_code"] == 1 == out.returncode
    assert rep["n_worse"] == len(rep["regressed_tasks"]) > 0 and rep["n_better"] == 0
    assert all(r["baseline"] == 1.0 and r["candidate"] == 0.0 for r in rep["regressed_tasks"])
    assert rep["ci95"][0] <= rep["diff"] <= rep["ci95"][1] < 0
    cost = json.loads(_cli(gate_db, "--baseline", "base", "--candidate", "worse", "--metric", "cost", "--json").stdout)
    assert cost["verdict"] == "worse" and cost["diff"] == pytest.approx(0.01)  # 0.02 vs 0.01 per task


def test_leaderboard_diff_and_gate_agree(gate_db: Path) -> None:
    with rdb.reader(gate_db) as con:
        board = lb.leaderboard(con, RunFilter(benchmark="g-bench")).set_index(["run_id", "slice"]).xs("all", level=1)
        leader = board.index[board["is_leader"]][0]
        for run in ("worse", "close", "two"):
            if run == leader:
                continue
            d = diff.compare_runs(con, run_a=leader, run_b=run)
            g = gate.gate(con, baseline=leader, candidate=run)
            assert d.paired is not None
            assert board.loc[run, "p_raw_vs_leader"] == pytest.approx(d.paired.p_value) == g.test.p_value
            assert board.loc[run, "diff_vs_leader"] == pytest.approx(d.paired.diff)
            assert board.loc[run, "diff_vs_leader_ci95"] == pytest.approx(list(d.paired.ci95))
        mixed = diff.compare_runs(con, run_a=leader, run_b="two")
    assert mixed.paired is not None and mixed.paired.method == "sign-flip"  # two samples per task
    measures = mixed.measures.set_index("measure")
    assert list(measures.index) == ["Pass@1", "cost per task ($)", "latency (s)"]
    assert measures.loc["Pass@1", "p_value"] == mixed.paired.p_value


def test_diff_without_shared_tasks_cannot_be_tested(gate_db: Path) -> None:
    with rdb.reader(gate_db) as con:
        d = diff.compare_runs(con, run_a="base", run_b="other")
    assert not d.is_testable and np.isnan(d.p_value)
    assert d.paired is not None and not d.paired.is_testable
    assert compare.mcnemar_exact(0, 0) == 1.0  # shared tasks without discordance: testable, p = 1


def test_run_level_role_baseline_is_shown_apart(tmp_path: Path) -> None:
    """A general ``role: baseline`` run field (kept in runs.extra by ingest) puts the run apart, like gem_role."""
    path = _bench(tmp_path / "r.jsonl", {"ref": {"t1": [1], "t2": [1]}, "a": {"t1": [1], "t2": [0]}})
    lines = path.read_text().splitlines()
    lines = [
        line.replace('"agent": "ref"', '"agent": "ref", "role": "baseline"') if '"record": "run"' in line else line
        for line in lines
    ]
    path.write_text("\n".join(lines) + "\n")
    db = tmp_path / "r.duckdb"
    ingest_paths([path], db=db)
    with rdb.reader(db) as con:
        board = lb.leaderboard(con, RunFilter(benchmark="g-bench")).set_index(["run_id", "slice"]).xs("all", level=1)
    assert board.loc["ref", "is_baseline"] and board.loc["ref", "rank"] is pd.NA
    assert board.loc["a", "is_leader"] and board.loc["ref", "n_shared_with_leader"] == 2


def test_gate_flags_two_sided_margin_and_sequential(gate_db: Path) -> None:
    one = json.loads(_cli(gate_db, "--baseline", "base", "--candidate", "worse", "--json").stdout)
    two = json.loads(_cli(gate_db, "--baseline", "base", "--candidate", "worse", "--json", "--two-sided").stdout)
    assert two["sided"] == "two-sided" and two["p_value"] == pytest.approx(min(1.0, 2 * one["p_value"]))
    # worse by about 28 points: fails with a 5-point margin, passes with a 60-point one
    small = _cli(gate_db, "--baseline", "base", "--candidate", "worse", "--json", "--margin", "0.05")
    large = _cli(gate_db, "--baseline", "base", "--candidate", "worse", "--json", "--margin", "0.6")
    assert small.returncode == 1 and large.returncode == 0
    rep = json.loads(large.stdout)
    assert rep["margin"] == 0.6 and rep["method"] == "t-margin" and rep["bound"] > -0.6
    seq = _cli(gate_db, "--baseline", "base", "--candidate", "worse", "--json", "--sequential")
    s = json.loads(seq.stdout)["sequential"]
    assert seq.returncode == 1 and s["verdict"] == "worse" and s["n_used"] + s["n_saved"] == s["n_total"] == 60
    assert s["e_worse"] >= s["threshold"] == 20.0
    text = _cli(gate_db, "--baseline", "base", "--candidate", "close", "--sequential")
    assert text.returncode == 0 and "sequential:" in text.stdout and "80% power" in text.stdout


def test_the_same_samples_in_another_order_make_no_task_worse_or_better(tmp_path: Path) -> None:
    """A task's mean is summed in the order its samples are met, so two runs with the same scores in another order
    hold values that differ in their last bits (0.6433333333333334 against 0.6433333333333333): in the gate, the
    diff and the leaderboard no task is worse or better and the difference is 0 (``compare.differences``)."""
    rng = np.random.default_rng(3)
    scores = {f"t{i:02d}": [round(float(x), 2) for x in rng.random(3)] for i in range(40)}
    lines: list[dict] = [{"record": "benchmark", "benchmark": "c-bench", "scoring": "continuous"}]
    lines += [{"record": "task", "benchmark": "c-bench", "task_id": t} for t in scores]
    for run, step in (("a", 1), ("b", -1)):
        lines.append({"record": "run", "run_id": run, "benchmark": "c-bench", "agent": run, "eval_date": "2026-01-01"})
        for t, s in scores.items():
            lines += [
                {"record": "attempt", "run_id": run, "task_id": t, "sample": i, "score": v}
                for i, v in enumerate(s[::step])
            ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    db = tmp_path / "c.duckdb"
    ingest_paths([path], db=db)
    with rdb.reader(db) as con:
        d = diff.compare_runs(con, run_a="a", run_b="b")
        assert (d.tasks["score_a"] != d.tasks["score_b"]).any()  # the case: the stored means differ in their last bits
        g = gate.gate(con, baseline="a", candidate="b", metric="mean_score")
        board = lb.leaderboard(con, RunFilter(benchmark="c-bench")).set_index(["run_id", "slice"]).xs("all", level=1)
    assert g.regressed == [] and (g.test.n_worse, g.test.n_better, g.test.diff) == (0, 0, 0.0)
    assert d.paired is not None and (d.paired.n_worse, d.paired.n_better, d.paired.diff) == (0, 0, 0.0)
    assert d.paired.ci95 == (0.0, 0.0) and d.paired.p_value == 1.0
    by_change = diff.tasks_by_change(d)  # the per-task table: every change 0, no task listed as a regression
    assert (by_change["change_pp"] == 0).all() and diff.tasks_by_change(d, regressions_only=True).empty
    tested = board[board["diff_vs_leader"].notna()]  # the run that is not the leader
    assert list(tested["diff_vs_leader"]) == [0.0] and list(tested["diff_vs_leader_ci95"]) == [[0.0, 0.0]]
    assert list(tested["is_tied"]) == [True]
    assert board["mde80"].isna().all()  # no spread to size a gap by: unknown (it was 0.0, "any gap would be found")

"""Version diff: exact McNemar, default pair, flipped tasks and slice deltas on a hand-made benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import store as rdb
from analytics import diff
from ingest.pipeline import ingest_paths


@pytest.mark.parametrize(
    ("b", "c", "p"), [(1, 6, 16 / 128), (0, 5, 2 / 32), (3, 3, 1.0), (0, 0, 1.0), (6, 1, 16 / 128)]
)
def test_mcnemar_exact_by_hand(b: int, c: int, p: float) -> None:
    assert diff.mcnemar_exact(b, c) == pytest.approx(p)


def test_default_pair_prefers_a_family_with_two_versions() -> None:
    runs = pd.DataFrame(
        {
            "run_id": ["x3", "g2", "x2", "g1"],
            "agent": ["X", "G", "X", "G"],
            "family": [None, "G", None, "G"],
            "agent_version": ["3", "2", "2", "1"],
            "eval_date": pd.to_datetime(["2026-03-01", "2026-02-01", "2026-01-15", "2026-01-01"]),
        }
    )
    assert diff.default_pair(runs) == ("x2", "x3")  # family falls back to the agent name
    assert diff.default_pair(runs[runs.run_id != "x2"]) == ("g1", "g2")
    assert diff.default_pair(runs.head(1)) is None


def _write_bench(path: Path) -> Path:
    lines = [{"record": "benchmark", "benchmark": "flip-bench", "scoring": "binary"}]
    outcomes_a = {"t1": [1, 1], "t2": [1, 0], "t3": [0, 0], "t4": [0, 1], "t5": [1, 1], "t6": [0, 0]}
    outcomes_b = {"t1": [0, 0], "t2": [1, 1], "t3": [1, 0], "t4": [1, 1], "t5": [1, 1], "t7": [1, 1]}
    for t in sorted(set(outcomes_a) | set(outcomes_b)):
        lines.append(
            {
                "record": "task",
                "benchmark": "flip-bench",
                "task_id": t,
                "level": "L1" if t in ("t1", "t2", "t3") else "L2",
                "category": "c",
            }
        )
    for run, outcomes, date in (("a-v1", outcomes_a, "2026-01-01"), ("a-v2", outcomes_b, "2026-02-01")):
        lines.append(
            {
                "record": "run",
                "run_id": run,
                "benchmark": "flip-bench",
                "agent": "A",
                "family": "A",
                "agent_version": run[-2:],
                "eval_date": date,
            }
        )
        for t, scores in outcomes.items():
            for sample, score in enumerate(scores):
                lines.append(
                    {
                        "record": "attempt",
                        "run_id": run,
                        "task_id": t,
                        "sample": sample,
                        "score": score,
                        "steps": [{"round": 1, "tool": "search", "args": {"q": t}, "result": "r"}],
                        **({"errors": ["HAL"]} if (run, t) == ("a-v2", "t1") else {}),
                    }
                )
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


@pytest.fixture
def flip_db(tmp_path: Path) -> Path:
    db = tmp_path / "flip.duckdb"
    assert [r.outcome for r in ingest_paths([_write_bench(tmp_path / "flip.jsonl")], db=db)] == ["ingested"]
    return db


def test_compare_runs_sample0(flip_db: Path) -> None:
    with rdb.reader(flip_db) as con:
        runs = diff.run_pairs(con, benchmark="flip-bench")
        assert diff.default_pair(runs) == ("a-v1", "a-v2")
        d = diff.compare_runs(con, run_a="a-v1", run_b="a-v2")
    # sample 0: t1 1->0 regression, t3 0->1 fix, t4 0->1 fix; t2, t5 both pass; t6/t7 unmatched
    assert d.flipped["task_id"].tolist() == ["t1", "t3", "t4"]
    assert d.flipped["change"].tolist() == ["regression", "fix", "fix"]
    assert (d.b_regressions, d.c_fixes, d.n_only_a, d.n_only_b) == (1, 2, 1, 1)
    assert d.p_value == pytest.approx(diff.mcnemar_exact(1, 2)) == pytest.approx(1.0)
    assert len(d.tasks) == 5
    overall = d.deltas.set_index("slice").loc["all"]
    # Pass@1 means over samples: A = (1 + .5 + 0 + .5 + 1)/5 = .6, B = (0 + 1 + .5 + 1 + 1)/5 = .7
    assert overall["pass_a"] == pytest.approx(0.6) and overall["pass_b"] == pytest.approx(0.7)
    assert overall["delta"] == pytest.approx(0.1)
    assert overall["lo"] <= overall["delta"] <= overall["hi"]
    l1 = d.deltas.set_index("slice").loc["level=L1"]
    assert l1["n_tasks"] == 3 and l1["delta"] == pytest.approx((-1 + 0.5 + 0.5) / 3)


def test_compare_runs_majority_and_seeded_intervals(flip_db: Path) -> None:
    with rdb.reader(flip_db) as con:
        d = diff.compare_runs(con, run_a="a-v1", run_b="a-v2", basis="majority")
        again = diff.compare_runs(con, run_a="a-v1", run_b="a-v2", basis="majority")
        with pytest.raises(rdb.RunlensError):
            diff.compare_runs(con, run_a="a-v1", run_b="a-v2", basis="best")
    # majority (>= half of samples): t1 1->0, t2 1->1, t3 0->1, t4 1->1, t5 1->1
    assert d.flipped["task_id"].tolist() == ["t1", "t3"]
    pd.testing.assert_frame_equal(d.deltas, again.deltas)
    assert len(diff.fig_deltas(d.deltas).data) == 1


def test_an_untestable_measure_reads_a_dash_and_says_why() -> None:
    """A measure no shared task has in both runs (no cost logged): a dash for the difference, never "– [– to –]",
    and the test column says why there is no test."""
    from analytics.diff.report import measures_table

    nan = float("nan")
    measures = pd.DataFrame(
        [
            {
                "measure": "cost per task ($)",
                "mean_a": nan,
                "mean_b": nan,
                "delta": nan,
                "lo": nan,
                "hi": nan,
                "p_value": nan,
                "method": "untestable",
                "n_tasks": 0,
                "mde80": nan,
            },
            {
                "measure": "latency (s)",
                "mean_a": 240.0,
                "mean_b": 3.5,
                "delta": -236.5,
                "lo": nan,
                "hi": nan,
                "p_value": 1.0,
                "method": "sign-flip",
                "n_tasks": 1,
                "mde80": nan,
            },
        ]
    )
    shown = measures_table(measures)
    assert shown["B − A [95% CI]"].tolist() == ["–", "−236.5"]
    assert shown["Test"].iloc[0] == "untestable: no shared task has it in both runs"

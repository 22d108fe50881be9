"""Tech-Market-Fit on real public data: HAL (GAIA, tau-bench airline) and SWE-bench Verified (25 costed runs).

The frontier Runlens computes (through the real CSV ingest and the CLI) must equal a brute-force Pareto check
computed here straight from the CSV files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analytics import tmf
from cli import main as analytics_main
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.conftest import shared_data
from tests.test_tmf import brute_force_frontier

HAL_BENCHMARKS = ("gaia", "taubench_airline")


def _brute(points: pd.DataFrame) -> set[str]:
    keep = brute_force_frontier(list(points["cost"]), list(points["perf"]))
    return {points["run_id"].iloc[i] for i in keep}


def hal_points(bench: str) -> pd.DataFrame:
    """Per HAL run: cost per task = total cost / tasks run, Pass@1 = successes / tasks run (from the CSVs)."""
    runs = pd.read_csv(shared_data("hal", "runs.csv"))
    outcomes = pd.read_csv(shared_data("hal", "task_outcomes.csv"))
    outcomes = outcomes[outcomes["benchmark"] == bench]
    per = outcomes.groupby("run_id")["success"].agg(["mean", "size"]).reset_index()
    per = per.merge(runs[runs["benchmark"] == bench][["run_id", "total_cost_usd"]], on="run_id")
    per["cost"] = per["total_cost_usd"] / per["size"]
    per["perf"] = per["mean"]
    return per.dropna(subset=["cost"])


@pytest.fixture(scope="module")
def hal_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GAIA and tau-bench airline rows of HAL, ingested by the real CSV adapter (copies in a temp folder)."""
    folder = tmp_path_factory.mktemp("hal")
    outcomes = pd.read_csv(shared_data("hal", "task_outcomes.csv"))
    outcomes[outcomes["benchmark"].isin(HAL_BENCHMARKS)].to_csv(folder / "task_outcomes.csv", index=False)
    pd.read_csv(shared_data("hal", "runs.csv")).to_csv(folder / "runs.csv", index=False)
    db = folder / "hal.duckdb"
    results = ingest_paths([folder / "task_outcomes.csv"], db=db, fmt="csv", mapping="hal")
    assert [r.outcome for r in results] == ["ingested"]
    return db


@pytest.mark.parametrize("bench", HAL_BENCHMARKS)
def test_hal_frontier_pure_matches_brute_force(bench: str) -> None:
    pts = hal_points(bench)
    assert len(pts) > 20
    mask = tmf.pareto_mask(pts["cost"].to_numpy(), pts["perf"].to_numpy())
    assert set(pts.loc[mask, "run_id"]) == _brute(pts)


@pytest.mark.parametrize("bench", HAL_BENCHMARKS)
def test_hal_frontier_through_ingest_and_cli(bench: str, hal_db: Path, capsys: pytest.CaptureFixture) -> None:
    assert analytics_main(["tmf", "--db", str(hal_db), "--benchmark", bench, "--human-minutes", "30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = hal_points(bench)
    brute = _brute(expected)
    assert set(out["frontier"]) == brute
    # frontier listed in increasing cost, with rising performance
    by_id = {p["run_id"]: p for p in out["points"]}
    costs = [by_id[r]["cost_per_task_usd"] for r in out["frontier"]]
    perfs = [by_id[r]["performance"] for r in out["frontier"]]
    assert costs == sorted(costs) and perfs == sorted(perfs)
    # per-task cost and Pass@1 equal the CSV computation
    ref = expected.set_index("run_id")
    for run_id in brute:
        assert by_id[run_id]["cost_per_task_usd"] == pytest.approx(ref.loc[run_id, "cost"])
        assert by_id[run_id]["performance"] == pytest.approx(ref.loc[run_id, "perf"])
    # 30 human minutes at 50 USD/hour = 25 USD per task; HAL has no human run, so performance defaults to 100%
    assert out["human"] == {"cost_per_task_usd": pytest.approx(25.0), "performance": 1.0}
    assert out["stage"] in (1, 2, 3)


def test_hal_runs_without_cost_are_listed(hal_db: Path, capsys: pytest.CaptureFixture) -> None:
    runs = pd.read_csv(shared_data("hal", "runs.csv"))
    missing = set(runs[(runs["benchmark"].isin(HAL_BENCHMARKS)) & runs["total_cost_usd"].isna()]["run_id"])
    for bench in HAL_BENCHMARKS:
        analytics_main(["tmf", "--db", str(hal_db), "--benchmark", bench, "--json"])
        out = json.loads(capsys.readouterr().out)
        listed = {p["run_id"] for p in out["points"] if p["cost_per_task_usd"] is None}
        assert listed == set(out["assumptions"]["runs_without_cost"])
        assert missing & {p["run_id"] for p in out["points"]} <= listed


def test_swebench_verified_costed_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    inst = pd.read_csv(shared_data("swebench_verified", "instance_results.csv"))
    costed = inst[inst.groupby("submission")["instance_cost_usd"].transform(lambda s: s.notna().any())]
    assert costed["submission"].nunique() == 25
    costed.to_csv(tmp_path / "instance_results.csv", index=False)
    pd.read_csv(shared_data("swebench_verified", "submissions.csv")).to_csv(tmp_path / "submissions.csv", index=False)
    db = tmp_path / "swe.duckdb"
    assert [
        r.outcome
        for r in ingest_paths([tmp_path / "instance_results.csv"], db=db, fmt="csv", mapping="swebench-verified")
    ] == ["ingested"]
    assert (
        analytics_main(["tmf", "--db", str(db), "--benchmark", "swe-bench-verified", "--human-minutes", "60", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    per = costed.groupby("submission").agg(cost=("instance_cost_usd", "mean"), perf=("resolved", "mean"))
    per = per.reset_index().rename(columns={"submission": "run_id"})
    assert set(out["frontier"]) == _brute(per)
    by_id = {p["run_id"]: p for p in out["points"]}
    assert len(by_id) == 25
    for row in per.itertuples():
        assert by_id[row.run_id]["cost_per_task_usd"] == pytest.approx(row.cost)
    assert np.isfinite(out["value_area_usd"])


@pytest.mark.parametrize("bench", HAL_BENCHMARKS)
def test_hal_frontier_labels_stay_inside_and_apart(bench: str, hal_db: Path) -> None:
    """55 tau-bench runs with long HAL names: every frontier label drawn fits the plot and overlaps no other label
    or frontier marker (boxes recomputed here from the figure's own text and positions)."""
    from analytics import figures as placing
    from analytics.tmf import figures
    from store import reader

    with reader(hal_db) as con:
        result = tmf.overview(con, RunFilter(benchmark=bench), options=tmf.TmfOptions(), freq="quarter").overall
    assert result is not None
    front = next(t for t in tmf.fig_tmf(result).data if t.name == "Frontier runs")
    width, height = placing.PLOT_PX
    lx0, lx1 = figures._x_range(result)
    xs = (np.log10(np.asarray(front.x, dtype=float)) - lx0) / (lx1 - lx0) * width
    ys = np.asarray(front.y, dtype=float) / 100 * height
    boxes = [(x - 6, y - 6, x + 6, y + 6) for x, y in zip(xs, ys, strict=True)]
    n_labelled = 0
    for x, y, text, pos in zip(xs, ys, front.text, front.textposition, strict=True):
        if not text:
            continue
        n_labelled += 1
        assert len(text) <= placing.MAX_LABEL_CHARS
        box = placing.label_box(x, y, text, pos)
        assert box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height, (text, pos)
        assert not any(placing._overlaps(box, b) for b in boxes), (text, pos)
        boxes.append(box)
    assert n_labelled >= min(3, len(xs))  # most of the frontier keeps its name

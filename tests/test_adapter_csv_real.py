"""Long CSV adapter on the full real files (78k SWE-bench and 66k HAL rows): per-run resolve rates, task counts,
dates, costs and tokens equal the sources. Slow on a shared machine, so marked slow (CI still runs it)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from ingest.pipeline import ingest_paths
from tests.adapter_helpers import rows
from tests.conftest import shared_data

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swe_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    db = tmp_path_factory.mktemp("swe") / "swe.duckdb"
    started = time.perf_counter()
    results = ingest_paths(
        [shared_data("swebench_verified", "instance_results.csv")], db=db, fmt="csv", mapping="swebench-verified"
    )
    assert [r.outcome for r in results] == ["ingested"], results[0].error
    return db, time.perf_counter() - started


@pytest.fixture(scope="module")
def hal_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("hal") / "hal.duckdb"
    results = ingest_paths([shared_data("hal", "task_outcomes.csv")], db=db, fmt="csv", mapping="hal")
    assert [r.outcome for r in results] == ["ingested"], results[0].error
    return db


def test_swebench_resolve_rates_and_counts_equal_the_source(swe_db: tuple[Path, float]) -> None:
    db, seconds = swe_db
    src = pd.read_csv(shared_data("swebench_verified", "instance_results.csv"))
    expected = src.groupby("submission")["resolved"].agg(["count", "mean"])
    got = pd.DataFrame(
        rows(db, "SELECT run_id, count(*), avg(score) FROM attempts GROUP BY 1"), columns=["run_id", "n", "rate"]
    ).set_index("run_id")
    joined = expected.join(got, how="outer")
    assert len(joined) == 156
    assert (joined["count"] == joined["n"]).all()
    assert (joined["mean"] - joined["rate"]).abs().max() < 1e-12
    assert rows(db, "SELECT DISTINCT benchmark FROM runs") == [("swe-bench-verified",)]
    assert seconds < 120, f"78k rows took {seconds:.1f} s"


def test_swebench_runs_take_names_dates_and_costs_from_the_files(swe_db: tuple[Path, float]) -> None:
    db, _ = swe_db
    subs = pd.read_csv(shared_data("swebench_verified", "submissions.csv")).set_index("submission")
    run = "20231010_rag_claude2"
    agent, date = rows(db, "SELECT agent, eval_date::VARCHAR FROM runs WHERE run_id = ?", [run])[0]
    assert agent == subs.loc[run, "name"] and date == subs.loc[run, "date"]
    src = pd.read_csv(shared_data("swebench_verified", "instance_results.csv"))
    costed = src.dropna(subset=["instance_cost_usd"])
    total = rows(db, "SELECT sum(cost_usd), count(cost_usd) FROM attempts")[0]
    assert total[1] == len(costed) and abs(total[0] - costed["instance_cost_usd"].sum()) < 1e-6
    assert (
        rows(db, "SELECT count(*) FROM attempt_metrics WHERE name = 'api_calls'")[0][0]
        == costed["api_calls"].notna().sum()
    )
    assert rows(db, "SELECT category FROM tasks WHERE task_id = 'django__django-11099'") == [("django/django",)]


def test_hal_rates_costs_and_tokens(hal_db: Path) -> None:
    outcomes = pd.read_csv(shared_data("hal", "task_outcomes.csv"))
    runs = pd.read_csv(shared_data("hal", "runs.csv"))
    tokens = pd.read_csv(shared_data("hal", "token_usage.csv"))
    shared = set(runs["run_id"][runs["run_id"].duplicated()])
    key = lambda b, r: f"{b}:{r}" if r in shared else r  # noqa: E731
    outcomes["rid"] = [key(b, r) for b, r in zip(outcomes["benchmark"], outcomes["run_id"], strict=True)]
    expected = outcomes.groupby("rid")["success"].agg(["count", "mean"])
    got = pd.DataFrame(
        rows(hal_db, "SELECT run_id, count(*), avg(score), sum(cost_usd), sum(input_tokens) FROM attempts GROUP BY 1"),
        columns=["rid", "n", "rate", "cost", "tok_in"],
    ).set_index("rid")
    joined = expected.join(got, how="outer")
    assert len(joined) == len(runs) and (joined["count"] == joined["n"]).all()
    assert (joined["mean"] - joined["rate"]).abs().max() < 1e-12
    runs["rid"] = [key(b, r) for b, r in zip(runs["benchmark"], runs["run_id"], strict=True)]
    cost = runs.set_index("rid")["total_cost_usd"].to_frame().join(got)
    has = cost["total_cost_usd"].notna()
    assert (cost.loc[has, "total_cost_usd"] - cost.loc[has, "cost"]).abs().max() < 1e-6
    assert cost.loc[~has, "cost"].isna().all()
    one = tokens[tokens["run_id"] == "agentharm_1733424507"]
    total_in = (one["prompt_tokens"] + one["input_tokens"]).sum()
    assert abs(got.loc["agentharm_1733424507", "tok_in"] - total_in) <= got.loc["agentharm_1733424507", "n"]
    benches = {b for (b,) in rows(hal_db, "SELECT DISTINCT benchmark FROM runs")}
    assert benches == set(runs["benchmark"])

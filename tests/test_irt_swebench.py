"""The progress index on the real SWE-bench Verified history (156 submissions x 500 instances, dense).

Ingested with the shipped CSV mapping, fitted with the default settings (1PL) through the same cache the page and
CLI use. Slow on a shared 2-core machine (tens of seconds to minutes), so marked slow.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

import store as rdb
from analytics import irt
from analytics import progress as prog
from ingest.pipeline import ingest_paths
from jobs.irt import fit_and_store
from tests.conftest import shared_data

pytestmark = pytest.mark.slow
SUSPECT = "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219"  # does not reconcile with the leaderboard (SOURCE.md)


@pytest.fixture(scope="module")
def swe_fit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, irt.StoredFit, float]:
    db = tmp_path_factory.mktemp("swe_irt") / "swe.duckdb"
    results = ingest_paths(
        [shared_data("swebench_verified", "instance_results.csv")], db=db, fmt="csv", mapping="swebench-verified"
    )
    assert [r.outcome for r in results] == ["ingested"], results[0].error
    started = time.perf_counter()
    with rdb.writer(db) as con:
        fit = fit_and_store(con, benchmark="swe-bench-verified")
    return db, fit, time.perf_counter() - started


def test_abilities_agree_with_resolve_rates_on_the_dense_matrix(swe_fit) -> None:
    db, fit, seconds = swe_fit
    with rdb.reader(db) as con:
        view = prog.progress_view(con, benchmark="swe-bench-verified")
    ab = view.abilities
    assert len(ab) >= 150 and len(fit.items) == 500
    rho = ab["ability"].rank().corr(ab["raw_score"].rank())
    assert rho >= 0.95, rho
    assert (ab["ability_hi"] > ab["ability_lo"]).all() and not ab["is_flagged"].any()
    print(f"\nSWE-bench Verified 1PL: {len(ab)} x {len(fit.items)}, fit {seconds:.1f} s, spearman vs resolve {rho:.3f}")


def test_items_flag_the_instances_nobody_solves(swe_fit) -> None:
    _, fit, _ = swe_fit
    src = pd.read_csv(shared_data("swebench_verified", "instance_results.csv"))
    never = set(src.groupby("instance_id")["resolved"].max().loc[lambda s: s == 0].index)
    flagged_dead = set(fit.items.loc[fit.items["flag"] == "dead", "task_id"])
    assert flagged_dead == never and len(never) == 32
    assert not (fit.items["flag"] == "saturated").any()  # no instance is solved by every submission


def test_the_frontier_rises_from_2023_to_2025(swe_fit) -> None:
    db, _, _ = swe_fit
    with rdb.reader(db) as con:
        view = prog.progress_view(con, benchmark="swe-bench-verified")
    fr = view.frontier
    assert fr["first_eval_date"].is_monotonic_increasing and fr["ability"].is_monotonic_increasing
    assert fr["first_eval_date"].iloc[0].year == 2023 and fr["first_eval_date"].iloc[-1].year == 2025
    assert fr["ability"].iloc[-1] - fr["ability"].iloc[0] > 3.0  # logits: from ~0% to ~75% resolved
    rate = view.velocity.set_index("family").loc["(frontier)", "ability_per_month"]
    assert rate > 0

"""The demo AD-Bench history was generated from known abilities (data/demo/history_truth.csv): the shipped
default fit must recover them better than raw pass rates do. Needs the demo database, so marked slow."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import store as rdb
from analytics import irt

pytestmark = pytest.mark.slow
TRUTH = Path(__file__).resolve().parent.parent / "data" / "demo" / "history_truth.csv"


def test_default_fit_recovers_the_generating_abilities(demo_db: Path) -> None:
    """Fitted on the history runs only: the 2026 paper runs were not drawn from the truth, and five agent versions
    have runs in both (pooling them would mix responses the truth does not describe)."""
    truth = pd.read_csv(TRUTH)
    truth = truth[truth["kind"] == "run"].rename(columns={"id": "run_id", "ability": "true_ability"})
    with rdb.reader(demo_db) as con:
        runs = rdb.query_df(
            con,
            "SELECT run_id, eval_date, agent || CASE WHEN coalesce(agent_version, '') = '' THEN '' "
            "ELSE ' ' || agent_version END AS subject FROM runs WHERE benchmark = 'ad-bench'",
        )
        obs = irt.load_responses(con, benchmark="ad-bench")
    history = runs[runs["run_id"].isin(truth["run_id"])]
    assert len(history) < len(runs)  # the demo also holds runs not drawn from the truth
    keys = set(zip(history["subject"], pd.to_datetime(history["eval_date"]), strict=True))
    part = obs[[k in keys for k in zip(obs["subject"], pd.to_datetime(obs["eval_date"]), strict=True)]]
    fit = irt.estimate(part)
    per_subject = truth.merge(runs, on="run_id").groupby("subject")["true_ability"].first()
    raw = part.groupby("subject")["passed"].mean().rename("raw")
    df = fit.abilities.set_index("subject").join(per_subject, how="inner").join(raw)
    assert len(df) >= 10
    rho = df["ability"].rank().corr(df["true_ability"].rank())
    rho_raw = df["raw"].rank().corr(df["true_ability"].rank())
    print(f"\nAD-Bench history: {len(df)} versions, Spearman vs truth {rho:.3f} (raw pass rate {rho_raw:.3f})")
    assert rho >= 0.9 and rho > rho_raw, (rho, rho_raw)

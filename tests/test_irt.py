"""IRT estimation: recovery on a rotating-item design, honest intervals, determinism, linking, cache, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics import irt
from analytics.irt import fit as irt_fit
from jobs.irt import fit_and_store

# Small but informative: 3 periods x 10 agents x 60 tasks, a quarter carried over; later periods harder.
DESIGN = dict(n_periods=3, agents_per_period=10, items_per_period=60, overlap=0.3, growth=1.0)
FAST: dict[str, int] = {}  # the shipped defaults (300 epochs)


def write_native(obs: pd.DataFrame, path: Path, *, benchmark: str = "sim-bench") -> Path:
    """Native v1 JSONL from observation rows (subject, agent, agent_version, family, eval_date, task_id, passed)."""
    lines = [{"record": "benchmark", "benchmark": benchmark, "version": "1", "scoring": "binary"}]
    lines += [{"record": "task", "benchmark": benchmark, "task_id": t} for t in sorted(obs["task_id"].unique())]
    runs = obs.groupby("subject", sort=True).first()
    lines += [
        {
            "record": "run",
            "run_id": s,
            "benchmark": benchmark,
            "agent": r.agent,
            "agent_version": r.agent_version,
            "family": r.family,
            "kind": "llm",
            "eval_date": str(r.eval_date),
        }
        for s, r in runs.iterrows()
    ]
    lines += [
        {
            "record": "attempt",
            "run_id": r.subject,
            "task_id": r.task_id,
            "sample": int(getattr(r, "sample", 0)),
            "score": int(r.passed),
        }
        for r in obs.itertuples()
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sim() -> tuple[pd.DataFrame, pd.DataFrame]:
    return irt.simulate_rotating(seed=3, **DESIGN)


@pytest.fixture(scope="module")
def fitted(sim: tuple[pd.DataFrame, pd.DataFrame]) -> irt.IrtResult:
    return irt.estimate(sim[0], irt.settings_for("1pl", **FAST))


def test_prepare_rejects_graded_responses_and_missing_columns() -> None:
    obs = pd.DataFrame({"subject": ["a", "b"], "task_id": ["t", "t"], "passed": [0.5, 1.0]})
    with pytest.raises(ValueError, match="0/1"):
        irt.prepare_arrays(obs)
    with pytest.raises(ValueError, match="'passed'"):
        irt.prepare_arrays(obs.drop(columns="passed"))


def test_jml_start_orders_agents_by_pass_rate_on_a_common_pool() -> None:
    rng = np.random.default_rng(0)
    theta = np.linspace(-2, 2, 8)
    b = rng.normal(0, 1, 80)
    y = (rng.random((8, 80)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(int)
    s, i = np.meshgrid(np.arange(8), np.arange(80), indexing="ij")
    obs = pd.DataFrame(
        {"subject": [f"s{k}" for k in s.ravel()], "task_id": [f"t{k:02d}" for k in i.ravel()], "passed": y.ravel()}
    )
    start, _ = irt.jml_start(irt.prepare_arrays(obs))
    assert np.corrcoef(start, theta)[0, 1] > 0.95


def test_1pl_recovers_abilities_where_raw_pass_rates_fail(fitted: irt.IrtResult, sim) -> None:
    rec = irt.recovery(fitted, sim[1])
    print(f"\nrotating design recovery: {rec}")
    assert rec["spearman_raw"] < 0.8, rec  # the design defeats raw scores ...
    assert rec["spearman"] >= 0.9, rec  # ... and the linked IRT scale recovers the ordering
    # growth across periods is recovered (true growth = 1.0 per period)
    df = fitted.abilities.merge(sim[1], on="subject")
    per = df.groupby("period")[["ability", "true_ability"]].mean()
    est_growth = per["ability"].iloc[-1] - per["ability"].iloc[0]
    true_growth = per["true_ability"].iloc[-1] - per["true_ability"].iloc[0]
    assert est_growth == pytest.approx(true_growth, rel=0.35)


def test_90_percent_intervals_cover_at_least_80_percent_of_true_abilities(fitted: irt.IrtResult, sim) -> None:
    rec = irt.recovery(fitted, sim[1])
    assert rec["coverage90"] >= 0.8, rec
    assert (fitted.abilities["ability_lo"] < fitted.abilities["ability"]).all()
    assert (fitted.abilities["ability_hi"] > fitted.abilities["ability"]).all()


def test_same_data_and_settings_give_identical_numbers(sim) -> None:
    obs = sim[0][sim[0]["subject"].str.contains("-p0-|-p1-")]
    settings = irt.settings_for("1pl", epochs=60, n_boot=10)
    a = irt.estimate(obs, settings)
    b = irt.estimate(obs.sample(frac=1.0, random_state=1), settings)  # row order must not matter either
    pd.testing.assert_frame_equal(a.abilities, b.abilities)
    pd.testing.assert_frame_equal(a.items, b.items)


def test_a_nan_divergence_is_refitted_with_the_next_seed(monkeypatch: pytest.MonkeyPatch, sim) -> None:
    real = irt_fit._train_once
    seeds: list[int] = []

    def flaky(arrays, settings, seed, progress):
        seeds.append(seed)
        return None if len(seeds) == 1 else real(arrays, settings, seed, progress)

    monkeypatch.setattr(irt_fit, "_train_once", flaky)
    res = irt.estimate(sim[0].head(400), irt.settings_for("1pl", epochs=20, n_boot=0))
    assert res.info["restarts"] == 1 and seeds == [irt.IrtSettings().seed, irt.IrtSettings().seed + 1]
    monkeypatch.setattr(irt_fit, "_train_once", lambda *a: None)
    with pytest.raises(irt.IrtError, match="diverged"):
        irt.estimate(sim[0].head(400), irt.settings_for("1pl", epochs=20, n_boot=0))


def test_item_flags_and_agents_with_too_few_tasks(fitted: irt.IrtResult) -> None:
    items = pd.DataFrame(
        {"pass_rate": [1.0, 0.0, 0.5, 0.5], "r_ability": [0.0, 0.0, -0.4, 0.3], "discrimination": [1.0, 1.0, 1.0, 1.0]}
    )
    assert irt_fit._item_flags(items, model="1pl").tolist() == ["saturated", "dead", "negative", ""]
    assert not fitted.abilities["is_flagged"].any()  # 60 tasks each, above min_items
    obs = pd.DataFrame(
        {
            "subject": ["a"] * 5 + ["b"] * 30,
            "task_id": [f"t{k}" for k in range(5)] + [f"t{k}" for k in range(30)],
            "passed": [1, 0] * 17 + [1],
        }
    )
    res = irt.estimate(obs, irt.settings_for("1pl", epochs=20, n_boot=0))
    assert res.abilities.set_index("subject")["is_flagged"].to_dict() == {"a": True, "b": False}


def test_linking_keeps_old_agents_in_place_when_a_period_is_added(sim) -> None:
    obs, _ = sim
    old = obs[~obs["subject"].str.contains("-p2-")]
    first = irt.estimate(old, irt.settings_for("1pl", epochs=150, n_boot=0))
    # a second fit with the new period and another seed: the link must put old agents back in place
    second = irt.estimate(
        obs,
        irt.settings_for("1pl", epochs=150, n_boot=0, seed=7),
        previous_items=first.items,
        previous_abilities=first.abilities,
    )
    assert second.info["n_anchor_items"] >= 40 and second.info["link_method"].startswith("anchor")
    assert second.info["old_agents_moved"] < 0.25, second.info
    link = irt.link_to_previous(
        pd.Series([0.0, 1.0, 2.0], index=["x", "y", "z"]),
        pd.Series([1.0] * 3),
        pd.DataFrame({"task_id": ["x", "y", "z"], "difficulty": [0.5, 1.5, 2.5], "flag": ""}),
        model="1pl",
        min_anchor_items=3,
    )
    assert (link.slope, link.shift, link.n_anchor) == (1.0, 0.5, 3)


def test_fit_is_stored_keyed_by_data_and_settings_and_never_refit(
    tmp_path: Path, sim, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.pipeline import ingest_paths

    db = tmp_path / "irt.duckdb"
    obs = sim[0][sim[0]["subject"].str.contains("-p0-|-p1-")]
    ingest_paths([write_native(obs, tmp_path / "a.jsonl")], db=db)
    settings = irt.settings_for("1pl", epochs=60, n_boot=10)
    with rdb.writer(db) as con:
        fit = fit_and_store(con, benchmark="sim-bench", settings=settings)
    assert len(fit.abilities) == 20 and fit.info["link_method"].startswith("centred")

    def boom(*a, **k):
        raise AssertionError("refit on unchanged data")

    monkeypatch.setattr(irt, "estimate", boom)
    with rdb.writer(db) as con:
        again = fit_and_store(con, benchmark="sim-bench", settings=settings)
    assert again.fit_key == fit.fit_key
    monkeypatch.undo()
    ingest_paths([write_native(sim[0][sim[0]["subject"].str.contains("-p2-")], tmp_path / "b.jsonl")], db=db)
    with rdb.writer(db) as con:
        new = fit_and_store(con, benchmark="sim-bench", settings=settings)
        log = irt.fit_log(con, benchmark="sim-bench")
    assert new.fit_key != fit.fit_key and len(new.abilities) == 30
    assert new.info["link_method"].startswith("anchor") and new.scale_shift is not None
    assert len(log) == 2 and log["old_agents_moved"].notna().sum() == 1
    with rdb.reader(db) as con:  # the page's view: current fit found by key (default settings differ here)
        stale = irt.get_fit(con, benchmark="sim-bench")
    assert stale is not None and stale.fit_key == new.fit_key and not stale.is_current


def test_cli_json_shape(
    tmp_path: Path, sim, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli import main
    from ingest.pipeline import ingest_paths

    db = tmp_path / "cli.duckdb"
    obs = sim[0][sim[0]["subject"].str.contains("-p0-")]
    ingest_paths([write_native(obs, tmp_path / "a.jsonl")], db=db)
    monkeypatch.setattr(irt, "settings_for", lambda model, **kw: irt.IrtSettings(model=model, epochs=40, n_boot=0))
    assert main(["irt", "--db", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "1pl" and len(out["abilities"]) == 10 and len(out["items"]) == 60
    assert set(out["abilities"][0]) == {
        "agent",
        "agent_version",
        "ability",
        "ability_lo",
        "ability_hi",
        "n_items",
        "first_eval_date",
    }
    assert set(out["items"][0]) == {"task_id", "difficulty", "discrimination", "pass_rate", "flag"}
    assert out["abilities"][0]["first_eval_date"] == "2024-01-15"
    with rdb.reader(db) as con:
        n_fits = rdb.query_rows(con, "SELECT count(*) FROM irt_fits")[0][0]
    assert main(["irt", "--db", str(db), "--json"]) == 0  # cached: no second fit
    with rdb.reader(db) as con:
        assert rdb.query_rows(con, "SELECT count(*) FROM irt_fits")[0][0] == n_fits == 1


def test_2pl_estimates_discriminations_and_links_with_mean_sigma() -> None:
    obs, truth = irt.simulate_rotating(n_periods=2, agents_per_period=8, items_per_period=40, model="2pl", seed=4)
    res = irt.estimate(obs, irt.settings_for("2pl", epochs=80, n_boot=0))
    assert res.items["discrimination"].std() > 0.01 and (res.items["discrimination"] > 0).all()
    assert res.info["model"] == "2pl" and len(res.abilities) == 16
    link = irt.link_to_previous(
        pd.Series([0.0, 1.0, 2.0], index=["x", "y", "z"]),
        pd.Series([1.0] * 3),
        pd.DataFrame({"task_id": ["x", "y", "z"], "difficulty": [1.0, 3.0, 5.0], "flag": ""}),
        model="2pl",
        min_anchor_items=3,
    )
    assert (link.slope, link.shift) == (2.0, 1.0)  # b* = 2 b + 1 maps (0, 1, 2) onto (1, 3, 5)

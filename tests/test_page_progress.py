"""AppTest of the Progress page: empty state with the fit button, a fit from the page, charts and tables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from analytics import formatting as fmt
from analytics import irt
from analytics import progress as prog
from analytics.runs import run_label
from ingest.pipeline import ingest_paths
from jobs.irt import fit_and_store
from tests.conftest import ROOT
from tests.test_irt import write_native


def table(at: AppTest, column: str):
    """The first dataframe on the page holding ``column``."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, [list(d.value.columns) for d in at.dataframe]
    return found[0]


@pytest.fixture
def sim_db(tmp_path: Path) -> Path:
    obs, _ = irt.simulate_rotating(n_periods=3, agents_per_period=6, items_per_period=40, seed=5)
    db = tmp_path / "progress.duckdb"
    ingest_paths([write_native(obs, tmp_path / "sim.jsonl")], db=db)
    return db


def open_page(db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("RUNLENS_DB", str(db))
    # the page fits with the model's default settings: make them quick for the test (same process)
    monkeypatch.setattr(irt, "settings_for", lambda model, **kw: irt.IrtSettings(model=model, epochs=80, n_boot=20))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("views/progress.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_empty_state_then_fit_from_the_page(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(sim_db, monkeypatch)
    assert any("No 1pl fit of" in i.value and "18 agent versions" in i.value for i in at.info)
    assert not at.metric
    at.button(key="irt_refit").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Agent versions"] == "18" and metrics["Tasks"] == str(len(table(at, "Flag")))
    with rdb.reader(sim_db) as con:
        view = prog.progress_view(con, benchmark="sim-bench", model="1pl")
    assert view.fit is not None and view.fit.is_current
    shown = table(at, "Ability (logits) [90% CI]")
    ranked = view.abilities.sort_values("ability", ascending=False)
    assert shown["Ability (logits) [90% CI]"].tolist() == [
        f"{fmt.number(r.ability, 2)} [{fmt.span(r.ability_lo, r.ability_hi, digits=2)}]" for r in ranked.itertuples()
    ]
    assert shown["Agent version"].tolist() == [run_label(r.agent, r.agent_version) for r in ranked.itertuples()]
    assert len(at.get("plotly_chart")) == 4
    assert not at.warning or all("changed" not in w.value for w in at.warning)
    # a rerun reads the stored fit: no second fit
    at.run()
    with rdb.reader(sim_db) as con:
        assert rdb.query_rows(con, "SELECT count(*) FROM irt_fits")[0][0] == 1


def test_icc_follows_the_task_in_the_url(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with rdb.writer(sim_db) as con:
        fit = fit_and_store(con, benchmark="sim-bench", settings=irt.IrtSettings(epochs=80, n_boot=20))
    hardest = fit.items.sort_values("difficulty")["task_id"].iloc[-1]
    monkeypatch.setenv("RUNLENS_DB", str(sim_db))
    monkeypatch.setattr(irt, "settings_for", lambda model, **kw: irt.IrtSettings(model=model, epochs=80, n_boot=20))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["task"] = hardest
    at.run()
    at.switch_page("views/progress.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="irt_task").value == hardest
    at.multiselect(key="irt_flags").set_value(["dead"]).run()
    assert set(table(at, "Flag")["Flag"]) <= {"dead"}


def test_the_first_visit_fits_in_the_background(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import background

    monkeypatch.setenv("RUNLENS_AUTO_FIT", "1")
    at = open_page(sim_db, monkeypatch)
    assert any("fitting now, in the background" in i.value for i in at.info)
    # torch was imported whole before the fit's thread started (never seen half-imported by another page's thread)
    assert hasattr(sys.modules["torch"], "Tensor")
    assert at.get("progress") and not at.metric  # a progress bar while the fit runs (or just finished)
    jobs = [j for k, j in background._JOBS.items() if str(sim_db) in k]
    assert len(jobs) == 1 and jobs[0].thread is not None
    jobs[0].thread.join(timeout=120)
    assert jobs[0].is_done and jobs[0].error is None, jobs[0].error
    at.run()  # what the page's own timer does once the job is done
    assert not at.exception, [e.value for e in at.exception]
    assert {m.label: m.value for m in at.metric}["Agent versions"] == "18"
    with rdb.reader(sim_db) as con:
        assert rdb.query_rows(con, "SELECT count(*) FROM irt_fits")[0][0] == 1  # one fit, stored
    again = open_page(sim_db, monkeypatch)  # a later visitor reads the stored fit at once
    assert again.metric and not again.get("progress")


def test_the_sidebar_agents_choose_the_versions_shown(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with rdb.writer(sim_db) as con:
        fit_and_store(con, benchmark="sim-bench", settings=irt.IrtSettings(epochs=80, n_boot=20))
    with rdb.reader(sim_db) as con:
        everything = prog.progress_view(con, benchmark="sim-bench", model="1pl").abilities
    agent = str(everything["agent"].iloc[0])
    mine = everything[everything["agent"] == agent]
    monkeypatch.setenv("RUNLENS_DB", str(sim_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["agents"] = agent
    at.run()
    at.switch_page("views/progress.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(f"Showing {len(mine)} of the fit's {len(everything)} agent versions" in c.value for c in at.caption)
    shown = set(table(at, "Ability (logits) [90% CI]")["Agent version"])
    assert shown == {run_label(r.agent, r.agent_version) for r in mine.itertuples()}
    assert {m.label: m.value for m in at.metric}["Agent versions"] == str(len(everything))  # the fit is whole


def test_an_unknown_model_in_the_link_gives_a_notice(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_DB", str(sim_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["model"] = "9pl"
    at.run()
    at.switch_page("views/progress.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("is not one of 1pl" in i.value for i in at.info) and at.radio(key="irt_model").value == "1pl"

"""AppTest of the Progress page: empty state with the fit button, a fit from the page, charts and tables."""

from __future__ import annotations

import json
import os
import subprocess
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
from jobs.irt import fit_and_store, worker_request
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
    monkeypatch.setenv("RUNLENS_DB", str(db))  # the page's fits run in a process of their own: default settings
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


# The first visit in a fresh process (the server's own sys.modules: another test of this worker may have imported
# torch): the fit starts in the background, runs in a process of its own, and the server never imports torch, whose
# half-finished import in one of its threads made another session's page fail (ui/background.py).
FIRST_VISIT = """
import json, os, sys
from streamlit.testing.v1 import AppTest
from ui import background
at = AppTest.from_file(os.path.join(os.environ["ROOT"], "app.py"), default_timeout=180)
at.run()
at.switch_page("views/progress.py")
at.run()
out = {"exceptions": [e.value for e in at.exception], "info": [i.value for i in at.info]}
out["progress"], out["metrics_before"] = bool(at.get("progress")), len(at.metric)
jobs = [j for k, j in background._JOBS.items() if os.environ["RUNLENS_DB"] in k]
out["jobs"], out["has_process"] = len(jobs), jobs[0].process is not None
jobs[0].thread.join(timeout=170)
out["done"], out["error"] = jobs[0].is_done, jobs[0].error
at.run()  # what the page's own timer does once the job is done
out["exceptions"] += [e.value for e in at.exception]
out["metrics"] = {m.label: m.value for m in at.metric}
again = AppTest.from_file(os.path.join(os.environ["ROOT"], "app.py"), default_timeout=180)
again.run()
again.switch_page("views/progress.py")
again.run()  # a later visitor reads the stored fit at once
out["again"] = [bool(again.metric), bool(again.get("progress"))]
out["torch"] = [name for name in ("torch", "pyro", "py_irt") if name in sys.modules]
print("RESULT " + json.dumps(out))
"""


def test_the_first_visit_fits_in_a_process_of_its_own(sim_db: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "RUNLENS_DB": str(sim_db),
        "RUNLENS_AUTO_FIT": "1",
        "ROOT": str(ROOT),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", FIRST_VISIT], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=400
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["exceptions"] == []
    assert any("fitting now, in the background" in i for i in out["info"])
    assert out["progress"] and out["metrics_before"] == 0  # a progress bar while the fit runs
    assert out["jobs"] == 1 and out["has_process"]
    assert out["done"] and out["error"] is None, out["error"]
    assert out["metrics"]["Agent versions"] == "18"
    assert out["again"] == [True, False]
    assert out["torch"] == []  # the server process never imported torch, pyro or py-irt
    with rdb.reader(sim_db) as con:
        assert rdb.query_rows(con, "SELECT count(*) FROM irt_fits")[0][0] == 1  # one fit, stored
        view = prog.progress_view(con, benchmark="sim-bench", model="1pl")
    assert view.fit is not None and view.fit.is_current and len(view.fit.abilities) == 18


def test_a_fit_process_that_fails_reports_its_error(sim_db: Path) -> None:
    from ui import background

    key = f"test-irt-worker|{sim_db}"
    try:
        job = background.start_process(key, "jobs.irt", worker_request(str(sim_db), benchmark="no-such", model="1pl"))
        assert job.thread is not None
        job.thread.join(timeout=120)
        assert job.is_done and job.error is not None and "has no attempts to fit" in job.error, job.error
        assert job.process is not None and job.process.returncode == 1
    finally:
        background.forget(key)


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

"""The Progress view reads irt_fits once (``irt.fit_and_log``): the same fit and refit log as ``get_fit`` and
``fit_log``, which read it three to four times between them, with no fit, a stale fit, a current one and two
models."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

import store as rdb
from analytics import irt
from analytics import progress as prog
from analytics.irt import load as irt_load
from ingest.pipeline import ingest_paths
from jobs.irt import fit_and_store
from tests.test_irt import write_native

QUICK = {"epochs": 60, "n_boot": 10}


@pytest.fixture
def sim_db(tmp_path: Path) -> Path:
    obs, _ = irt.simulate_rotating(n_periods=2, agents_per_period=4, items_per_period=25, seed=7)
    db = tmp_path / "fits.duckdb"
    ingest_paths([write_native(obs, tmp_path / "sim.jsonl")], db=db)
    return db


def assert_same_fit(ours: irt.StoredFit | None, want: irt.StoredFit | None) -> None:
    if want is None:
        assert ours is None
        return
    assert ours is not None
    for f in dataclasses.fields(want):
        a, b = getattr(ours, f.name), getattr(want, f.name)
        if isinstance(b, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        else:
            assert a == b and type(a) is type(b), (f.name, a, b)


def check(db: Path, *, model: str) -> tuple[irt.StoredFit | None, int]:
    """``fit_and_log`` against ``get_fit`` + ``fit_log``; returns the fit and the statements that read irt_fits."""
    statements: list[str] = []
    real = irt_load.query_df

    def counted(con, sql, params=None):  # noqa: ANN001, ANN202 -- query_df's own arguments
        statements.append(sql)
        return real(con, sql, params)

    with rdb.reader(db) as con:
        want_fit = irt.get_fit(con, benchmark="sim-bench", model=model)
        want_log = irt.fit_log(con, benchmark="sim-bench")
        irt_load.query_df = counted
        try:
            fit, log = irt.fit_and_log(con, benchmark="sim-bench", model=model)
        finally:
            irt_load.query_df = real
        view = prog.progress_view(con, benchmark="sim-bench", model=model)
    assert_same_fit(fit, want_fit)
    assert_same_fit(view.fit, want_fit)
    pd.testing.assert_frame_equal(log, want_log, check_exact=True)
    pd.testing.assert_frame_equal(view.log, want_log, check_exact=True)
    return fit, sum("irt_fits" in sql for sql in statements)


def test_one_read_of_irt_fits_gives_get_fits_fit_and_the_log(sim_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fit, reads = check(sim_db, model="1pl")
    assert fit is None and reads == 1
    with rdb.writer(sim_db) as con:  # a fit whose settings are not the defaults: stale for the page
        fit_and_store(con, benchmark="sim-bench", settings=irt.IrtSettings(**QUICK))
        fit_and_store(con, benchmark="sim-bench", settings=irt.IrtSettings(model="2pl", **QUICK))
    fit, reads = check(sim_db, model="1pl")
    assert fit is not None and not fit.is_current and fit.model == "1pl" and reads == 1
    fit, reads = check(sim_db, model="2pl")
    assert fit is not None and not fit.is_current and fit.model == "2pl" and reads == 1
    # the same fit current: its settings are the model's
    monkeypatch.setattr(irt_load, "settings_for", lambda model, **kw: irt.IrtSettings(model=model, **QUICK))
    fit, reads = check(sim_db, model="1pl")
    assert fit is not None and fit.is_current and fit.model == "1pl" and reads == 1
    assert fit.scale_shift is None or isinstance(fit.scale_shift, float)

"""The normal range (Tukey's studentized range with unlimited degrees of freedom) computed without scipy.stats
(issue 33: the app's start-up): equal to scipy's ``studentized_range`` where scipy evaluates the same limit (df above
100,000), and the leaderboard it gives equal to the leaderboard through scipy, on the demo and a generated store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special
from scipy.stats import studentized_range

import store as rdb
from analytics import compare, stats
from tests.conftest import ROOT
from tests.test_aggregates import assert_same

KS = [2, 3, 4, 5, 6, 8, 13, 20, 40, 57, 100]


def test_the_normal_range_tail_equals_scipys_studentized_range_at_unlimited_df() -> None:
    w = np.array([-1.0, 0.0, 1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, np.inf, np.nan])
    for k in KS:
        ours = stats.normal_range_sf(w, k)
        theirs = studentized_range.sf(w, k, 1e6)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-13, err_msg=str(k))
        assert stats.normal_range_sf(2.5, k).shape == ()
    # two normals: the range is |Z1 - Z2|, sqrt(2) times a half-normal
    v = np.linspace(0.01, 12.0, 300)
    np.testing.assert_allclose(stats.normal_range_sf(v, 2), 2 * special.ndtr(-v / np.sqrt(2)), rtol=1e-12, atol=0)
    # the far tail keeps its digits (scipy's 1 - cdf stops near 1e-12): monotone and positive
    far = stats.normal_range_sf(np.linspace(6.0, 11.0, 40), 8)
    assert (far > 0).all() and (np.diff(far) < 0).all()


def test_the_normal_range_quantile_equals_scipys() -> None:
    for k in KS:
        for p in (0.2, 0.05, 0.01, 0.001):
            ours = stats.normal_range_isf(p, k)
            assert ours == pytest.approx(float(studentized_range.ppf(1 - p, k, 1e6)), rel=0, abs=1e-11), (k, p)
            assert float(stats.normal_range_sf(ours, k)) == pytest.approx(p, rel=1e-12)
    assert np.isnan(stats.normal_range_isf(0.0, 5)) and np.isnan(stats.normal_range_isf(0.05, 1))


def test_the_normal_range_matches_a_simulation() -> None:
    """The range of k seeded normals: the empirical tail within its binomial noise of the computed one."""
    rng = np.random.default_rng(33)
    for k in (3, 13):
        z = rng.standard_normal((200_000, k))
        r = z.max(axis=1) - z.min(axis=1)
        for w in (2.0, 3.5, 5.0):
            p = float(stats.normal_range_sf(w, k))
            assert abs((r > w).mean() - p) < 5 * np.sqrt(p * (1 - p) / r.size) + 1e-6, (k, w)


def _scipy_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "normal_range_sf", lambda w, k: studentized_range.sf(w, k, 1e6))
    monkeypatch.setattr(stats, "normal_range_isf", lambda p, k: float(studentized_range.ppf(1 - p, k, 1e6)))


def _same_up_to_quadrature(a: pd.DataFrame, b: pd.DataFrame, where: str) -> None:
    """Equal frames, float columns to 1e-12 (the p-values and critical gaps of two quadratures of one integral)."""
    assert list(a.columns) == list(b.columns) and len(a) == len(b), where
    for col in a.columns:
        numeric = pd.api.types.is_float_dtype(a[col]) or (
            a[col].dtype == object and all(v is None or isinstance(v, float) for v in [*a[col], *b[col]])
        )
        if numeric:  # p_vs_leader is an object column: None where a row has no test
            x, y = (np.array([np.nan if v is None else v for v in s], dtype=float) for s in (a[col], b[col]))
            assert (np.isnan(x) == np.isnan(y)).all(), f"{where}.{col}"
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-13, err_msg=f"{where}.{col}")
        elif a[col].dtype == object:  # dicts and lists of floats: NaN equals NaN inside them too
            for i, (x, y) in enumerate(zip(a[col], b[col], strict=True)):
                assert_same(x, y, f"{where}.{col}[{i}]")
        else:
            assert_same(a[col], b[col], f"{where}.{col}")


def compare_boards(db: str | Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from analytics import leaderboard as lb

    monkeypatch.setattr(compare, "MAX_GAP_CELLS", 0)  # every step of the max-gap test through the normal range
    n = 0
    with rdb.reader(db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            for leave_out in (False, True):
                rf = rdb.RunFilter(benchmark=bench)
                ours = lb.leaderboard(con, rf, exclude_errored=leave_out)
                with monkeypatch.context() as m:
                    _scipy_range(m)
                    theirs = lb.leaderboard(con, rf, exclude_errored=leave_out)
                _same_up_to_quadrature(ours, theirs, f"{bench} {leave_out}")
                n += int(ours["p_vs_leader"].notna().sum())
    return n


def test_demo_leaderboard_through_the_normal_range_equals_it_through_scipy(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert compare_boards(demo_db, monkeypatch) > 0


def test_generated_leaderboard_through_the_normal_range_equals_it_through_scipy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.pipeline import ingest_paths

    logs = tmp_path / "logs"
    cmd = [sys.executable, str(ROOT / "bench" / "gen_logs.py"), "--attempts", "2000", "--runs", "6"]
    cmd += ["--benchmarks", "2", "--out", str(logs), "--seed", "7"]
    subprocess.run(cmd, check=True, capture_output=True)
    db = tmp_path / "gen.duckdb"
    assert {r.outcome for r in ingest_paths(sorted(logs.glob("*")), db=db, jobs=1)} == {"ingested"}
    assert compare_boards(db, monkeypatch) > 0


def _permutation_sd_before(x: np.ndarray) -> float:
    """compare._permutation_sd as it was (nanvar on every matrix): the reference of the test below."""
    present = np.isfinite(x)
    m_t = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_t = np.where(m_t > 1, np.nanvar(np.where(present, x, np.nan), axis=1) * m_t / np.maximum(m_t - 1, 1), 0.0)
    var_t = np.nan_to_num(var_t)
    n_j = present.sum(axis=0)
    per_run = (present * var_t[:, None]).sum(axis=0) / np.maximum(n_j, 1) ** 2
    return float(np.sqrt(per_run.mean()))


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # a task no run has (nanvar, as before)
@pytest.mark.parametrize("seed", range(4))
def test_permutation_sd_equals_it_with_nanvar_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n, m in [(66_667, 13), (5_000, 7), (300, 2), (40, 3), (1, 4)]:
        binary = rng.binomial(1, 0.6, (n, m)).astype(float)
        graded = rng.binomial(5, rng.random((n, 1)), (n, m)) / 5.0
        scores = rng.random((n, m))
        holes = scores.copy()
        holes[rng.random((n, m)) < 0.1] = np.nan
        for x in (binary, graded, scores, holes):
            assert compare._permutation_sd(x) == _permutation_sd_before(x), (n, m)

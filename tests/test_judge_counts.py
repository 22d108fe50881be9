"""The per-run counts the judge's corrected figures read (run_judge_counts, run_label_codes: migration 009,
store/aggregates.py): after an ingest, a deletion, replaced attempts, late scores, judge labels and rule findings
they equal what the attempts, labels and verdicts give, and ``judge_corrections`` read from them equals the
figures computed from every attempt (``corrections_of`` over ``judge_predictions``), with and without reviews."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics import ppi
from analytics import review as rv
from ingest import uploads
from jobs.reviews import Review, record_reviews
from store import aggregates
from store.paths import MIGRATIONS_DIR
from tests.conftest import ROOT
from tests.migration_support import roll_back
from tests.test_aggregates import change_attempts

MIGRATION = (MIGRATIONS_DIR / "009_run_judge_counts.sql").read_text(encoding="utf-8")
KEYS = {
    "run_judge_counts": "run_id",
    "run_label_codes": "run_id, source, code",
    "run_slice_stats": "run_id, level, category",
    "run_slice_codes": "run_id, level, category, code, sources_mask",
}


def stored(con: Any, table: str) -> pd.DataFrame:
    return rdb.query_df(con, f"SELECT * FROM {table} ORDER BY {KEYS[table]}")


def from_attempts(con: Any, table: str) -> pd.DataFrame:
    """The table as migration 009's backfill computes it from every attempt, label and verdict now."""
    select = MIGRATION.split(f"INSERT INTO {table}\n")[1].split(";")[0]
    df = rdb.query_df(con, f"SELECT * FROM ({select}) ORDER BY {KEYS[table]}")
    df.columns = stored(con, table).columns
    return df


def filters(con: Any) -> list[rdb.RunFilter]:
    """Every benchmark, and each one's first two runs alone."""
    out = []
    for (bench,) in rdb.query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY 1"):
        out.append(rdb.RunFilter(benchmark=bench))
        runs = [r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs WHERE benchmark = ? ORDER BY 1", [bench])]
        out.append(rdb.RunFilter(benchmark=bench, run_ids=tuple(runs[:2])))
    return out


def reference(con: Any, flt: rdb.RunFilter) -> pd.DataFrame:
    """The corrected figures computed from every attempt: the path judge_corrections replaced."""
    preds, source = rv.judge_predictions(con, flt)
    humans = rv.human_consensus(rv.current_reviews(con, flt))
    if len(humans):
        sample, _ = rv.calibration_sample(con, flt)
        humans = humans[humans["attempt_id"].isin(sample)]
    return rv.corrections_of(preds, source, humans)


FORMER_RUN_LIST = (
    "SELECT r.run_id, r.benchmark, r.agent, r.eval_date, count(a.attempt_id) AS n_attempts "
    "FROM runs r LEFT JOIN attempts a USING (run_id) GROUP BY ALL ORDER BY r.benchmark, r.run_id"
)


def check(db: str | Path) -> int:
    """The tables equal their backfill; the figures equal the reference (to rounding), and so does the Upload
    page's run list (attempts counted per run); how many were reviewed."""
    n_reviewed = 0
    with rdb.reader(db) as con:
        pd.testing.assert_frame_equal(uploads.run_list(con), rdb.query_df(con, FORMER_RUN_LIST), obj="run_list")
        for table in KEYS:
            got, want = stored(con, table), from_attempts(con, table)
            want = want.astype(got.dtypes.to_dict())  # a backfill's sum() is HUGEINT, the table's column BIGINT
            assert len(got) > 0, table
            pd.testing.assert_frame_equal(got, want, check_exact=True, obj=table)
        for flt in filters(con):
            new, old = rv.judge_corrections(con, flt), reference(con, flt)
            assert list(new["quantity"]) == list(old["quantity"]), flt
            pd.testing.assert_frame_equal(new, old, check_exact=False, rtol=1e-12, atol=1e-15, obj=str(flt))
            n_reviewed = max(n_reviewed, int(new["n_reviewed"].max()) if len(new) else 0)
    return n_reviewed


def review_some(db: str | Path, n: int) -> None:
    """Reviews of the first ``n`` attempts of each benchmark's calibration order (so the sample is not empty), in
    one writer session (``record_reviews``: the store published once instead of once a review)."""
    with rdb.reader(db) as con:
        benches = [r[0] for r in rdb.query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY 1")]
        queues = {b: rv.review_queue(con, rdb.RunFilter(benchmark=b), queue="calibration", n=n) for b in benches}
    t0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    reviews = []
    for queue in queues.values():
        for i, row in enumerate(queue.itertuples()):
            verdict = "correct" if (row.passed and i % 5) or (not row.passed and i % 7 == 0) else "incorrect"
            codes = [] if verdict == "correct" else (["PE"] if i % 3 else ["HAL", "TE"])
            reviews.append((int(row.attempt_id), verdict, codes))
    record_reviews(db, [Review(a, "r1", verdict, codes) for a, verdict, codes in reviews], now=t0)  # one session


def test_demo_counts_and_figures_after_changes_and_reviews(demo_db: Path) -> None:
    check(demo_db)
    change_attempts(demo_db)
    check(demo_db)
    review_some(demo_db, 24)
    assert check(demo_db) >= 10  # corrected figures, not only notes


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen")
    args = ["--attempts", "2400", "--runs", "6", "--benchmarks", "2", "--out", str(out), "--seed", "5"]
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_logs.py"), *args], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("backend", ["file", "local lake"])
def test_generated_store_counts_and_figures(
    generated_logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    from ingest.pipeline import ingest_paths

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    db: str | Path = tmp_path / "gen.duckdb" if backend == "file" else f"ducklake:sqlite:{tmp_path / 'gen.lake'}"
    files = sorted(generated_logs.glob("*"))
    assert {r.outcome for r in ingest_paths(files[:-1], db=db, jobs=1)} == {"ingested"}
    check(db)
    assert [r.outcome for r in ingest_paths(files[-1:], db=db, jobs=1)] == ["ingested"]
    change_attempts(db)
    review_some(db, 30)
    assert check(db) >= 10


def test_migration_009_backfills_an_older_store(demo_db: Path) -> None:
    """A store at version 8 (no counts) gets them from its attempts when a writer first opens it."""
    with rdb.writer(demo_db) as con:
        expected = {table: stored(con, table) for table in KEYS}
        assert set(KEYS) <= set(roll_back(con, 8))
    with rdb.writer(demo_db) as con:
        assert rdb.schema_version(con) == rdb.latest_version()
        for table in KEYS:
            assert len(expected[table]) > 0
            pd.testing.assert_frame_equal(stored(con, table), expected[table], check_exact=True)


def test_a_deleted_run_leaves_no_counts(demo_db: Path) -> None:
    with rdb.writer(demo_db) as con:
        run_id = rdb.query_rows(con, "SELECT run_id FROM run_judge_counts ORDER BY run_id LIMIT 1")[0][0]
        with rdb.transaction(con):
            aggregates.drop_run(con, run_id)
        for table in KEYS:
            assert rdb.query_rows(con, f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id])[0][0] == 0


@pytest.mark.parametrize("seed", range(6))
def test_ppi_mean_binary_equals_ppi_mean_on_the_zeros_and_ones(seed: int) -> None:
    """Given the unlabelled predictions' count and ones, the estimate equals ppi_mean's on the predictions
    themselves (to rounding), for every lambda regime: tuned, every attempt reviewed, too few reviews."""
    rng = np.random.default_rng(seed)
    n, big_n = [(40, 500), (12, 3), (25, 0), (6, 100), (200, 1), (60, 10_000)][seed]
    y = rng.random(n) < 0.6
    f_lab = np.where(rng.random(n) < 0.8, y, ~y).astype(float)
    f_un = (rng.random(big_n) < 0.55).astype(float)
    want = ppi.ppi_mean(y.astype(float), f_lab, f_un)
    got = ppi.ppi_mean_binary(y.astype(float), f_lab, big_n, int(f_un.sum()))
    for field in want.__dataclass_fields__:
        a, b = getattr(want, field), getattr(got, field)
        assert (np.isnan(a) and np.isnan(b)) or np.isclose(a, b, rtol=1e-12, atol=1e-15), (field, a, b)


def test_ppi_mean_binary_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="ones among"):
        ppi.ppi_mean_binary([1.0] * 10, [1.0] * 10, 3, 4)

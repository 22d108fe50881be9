"""The aggregates the writer keeps (run_task_stats, run_task_codes, run_code_pairs: migration 008,
store/aggregates.py): after an ingest, a deletion, replaced attempts, late scores, judge labels and rule findings they
equal what the attempts and labels give, and every page that reads them (Leaderboard, Tech-Market-Fit, Errors, Progress, the runs' health) gives the same results as the same page
computed from every attempt (the SQL of before, tests/aggregates_reference.py), on the demo and on a generated
store, on a file store, a local lake and a team lake."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import analytics.progress.load as progress_load
import analytics.runs.load as runs_load
import store as rdb
from analytics import errors as er
from analytics import leaderboard as lb
from analytics import progress as prog
from analytics import runs as runs_mod
from analytics import sqlfiles, tmf
from store import aggregates, derived
from store.attempt_update import LateScore, replace_attempts, set_scores
from store.delete import delete_run_con
from store.paths import MIGRATIONS_DIR
from tests import aggregates_reference as ref
from tests.conftest import ROOT
from tests.migration_support import roll_back

MIGRATION = (MIGRATIONS_DIR / "008_run_task_stats.sql").read_text(encoding="utf-8")
KEYS = {
    "run_task_stats": "run_id, task_id",
    "run_task_codes": "run_id, task_id, code, sources_mask",
    "run_code_pairs": "run_id, code_a, mask_a, code_b, mask_b",
}


def backfill(table: str) -> str:
    """Migration 008's SELECT that fills ``table`` from every attempt."""
    return MIGRATION.split(f"INSERT INTO {table}\n")[1].split(";")[0]


def stored(con: Any, table: str = "run_task_stats") -> pd.DataFrame:
    return rdb.query_df(con, f"SELECT * FROM {table} ORDER BY {KEYS[table]}")


def from_attempts(con: Any, table: str) -> pd.DataFrame:
    """The table as migration 008's backfill computes it from every attempt and label now."""
    df = rdb.query_df(con, f"SELECT * FROM ({backfill(table)}) ORDER BY {KEYS[table]}")
    df.columns = stored(con, table).columns
    return df


def assert_same(a: Any, b: Any, where: str = "", *, check_dtype: bool = True) -> None:
    """Equal, value for value (NaN equals NaN; floats bit for bit)."""
    if isinstance(a, pd.DataFrame):
        assert isinstance(b, pd.DataFrame), where
        assert list(a.columns) == list(b.columns) and len(a) == len(b), where
        pd.testing.assert_index_equal(a.index, b.index)
        for col in a.columns:
            if a[col].dtype == object:  # dicts and lists of floats (intervals): NaN equals NaN inside them too
                assert b[col].dtype == object, f"{where}.{col}"
                for i, (x, y) in enumerate(zip(a[col], b[col], strict=True)):
                    assert_same(x, y, f"{where}.{col}[{i}]")
            else:
                pd.testing.assert_series_equal(a[col], b[col], check_exact=True, check_dtype=check_dtype, obj=where)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, obj=where or "series")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for field in dataclasses.fields(a):
            assert_same(getattr(a, field.name), getattr(b, field.name), f"{where}.{field.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), where
    elif a is pd.NA or a is pd.NaT or a is None:
        assert b is a, where
    else:
        assert a == b, where


def assert_rounded(rows: pd.DataFrame, other: pd.DataFrame, what: str) -> None:
    """The rows equal ``other``: exactly, except the means, to float rounding. A statement grouping attempts runs in
    parallel, so its sums may add the same values in another order: a lake's local store of 3,000 attempts differs
    in the last bit on about 15 of 1,000 means between two such reads (seen in run_task_first's backfill, and once in
    the former per-run read under load: 31.597487402969858 against ...985). Used wherever a table of means is built
    twice (its stored rows against its backfill or a refresh)."""
    floats = [c for c in rows.columns if rows[c].dtype == float]
    assert_same(rows.drop(columns=floats), other.drop(columns=floats), what)
    for col in floats:
        np.testing.assert_allclose(rows[col], other[col], rtol=1e-13, atol=0, err_msg=f"{what}: {col}")


@contextmanager
def reading_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The pages' reads as they were before the aggregate: every attempt, through the SQL of before."""
    original = rdb.load_sql

    def load_sql(name: str, **kw: Any) -> str:
        if kw.get("folder") == sqlfiles.SQL_DIR and name in ref.SQL_FILES:
            return ref.SQL_FILES[name]
        return original(name, **kw)

    with monkeypatch.context() as m:
        m.setattr(rdb, "load_sql", load_sql)
        m.setattr(runs_load, "HEALTH_SQL", ref.HEALTH_SQL)
        m.setattr(progress_load, "RAW_SQL", ref.RAW_SQL)
        m.setattr(progress_load, "N_TASKS_SQL", ref.N_TASKS_SQL)
        m.setattr(progress_load, "raw_scores", reference_raw_scores)
        yield


def reference_raw_scores(con: Any, *, benchmark: str) -> tuple[pd.DataFrame, int]:
    """The Progress page's raw scores and task count as they were read before: two statements over the attempts."""
    raw = rdb.query_df(con, ref.RAW_SQL, [benchmark])
    return raw, int(rdb.query_df(con, ref.N_TASKS_SQL, [benchmark])["n"].iloc[0])


def page_results(con: Any) -> dict[str, Any]:
    """What the Leaderboard, Tech-Market-Fit, Errors and Progress pages compute, for every benchmark."""
    out: dict[str, Any] = {}
    benchmarks = [r[0] for r in rdb.query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY 1")]
    for bench in benchmarks:
        rf = rdb.RunFilter(benchmark=bench)
        out[f"{bench} health"] = runs_mod.run_health(con, benchmark=bench)
        out[f"{bench} runs"] = runs_mod.load_runs(con, rf)
        for leave_out in (False, True):
            out[f"{bench} outcomes {leave_out}"] = lb.task_outcomes(con, rf, exclude_errored=leave_out)
            out[f"{bench} leaderboard {leave_out}"] = lb.leaderboard(con, rf, exclude_errored=leave_out, n_boot=50)
        out[f"{bench} tmf inputs"] = tmf.load(con, rf).tasks
        out[f"{bench} tmf"] = tmf.overview(con, rf)
        for sources in (None, ("label",), ("rule", "judge"), ("judge",)):
            out[f"{bench} errors {sources}"] = er.error_table(con, rf, sources=sources)
            for run_id in out[f"{bench} runs"]["run_id"][:3]:
                one = dataclasses.replace(rf, run_ids=(run_id,))
                out[f"{bench} cooccurrence {run_id} {sources}"] = er.cooccurrence(con, one, sources=sources)
        out[f"{bench} failed cells"] = er.failed_cells(con, rf)
        out[f"{bench} progress raw"] = rdb.query_df(con, progress_load.RAW_SQL + " ORDER BY subject", [bench])
        out[f"{bench} progress"] = prog.progress_view(con, benchmark=bench)
        raw, n_tasks = progress_load.raw_scores(con, benchmark=bench)
        out[f"{bench} progress raw, one statement"] = raw.sort_values("subject", ignore_index=True)
        out[f"{bench} progress tasks"] = n_tasks
    return out


def check(db: str | Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The aggregate equals its attempts, and every page reads the same from it as from the attempts: what the
    pages read."""
    with rdb.reader(db) as con:
        assert len(stored(con)) > 0
        for table in KEYS:
            assert_rounded(stored(con, table), from_attempts(con, table), table)
        new = page_results(con)
        with reading_attempts(monkeypatch):
            old = page_results(con)
    assert list(new) == list(old)
    for key in new:
        assert_same(new[key], old[key], key)
    return new


def change_attempts(db: str | Path) -> None:
    """A deletion, late scores (a pass turned into a fail and the reverse, one unscored), replaced attempts, judge
    labels given and replaced, and rule findings added and recomputed for a benchmark."""
    with rdb.writer(db) as con:
        run_ids = [r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id")]
        assert len(run_ids) >= 3
        delete_run_con(con, run_ids[0], actor="test")
        rows = rdb.query_rows(
            con,
            "SELECT attempt_id, passed FROM attempts WHERE run_id = ? AND passed IS NOT NULL ORDER BY attempt_id "
            "LIMIT 4",
            [run_ids[1]],
        )
        late = [LateScore(int(i), 0.0 if p else 1.0, 0.0 if p else 1.0, not p) for i, p in rows[:3]]
        late.append(LateScore(int(rows[3][0]), None, None, False))
        with rdb.transaction(con):
            assert set_scores(con, late, source="test") == 4
            gone = [
                r[0]
                for r in rdb.query_rows(con, "SELECT attempt_id FROM attempts WHERE run_id = ? LIMIT 3", [run_ids[2]])
            ]
            assert replace_attempts(con, gone, reason="test", detail={}) == 3
        failed = [
            int(r[0])
            for r in rdb.query_rows(
                con, "SELECT attempt_id FROM attempts WHERE passed = false ORDER BY attempt_id DESC LIMIT 6"
            )
        ]
        verdict = {"prompt_version": "v1", "model": "m", "verdict": '{"result_correct": false}', "is_failure": False,
                   "failure": None, "raw_output": "", "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0,
                   "created_at": dt.datetime(2026, 1, 1)}  # fmt: skip
        labels = [[("E1", "x"), ("E2", "y")], [("E1", "x")], [], [("E3", "z"), ("E1", "x")]]
        derived.replace_judge_outcomes(
            con, [verdict | {"attempt_id": i, "labels": ls} for i, ls in zip(failed[:4], labels, strict=True)]
        )
        derived.replace_judge_outcomes(con, [verdict | {"attempt_id": failed[0], "labels": [("E2", "y")]}])
        findings = pd.DataFrame({"attempt_id": failed[2:], "code": ["E1", "E4", "E2", "E4"], "step": 0, "detail": ""})
        with rdb.transaction(con):
            derived.insert_rule_findings(con, findings, "g1")
        bench = rdb.query_rows(
            con, "SELECT r.benchmark FROM attempts a JOIN runs r USING (run_id) WHERE a.attempt_id = ?", [failed[-1]]
        )[0][0]
        derived.replace_rule_findings(con, bench, findings.iloc[1:], "g2", meta_key="test:rules")


def test_demo_pages_read_the_same_from_the_aggregate(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(demo_db, monkeypatch)
    change_attempts(demo_db)
    check(demo_db, monkeypatch)


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "gen_logs.py"),
            "--attempts",
            "3000",
            "--runs",
            "8",
            "--benchmarks",
            "2",
            "--out",
            str(out),
            "--seed",
            "3",
        ],
        check=True,
        capture_output=True,
    )
    return out


@pytest.mark.parametrize("backend", ["file", "local lake", "team lake"])
def test_generated_store_reads_the_same_after_ingest_delete_and_update(
    generated_logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, backend: str
) -> None:
    from ingest.pipeline import ingest_paths

    db: str | Path
    if backend == "team lake":  # DuckLake on a throwaway PostgreSQL (the conftest's fixture)
        db = request.getfixturevalue("lake")
    else:
        monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
        db = tmp_path / "gen.duckdb" if backend == "file" else f"ducklake:sqlite:{tmp_path / 'gen.lake'}"
    files = sorted(generated_logs.glob("*"))
    results = ingest_paths(files[:-1], db=db, jobs=1)
    assert {r.outcome for r in results} == {"ingested"}
    check(db, monkeypatch)
    assert [r.outcome for r in ingest_paths(files[-1:], db=db, jobs=1)] == ["ingested"]  # one more file
    change_attempts(db)
    expected = check(db, monkeypatch)  # the pages of the store as it is now
    if backend == "file":  # an export-parquet folder of the store reads the same as the store
        from store.export_parquet import export_parquet

        export_parquet(db, tmp_path / "export")
        with rdb.reader(tmp_path / "export") as con:
            got = page_results(con)
        for key in expected:
            assert_same(got[key], expected[key], f"export {key}")


def test_migration_008_backfills_an_older_store(demo_db: Path) -> None:
    """A store at version 7 (no aggregate) gets it from its attempts when a writer first opens it."""
    with rdb.writer(demo_db) as con:
        expected = {table: stored(con, table) for table in KEYS}
        assert set(KEYS) <= set(roll_back(con, 7))
    with rdb.writer(demo_db) as con:
        assert rdb.schema_version(con) == rdb.latest_version()
        for table in KEYS:
            assert len(expected[table]) > 0
            assert_rounded(stored(con, table), expected[table], f"backfilled {table}")


def test_refresh_of_every_pair_equals_the_backfill(demo_db: Path) -> None:
    with rdb.writer(demo_db) as con:
        before = {table: stored(con, table) for table in KEYS}
        pairs = [(str(r), str(t)) for r, t in rdb.query_rows(con, "SELECT DISTINCT run_id, task_id FROM attempts")]
        with rdb.transaction(con):
            for table in KEYS:
                con.execute(f"DELETE FROM {table}")
            aggregates.refresh_pairs(con, pairs)
        for table in KEYS:
            assert_rounded(stored(con, table), before[table], f"refreshed {table}")


def test_bench_aggregates_builds_a_store_of_the_shape_and_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tiny run of bench/bench_aggregates.py: the store has one row per (run, task), and every page's read runs."""
    import json

    from bench import bench_aggregates

    out = tmp_path / "shape.duckdb"
    args = ["--out", str(out), "--tasks", "40", "--runs", "6", "--benchmarks", "2", "--repeat", "1"]
    assert bench_aggregates.main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rows"]["run_task_stats"] == 6 * 40  # each run holds every task of its benchmark
    assert result["rows"]["run_code_pairs"] == 6 * len(bench_aggregates.CODES) ** 2
    assert set(result["reads"]) >= {"leaderboard.task_outcomes", "tmf.load", "errors.error_table"}
    with rdb.reader(out) as con:
        table = er.error_table(con, rdb.RunFilter(benchmark="bench-0"))
        outcomes = lb.task_outcomes(con, rdb.RunFilter(benchmark="bench-0"))
    assert len(outcomes) == 3 * 40 and not table.empty

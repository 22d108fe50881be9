"""The leaderboard's per (run, task) read with run and task keys as integer codes (issue 33) gives the frame of
``task_outcome_rows.sql`` in (run, task) order (the text keys, as the version diff reads them): the same columns,
dtypes, values and order, on the demo and on a generated store, for every benchmark, with and without errored
attempts, for all runs, one run, and none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import store as rdb
from analytics.leaderboard import load as lb_load
from analytics.sqlfiles import load_sql
from tests.conftest import ROOT


def compare(db: str | Path) -> int:
    n = 0
    with rdb.reader(db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            runs = [
                r[0]
                for r in rdb.query_rows(con, "SELECT run_id FROM runs WHERE benchmark = ? ORDER BY 1 DESC", [bench])
            ]
            for run_ids in (runs, runs[:1], []):
                for leave_out in (False, True):
                    params: dict[str, Any] = {"run_ids": run_ids, "exclude_errored": leave_out}
                    text = rdb.query_df(con, f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id", params)
                    coded = lb_load._coded_outcomes(con, params, bench)
                    pd.testing.assert_frame_equal(coded, text, check_exact=True)
                    # a task missing from the tasks table (or no benchmark): the text keys are read
                    coded = lb_load._coded_outcomes(con, params, None)
                    pd.testing.assert_frame_equal(coded, text, check_exact=True)
                    n += len(text)
    return n


def test_demo_codes_give_the_text_keys_frame(demo_db: Path) -> None:
    assert compare(demo_db) > 0


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen")
    cmd = [sys.executable, str(ROOT / "bench" / "gen_logs.py"), "--attempts", "2000", "--runs", "6"]
    cmd += ["--benchmarks", "2", "--out", str(out), "--seed", "7"]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def test_generated_lake_codes_give_the_text_keys_frame(
    generated_logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.pipeline import ingest_paths

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    db = f"ducklake:sqlite:{tmp_path / 'gen.lake'}"
    assert {r.outcome for r in ingest_paths(sorted(generated_logs.glob("*")), db=db, jobs=1)} == {"ingested"}
    assert compare(db) > 0

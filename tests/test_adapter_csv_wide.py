"""Wide CSV (agents x tasks score matrix) and `--format auto` choosing the right adapter for every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.__main__ import main
from ingest.pipeline import ingest_paths
from tests.adapter_helpers import counts, rows
from tests.conftest import shared_data

MATRIX = "agent,eval_date,task-1,task-2,task-3\nGPT-4o,2025-01-10,1,0,0.5\nClaude,20250201,1,,1\n"


def test_matrix_becomes_runs_and_attempts(tmp_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "spreadsheet-bench.csv"
    path.write_text(MATRIX)
    res = ingest_paths([path], db=tmp_db)
    assert (res[0].outcome, res[0].format) == ("ingested", "csv-wide"), res[0].error
    assert rows(tmp_db, "SELECT run_id, agent, eval_date::VARCHAR FROM runs ORDER BY 1") == [
        ("spreadsheet-bench:Claude", "Claude", "2025-02-01"),
        ("spreadsheet-bench:GPT-4o", "GPT-4o", "2025-01-10"),
    ]
    # a blank cell is a task not run, not a failure
    assert rows(tmp_db, "SELECT agent, count(*), avg(score) FROM v_attempts GROUP BY 1 ORDER BY 1") == [
        ("Claude", 2, 1.0),
        ("GPT-4o", 3, 0.5),
    ]
    assert rows(tmp_db, "SELECT scoring FROM benchmarks") == [("continuous",)]


def test_benchmark_option(tmp_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text(MATRIX)
    res = ingest_paths([path], db=tmp_db, fmt="csv-wide", benchmark="sheet")
    assert res[0].outcome == "ingested"
    assert rows(tmp_db, "SELECT DISTINCT benchmark FROM runs") == [("sheet",)]


@pytest.mark.parametrize(
    "content, expected",
    [
        ("agent,t1,t2\nA,1,high\n", "'high' is not a score"),
        ("agent,t1,t2\nA,1\n", "2 cells"),
        ("agent,t1,t1\nA,1,0\n", "duplicate column"),
        ("agent,t1,t2\nA,1,7\n", "outside"),
    ],
)
def test_malformed_matrix_writes_nothing(fixture_db: Path, tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    before = counts(fixture_db)
    res = ingest_paths([path], db=fixture_db, fmt="csv-wide")
    assert res[0].outcome == "failed" and expected in str(res[0].error)
    assert counts(fixture_db) == before


def test_auto_detection_says_which_format(tmp_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text(MATRIX)
    long_csv = tmp_path / "long.csv"
    long_csv.write_text("run_id,task_id,score\nr,t,1\n")
    tau = tmp_path / "gpt-4o-airline.json"
    tau.write_text(json.dumps(json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())[:2]))
    native = Path(__file__).parent / "fixtures" / "good.jsonl"
    paths = [shared_data("inspect", "2025-05-12T20-27-36-04-00_browser.json"), tau, long_csv, wide, native]
    assert main(["--db", str(tmp_db), "--no-progress", "--format", "auto", *map(str, paths)]) == 0
    err = capsys.readouterr().err
    for path, fmt in zip(paths, ["inspect", "openai-messages", "csv", "csv-wide", "native"], strict=True):
        assert f"{path}: ingested as {fmt}:" in err


def test_unrecognised_file_is_reported(tmp_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "notes.csv"
    path.write_text("hello,world\nfoo,bar\n")
    res = ingest_paths([path], db=tmp_db)
    assert res[0].outcome == "failed" and "format not recognised" in str(res[0].error)

"""Long CSV adapter: the shipped swebench-verified and hal mappings on the real files, inline and YAML
mappings, companion files in the idempotency hash, and malformed inputs that must write nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from ingest.pipeline import ingest_paths
from tests.adapter_helpers import counts, rows
from tests.conftest import shared_data


def test_reingest_adds_nothing_and_auto_agrees_with_named_mapping(tmp_db: Path) -> None:
    path = shared_data("hal", "task_outcomes.csv")
    # a small copy keeps the test fast; companions beside it
    work = tmp_db.parent / "hal"
    work.mkdir()
    pd.read_csv(path).head(300).to_csv(work / "task_outcomes.csv", index=False)
    for name in ("runs.csv", "token_usage.csv"):
        shutil.copyfile(shared_data("hal", name), work / name)
    first = ingest_paths([work / "task_outcomes.csv"], db=tmp_db, fmt="csv", mapping="hal")
    assert first[0].outcome == "ingested" and first[0].n_attempts == 300
    before = counts(tmp_db)
    again = ingest_paths([work], db=tmp_db)  # auto on the folder: companions are recognised, data is a duplicate
    outcomes = {Path(r.path).name: r.outcome for r in again}
    assert outcomes["task_outcomes.csv"] == "duplicate"
    assert counts(tmp_db)["attempts"] == before["attempts"]
    # a changed companion changes the hash: the same results file is not "already ingested"
    runs = pd.read_csv(work / "runs.csv")
    runs.loc[0, "total_cost_usd"] = 999.0
    runs.to_csv(work / "runs.csv", index=False)
    third = ingest_paths([work / "task_outcomes.csv"], db=tmp_db, fmt="csv", mapping="hal")
    assert third[0].outcome == "failed"  # not a silent duplicate: the runs are already there
    assert counts(tmp_db)["attempts"] == before["attempts"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_inline_and_yaml_mappings(tmp_db: Path, tmp_path: Path) -> None:
    csv_path = _write(tmp_path / "grades.csv", "model,item,ok,secs\nA,1,1,2.5\nA,2,0,3\nB,1,yes,1\n")
    res = ingest_paths(
        [csv_path], db=tmp_db, fmt="csv", mapping="run_id=model,task_id=item,passed=ok,latency_s=secs,benchmark=mini"
    )
    assert res[0].outcome == "ingested", res[0].error
    assert rows(tmp_db, "SELECT run_id, task_id, passed, latency_s FROM attempts ORDER BY 1, 2") == [
        ("A", "1", True, 2.5),
        ("A", "2", False, 3.0),
        ("B", "1", True, 1.0),
    ]
    yaml_path = _write(tmp_path / "m.yaml", "benchmark: mini2\ncolumns: {run_id: model, task_id: item, score: ok}\n")
    csv2 = _write(tmp_path / "g2.csv", "model,item,ok\nC,1,0.5\n")
    res = ingest_paths([csv2], db=tmp_db, fmt="csv", mapping=str(yaml_path))
    assert res[0].outcome == "ingested", res[0].error


def test_native_column_names_are_detected(tmp_db: Path, tmp_path: Path) -> None:
    csv_path = _write(tmp_path / "mybench.csv", "run_id,task_id,score,cost_usd\nr1,t1,1,0.1\nr1,t2,0,0.2\n")
    res = ingest_paths([csv_path], db=tmp_db)
    assert res[0].outcome == "ingested" and res[0].format == "csv"
    assert rows(tmp_db, "SELECT benchmark FROM runs") == [("mybench",)]


@pytest.mark.parametrize(
    "content, mapping, expected",
    [
        ("submission,date,instance_id\nx,2024-01-01,i1\n", "swebench-verified", "has no column 'resolved'"),
        ("model,item,ok\nA,1,1\n", "run_id=model,task_id=nope,passed=ok,benchmark=b", "has no column 'nope'"),
        ("model,item,ok\nA,1,maybe\n", "run_id=model,task_id=item,passed=ok,benchmark=b", "not a yes/no value"),
        ("model,item,ok\nA,1,1,9\n", "run_id=model,task_id=item,passed=ok,benchmark=b", "4 cells"),
        ("model,item,ok\nA,1,1\n", "run_id=model,passed=ok,benchmark=b", "must map task_id"),
        ("model,item,ok\nA,1,1\n", "no-such-mapping", "unknown mapping"),
    ],
)
def test_malformed_csv_is_rejected_and_writes_nothing(
    fixture_db: Path, tmp_path: Path, content: str, mapping: str, expected: str
) -> None:
    before = counts(fixture_db)
    path = _write(tmp_path / "bad.csv", content)
    res = ingest_paths([path], db=fixture_db, fmt="csv", mapping=mapping)
    assert res[0].outcome == "failed"
    assert expected in str(res[0].error)
    assert str(path) in str(res[0].error) or "--mapping" in str(res[0].error)
    assert counts(fixture_db) == before


def test_missing_companion_is_an_error(tmp_db: Path, tmp_path: Path) -> None:
    src = shared_data("swebench_verified", "instance_results.csv")
    path = tmp_path / "instance_results.csv"
    path.write_text("\n".join(src.read_text().splitlines()[:5]) + "\n")
    res = ingest_paths([path], db=tmp_db, fmt="csv", mapping="swebench-verified")
    assert res[0].outcome == "failed" and "submissions.csv" in str(res[0].error)
    assert counts(tmp_db)["runs"] == 0

"""Rule findings at ingest when the benchmark's tool graph is a file in the graphs folder, not a stored column:
ingest decides from what it knows which files need labelling, and must not skip these."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import orjson
import pytest

from ingest.pipeline import ingest_paths


def _log(run_id: str, *, define: bool) -> bytes:
    records = [
        {"record": "benchmark", "benchmark": "gb", "scoring": "binary"},
        {"record": "task", "benchmark": "gb", "task_id": "t1"},
    ]
    records = records if define else []
    records.append({"record": "run", "run_id": run_id, "benchmark": "gb", "agent": "a"})
    records.append(
        {
            "record": "attempt",
            "run_id": run_id,
            "task_id": "t1",
            "sample": 0,
            "score": 0,
            "steps": [{"round": 1, "kind": "tool_call", "tool": "calculator", "args": {"x": 1}, "result": "2"}],
        }
    )
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _rule_codes(db: Path) -> list[tuple[str, str]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "SELECT a.run_id, e.code FROM error_labels e JOIN attempts a USING (attempt_id) "
            "WHERE e.source = 'rule' ORDER BY ALL"
        ).fetchall()


@pytest.mark.parametrize("with_file", [True, False])
def test_graph_file_labels_at_ingest_and_none_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_file: bool
) -> None:
    graphs = tmp_path / "graphs"
    graphs.mkdir()
    monkeypatch.setenv("RUNLENS_TOOL_GRAPHS", str(graphs))
    if with_file:
        (graphs / "gb.json").write_text(json.dumps({"calculator": ["search"]}))
    (tmp_path / "a.jsonl").write_bytes(_log("r1", define=True))
    (tmp_path / "b.jsonl").write_bytes(_log("r2", define=False))  # its benchmark is known from the first file
    db = tmp_path / "db.duckdb"
    assert [r.outcome for r in ingest_paths([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], db=db, jobs=1)] == [
        "ingested",
        "ingested",
    ]
    codes = _rule_codes(db)
    if with_file:
        assert {run for run, _ in codes} == {"r1", "r2"} and ("r1", "DE") in codes
    else:
        assert codes == []


_FRESH = """
import json, sys
from pathlib import Path
from ingest.pipeline import ingest_paths
tmp = Path(sys.argv[1])
files = [tmp / "a.jsonl", tmp / "b.jsonl"]
plain = [r.outcome for r in ingest_paths(files, db=tmp / "plain.duckdb", jobs=1)]
before = [m for m in ("pandas", "pyarrow.dataset") if m in sys.modules]
(tmp / "graphs" / "gb.json").write_text(json.dumps({"calculator": ["search"]}))
graph = [r.outcome for r in ingest_paths(files, db=tmp / "graph.duckdb", jobs=1)]
print(json.dumps([plain, before, graph, "pandas" in sys.modules]))
"""


def test_an_ingest_imports_pandas_and_pyarrow_dataset_only_for_what_uses_them(tmp_path: Path) -> None:
    """In a process that has not imported pandas (``python -m ingest``), an ingest without a tool graph leaves it and
    ``pyarrow.dataset`` unimported (DuckDB's and pyarrow's probes are answered "absent": ingest.lazy_imports); one
    whose benchmark has a graph imports pandas for the findings, which are then stored as in any process."""
    import os
    import subprocess
    import sys

    (tmp_path / "graphs").mkdir()
    (tmp_path / "a.jsonl").write_bytes(_log("r1", define=True))
    (tmp_path / "b.jsonl").write_bytes(_log("r2", define=False))
    env = {**os.environ, "RUNLENS_TOOL_GRAPHS": str(tmp_path / "graphs")}
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", _FRESH, str(tmp_path)], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    plain, imported_before, graph, pandas_after = json.loads(out.stdout.strip().splitlines()[-1])
    assert plain == graph == ["ingested", "ingested"]
    assert imported_before == [] and pandas_after
    assert _rule_codes(tmp_path / "plain.duckdb") == []
    codes = _rule_codes(tmp_path / "graph.duckdb")
    assert {run for run, _ in codes} == {"r1", "r2"} and ("r1", "DE") in codes

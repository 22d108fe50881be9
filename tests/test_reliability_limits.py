"""Limits: a 100 MB single line, JSON nested 10,000 deep, a 10,000-step trajectory and a 1 GB upload are each
refused cleanly (with a location) or handled, with the memory of the ingest process bounded.

Memory is the peak RSS of a fresh ``python -m ingest`` process (``VmHWM`` from ``/proc/self/status`` read at its
exit by a small wrapper), so nothing else in the test session inflates it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import store as rdb
from ingest import pipeline
from ingest.errors import IngestError
from ingest.jsonline import LONE_SURROGATE
from ingest.pipeline import MAX_FILE_BYTES, ingest_file, ingest_paths
from ingest.uploads import ingest_one, preview_file
from tests.conftest import FIXTURES, ROOT

PRELUDE = [
    {"record": "benchmark", "benchmark": "limits"},
    {"record": "task", "benchmark": "limits", "task_id": "t1"},
    {"record": "run", "run_id": "limits-run", "benchmark": "limits", "agent": "A"},
]
# Peak RSS of this process's own address space: VmHWM. (getrusage's ru_maxrss would not do: Linux carries the
# parent's peak across fork and exec, so a child of a large pytest process reports the parent's size.)
WRAPPER = """
import sys
from ingest.__main__ import main
code = main(sys.argv[1:])
hwm = [ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0]
print(f"MAXRSS_KB={hwm}", file=sys.stderr)
sys.exit(code)
"""


def _ingest_process(db: Path, path: Path, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """Run the ingest CLI on one file in a fresh process: (exit code, stderr, peak RSS in MB)."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "--no-progress", "--db", str(db), str(path)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
    )
    rss_kb = [int(line.split("=", 1)[1]) for line in done.stderr.splitlines() if line.startswith("MAXRSS_KB=")]
    assert rss_kb, done.stderr[-2000:]
    return done.returncode, done.stderr, rss_kb[0] / 1024


def _lines(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in [*PRELUDE, *records])


def _attempt_count(db: Path) -> int:
    with rdb.reader(db) as con:
        return int(con.execute("SELECT count(*) FROM attempts").fetchall()[0][0])


@pytest.mark.slow
def test_a_100_mb_line_is_refused_with_its_line_number_and_bounded_memory(tmp_path: Path, fixture_db: Path) -> None:
    path = tmp_path / "huge-line.jsonl"
    with path.open("wb") as fh:
        fh.write(_lines())
        fh.write(b'{"record": "attempt", "run_id": "limits-run", "task_id": "t1", "score": 1, "answer": "')
        chunk = b"x" * (1024 * 1024)
        for _ in range(100):
            fh.write(chunk)
        fh.write(b'"}\n')
    before = _attempt_count(fixture_db)
    code, err, rss_mb = _ingest_process(fixture_db, path)
    assert code == 2
    assert f"{path}:4: -: line of 104,857,6" in err and "exceeds the 67,108,864-byte limit" in err
    assert rss_mb < 700, rss_mb  # the file is read once (100 MB) and the long line never parsed
    assert _attempt_count(fixture_db) == before


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_nested_10000_deep_is_refused_cleanly(tmp_path: Path, fixture_db: Path) -> None:
    native = tmp_path / "deep.jsonl"
    native.write_bytes(
        _lines() + b'{"record": "attempt", "run_id": "limits-run", "task_id": "t1", "score": 1, '
        b'"judge": {"x": ' + _deep(10_000).encode() + b"}}\n"
    )
    [result] = ingest_paths([native], db=fixture_db)
    assert result.outcome == "failed"
    assert str(result.error.problems[0]).startswith(f"{native}:4: -: invalid JSON")
    messages = tmp_path / "gpt-4o-airline.json"  # a JSON document adapter (openai-messages)
    messages.write_text('[{"task_id": 1, "traj": ' + _deep(10_000) + "}]")
    [result] = ingest_paths([messages], db=fixture_db, fmt="openai-messages")
    assert result.outcome == "failed" and str(result.error).startswith(str(messages))
    inspect = tmp_path / "deep-inspect.json"
    inspect.write_text('{"version": 2, "status": "success", "eval": {"task": "x"}, "samples": ' + _deep(10_000) + "}")
    [result] = ingest_paths([inspect], db=fixture_db, fmt="inspect")
    assert result.outcome == "failed" and str(result.error).startswith(str(inspect))


def test_a_lone_surrogate_is_refused_at_its_place_in_every_json_format(tmp_path: Path, fixture_db: Path) -> None:
    """``"\\ud800"`` is valid JSON syntax that the stdlib reads into a string no store can hold."""
    native = tmp_path / "surrogate.jsonl"
    native.write_bytes(
        _lines() + b'{"record": "attempt", "run_id": "limits-run", "task_id": "t1", "score": 1, '
        b'"answer": "ok \\ud800"}\n'
    )
    [result] = ingest_paths([native], db=fixture_db)
    assert result.outcome == "failed"
    assert str(result.error.problems[0]) == f"{native}:4: -: {LONE_SURROGATE}"
    messages = tmp_path / "gpt-4o-airline.json"
    messages.write_text(
        '[{"task_id": 1, "reward": 1, "traj": [\n {"role": "user", "content": "\\ud83d\\ude00"},\n'
        ' {"role": "assistant", "content": "\\udc00"}]}]'
    )
    [result] = ingest_paths([messages], db=fixture_db, fmt="openai-messages")
    assert result.outcome == "failed" and str(result.error.problems[0]) == f"{messages}:3: -: {LONE_SURROGATE}"
    fine = tmp_path / "emoji.jsonl"  # a surrogate pair is one character, and is kept
    fine.write_bytes(
        _lines() + b'{"record": "attempt", "run_id": "limits-run", "task_id": "t1", "sample": 7, '
        b'"score": 1, "answer": "\\ud83d\\ude00"}\n'
    )
    [result] = ingest_paths([fine], db=fixture_db)
    assert result.outcome == "ingested", result.error
    with rdb.reader(fixture_db) as con:
        assert con.execute("SELECT answer FROM attempts WHERE sample = 7 AND run_id = 'limits-run'").fetchall() == [
            ("\U0001f600",)
        ]


@pytest.mark.slow
def test_a_10000_step_trajectory_is_ingested_and_drilled_into(tmp_path: Path, tmp_db: Path) -> None:
    steps = [
        {"round": i + 1, "kind": "tool_call", "tool": f"tool{i % 7}", "args": {"i": i}, "result": "r" * (i % 300)}
        for i in range(10_000)
    ]
    path = tmp_path / "long-trajectory.jsonl"
    path.write_bytes(_lines({"record": "attempt", "run_id": "limits-run", "task_id": "t1", "score": 1, "steps": steps}))
    code, err, rss_mb = _ingest_process(tmp_db, path)
    assert code == 0, err
    assert rss_mb < 600, rss_mb
    from analytics import trajectory as tr

    with rdb.reader(tmp_db) as con:
        detail = tr.attempt_detail(con, run_id="limits-run", task_id="t1", sample=0)
        assert detail is not None and detail["n_steps"] == 10_000
        page = tr.steps_page(con, attempt_id=int(detail["attempt_id"]), offset=9_975, limit=25)
    assert list(page["step"]) == list(range(9_975, 10_000))
    from streamlit.testing.v1 import AppTest

    os.environ["RUNLENS_DB"] = str(tmp_db)
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        at.query_params.update({"run": "limits-run", "task": "t1", "sample": "0"})
        at.run()
        at.switch_page("views/drilldown.py")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    finally:
        del os.environ["RUNLENS_DB"]


def test_a_1_gb_upload_is_refused_without_being_read(
    tmp_path: Path, fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:  # sparse: 1 GiB of apparent size, no disk blocks
        fh.truncate(1024**3)
    assert MAX_FILE_BYTES is None  # no limit on a file's size by default (what one record holds is bounded)
    limit = 512 * 1024**2
    monkeypatch.setattr(pipeline, "MAX_FILE_BYTES", limit)  # a limit a deployment sets, in this process
    code, err, rss_mb = _ingest_process(fixture_db, path, env={"RUNLENS_MAX_FILE_BYTES": str(limit)})
    assert code == 2 and f"{path}:1: -: file of 1,073,741,824 bytes exceeds the" in err
    assert rss_mb < 400, rss_mb  # refused on its size alone (a read would cost 1 GB)
    result = ingest_one(path, db=fixture_db)  # the upload page's path
    assert result.outcome == "failed" and "exceeds the" in str(result.error)
    with rdb.writer(fixture_db, publish_snapshot=False) as con, pytest.raises(IngestError, match="exceeds"):
        ingest_file(con, path)
    with rdb.reader(fixture_db) as con:  # the upload page's preview refuses it the same way
        preview = preview_file(con, path)
    assert (
        preview.outcome == "invalid"
        and "exceeds the" in preview.errors[0]
        and preview.errors[0].startswith(f"{path}:1: -:")
    )
    assert _attempt_count(fixture_db) == 6 and (FIXTURES / "good.jsonl").exists()


def test_a_file_over_half_the_free_memory_is_refused_by_a_reader_that_holds_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes((FIXTURES / "good.jsonl").read_bytes())
    assert pipeline.read_input(path)  # no size limit by default
    size = path.stat().st_size
    monkeypatch.setattr(pipeline, "_memory_available", lambda: 2 * size - 2)
    with pytest.raises(IngestError, match="over half the memory available"):
        pipeline.read_input(path)

"""Native ingest: good files, every kind of bad line, idempotency, normalisation, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ingest.pipeline import ingest_paths
from store import reader, writer
from tests.conftest import FIXTURES, ROOT

TABLES = (
    "benchmarks",
    "tasks",
    "runs",
    "attempts",
    "steps",
    "texts",
    "error_labels",
    "attempt_metrics",
    "ratings",
    "ingest_log",
)


def table_counts(db: Path) -> dict[str, int]:
    with writer(db, publish_snapshot=False) as con:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}


def test_good_file_ingests_every_record(fixture_db: Path) -> None:
    counts = table_counts(fixture_db)
    assert counts["benchmarks"] == 1 and counts["tasks"] == 2 and counts["runs"] == 2
    assert counts["attempts"] == 6 and counts["steps"] == 8
    assert counts["ingest_log"] == 1
    with reader(fixture_db) as con:
        sources = dict(con.execute("SELECT source, count(*) FROM error_labels GROUP BY 1").fetchall())
    # two labels from the log; the benchmark declares a tool graph, so ingest adds rule findings too
    assert sources["label"] == 2 and sources["rule"] >= 1


def test_reingest_adds_nothing_and_says_so(fixture_db: Path) -> None:
    before = table_counts(fixture_db)
    results = ingest_paths([FIXTURES / "good.jsonl"], db=fixture_db)
    assert [r.outcome for r in results] == ["duplicate"]
    assert table_counts(fixture_db) == before


def test_unknown_fields_are_kept_in_extra(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        extra = con.execute("SELECT extra FROM runs WHERE run_id = 'mini-a-v1'").fetchall()[0][0]
    assert json.loads(extra) == {"team": "blue"}


def test_cost_is_computed_from_tokens_and_prices(fixture_db: Path) -> None:
    with reader(fixture_db) as con:
        rows = con.execute(
            "SELECT sample, cost_usd, is_cost_computed FROM attempts "
            "WHERE run_id = 'mini-a-v1' AND task_id = 'T1' ORDER BY sample"
        ).fetchall()
    # 1000 input tokens at $1/Mtok + 200 output tokens at $4/Mtok
    assert rows[0][1] == pytest.approx((1000 * 1.0 + 200 * 4.0) / 1e6) and rows[0][2] is True
    with reader(fixture_db) as con:
        given = con.execute(
            "SELECT cost_usd, is_cost_computed FROM attempts WHERE run_id = 'mini-a-v1' "
            "AND task_id = 'T2' AND sample = 0"
        ).fetchall()[0]
    assert given == (0.01, False)


def test_graded_scores_map_one_to_five_onto_zero_to_one(tmp_db: Path) -> None:
    ingest_paths([FIXTURES / "graded.jsonl"], db=tmp_db)
    with reader(tmp_db) as con:
        rows = con.execute("SELECT raw_score, score, passed, cost_usd FROM attempts ORDER BY sample").fetchall()
    assert rows[0][:3] == (4.0, 0.75, True)  # graded default pass threshold 0.5
    assert rows[0][3] == pytest.approx(2.0 + 4.0)  # 1M in at $2, 0.5M out at $8
    assert rows[1][:3] == (1.0, 0.0, False)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bad_json.jsonl", ["bad_json.jsonl:4: -: invalid JSON"]),
        (
            "wrong_type.jsonl",
            [
                "wrong_type.jsonl:4: sample: expected a number, got string",
                "wrong_type.jsonl:5: input_tokens: expected a number, got string",
            ],
        ),
        (
            "missing_field.jsonl",
            [
                "missing_field.jsonl:4: task_id: missing required field",
                "missing_field.jsonl:5: agent: missing required field",
            ],
        ),
        ("score_out_of_range.jsonl", ["score_out_of_range.jsonl:4: score: 1.5 is outside [0.0, 1.0]"]),
        ("unknown_run.jsonl", ["unknown_run.jsonl:3: run_id: unknown run 'nope'"]),
        ("duplicate_attempt.jsonl", ["duplicate_attempt.jsonl:5: sample: duplicate attempt"]),
        ("non_utf8.jsonl", ["non_utf8.jsonl:4: -: not valid UTF-8"]),
        ("empty.jsonl", ["empty.jsonl:1: -: empty file"]),
    ],
)
def test_bad_file_reports_every_problem_and_writes_nothing(fixture_db: Path, name: str, expected: list[str]) -> None:
    before = table_counts(fixture_db)
    [result] = ingest_paths([FIXTURES / name], db=fixture_db)
    assert result.outcome == "failed"
    lines = [str(p) for p in result.error.problems]
    for want in expected:
        assert any(want in line for line in lines), (want, lines)
    assert all(line.startswith(str(FIXTURES / name) + ":") for line in lines)
    assert table_counts(fixture_db) == before


def test_cli_exit_codes_and_messages(tmp_db: Path) -> None:
    cmd = [sys.executable, "-m", "ingest", "--db", str(tmp_db)]
    bad = subprocess.run(
        [*cmd, str(FIXTURES / "score_out_of_range.jsonl")], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert bad.returncode == 2
    assert "score_out_of_range.jsonl:4: score: 1.5 is outside" in bad.stderr
    good = subprocess.run([*cmd, str(FIXTURES / "good.jsonl")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert good.returncode == 0 and "6 attempts" in good.stderr
    again = subprocess.run([*cmd, str(FIXTURES / "good.jsonl")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert again.returncode == 0 and "already ingested" in again.stderr


def test_folders_are_walked_and_a_bad_file_does_not_block_good_ones(tmp_path: Path, tmp_db: Path) -> None:
    folder = tmp_path / "logs" / "nested"
    folder.mkdir(parents=True)
    (folder / "good.jsonl").write_bytes((FIXTURES / "good.jsonl").read_bytes())
    (folder / "bad.jsonl").write_bytes((FIXTURES / "bad_json.jsonl").read_bytes())
    (folder / "notes.txt").write_text("not a log")
    results = {Path(r.path).name: r.outcome for r in ingest_paths([tmp_path / "logs"], db=tmp_db)}
    assert results == {"bad.jsonl": "failed", "good.jsonl": "ingested"}


def test_forward_references_and_conflicting_definitions_are_errors(tmp_path: Path, fixture_db: Path) -> None:
    conflicting = tmp_path / "conflict.jsonl"
    conflicting.write_text(
        json.dumps({"record": "run", "run_id": "mini-a-v1", "benchmark": "mini-bench", "agent": "Someone else"}) + "\n"
    )
    [result] = ingest_paths([conflicting], db=fixture_db)
    assert result.outcome == "failed"
    assert "already defined with different agent" in str(result.error)


def test_identical_definitions_in_a_second_file_are_accepted(tmp_path: Path, fixture_db: Path) -> None:
    lines = (FIXTURES / "good.jsonl").read_text().splitlines()
    more = [ln for ln in lines if '"record":"attempt"' not in ln]
    more.append(json.dumps({"record": "attempt", "run_id": "mini-a-v1", "task_id": "T1", "sample": 2, "score": 1}))
    path = tmp_path / "more.jsonl"
    path.write_text("\n".join(more) + "\n")
    [result] = ingest_paths([path], db=fixture_db)
    assert result.outcome == "ingested" and result.n_attempts == 1 and result.n_runs == 0


def test_long_results_are_stored_once(tmp_path: Path, tmp_db: Path) -> None:
    big = "x" * 5000
    lines = [ln for ln in (FIXTURES / "good.jsonl").read_text().splitlines() if '"record":"attempt"' not in ln]
    for sample in range(3):
        lines.append(
            json.dumps(
                {
                    "record": "attempt",
                    "run_id": "mini-a-v1",
                    "task_id": "T1",
                    "sample": sample,
                    "score": 1,
                    "steps": [{"tool": "search", "result": big}],
                }
            )
        )
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ingest_paths([path], db=tmp_db)
    with reader(tmp_db) as con:
        assert con.execute("SELECT count(*) FROM texts").fetchall()[0][0] == 1
        results = con.execute("SELECT DISTINCT result FROM v_steps").fetchall()
    assert results == [(big,)]


def _big_log(path: Path, n_attempts: int) -> None:
    rng = np.random.default_rng(7)
    with path.open("w") as fh:
        fh.write(json.dumps({"record": "benchmark", "benchmark": "crash"}) + "\n")
        for t in range(100):
            fh.write(json.dumps({"record": "task", "benchmark": "crash", "task_id": f"t{t}"}) + "\n")
        fh.write(json.dumps({"record": "run", "run_id": "crash-run", "benchmark": "crash", "agent": "A"}) + "\n")
        for i in range(n_attempts):
            steps = [
                {"round": r, "tool": "search", "args": {"q": f"q{r}"}, "result": "r" * int(rng.integers(10, 400))}
                for r in range(5)
            ]
            fh.write(
                json.dumps(
                    {
                        "record": "attempt",
                        "run_id": "crash-run",
                        "task_id": f"t{i % 100}",
                        "sample": i // 100,
                        "score": int(rng.integers(0, 2)),
                        "steps": steps,
                    }
                )
                + "\n"
            )


def test_killed_ingest_leaves_a_consistent_database(tmp_path: Path, tmp_db: Path) -> None:
    log = tmp_path / "big.jsonl"
    _big_log(log, 20_000)
    rng = np.random.default_rng(11)
    cmd = [sys.executable, "-m", "ingest", "--no-progress", "--db", str(tmp_db), str(log)]
    for _ in range(3):
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(float(rng.uniform(0.5, 4.0)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        con = duckdb.connect(str(tmp_db))
        try:
            n = con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] if _has_attempts(con) else 0
        finally:
            con.close()
        assert n in (0, 20_000)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert table_counts(tmp_db)["attempts"] == 20_000


def _has_attempts(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(
        con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'attempts'").fetchall()[0][0]
    )


def test_environment_variable_selects_the_database(tmp_db: Path) -> None:
    env = {**os.environ, "RUNLENS_DB": str(tmp_db)}
    out = subprocess.run(
        [sys.executable, "-m", "ingest", str(FIXTURES / "good.jsonl")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and str(tmp_db) in out.stderr


def _two_benchmarks(tmp_path: Path, db: Path) -> None:
    """Two benchmarks of two tasks each, with one run each, ingested into ``db``."""
    lines = []
    for bench in ("bench-a", "bench-b"):
        lines.append({"record": "benchmark", "benchmark": bench, "scoring": "binary"})
        lines += [{"record": "task", "benchmark": bench, "task_id": t, "level": "L1"} for t in ("T1", "T2")]
        lines.append({"record": "run", "run_id": f"{bench}-v1", "benchmark": bench, "agent": "A"})
        lines.append({"record": "attempt", "run_id": f"{bench}-v1", "task_id": "T1", "sample": 0, "score": 1})
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]


def test_stored_tasks_are_read_only_for_the_benchmarks_a_file_names(tmp_path: Path, tmp_db: Path) -> None:
    from ingest.known import load_known

    _two_benchmarks(tmp_path, tmp_db)
    with reader(tmp_db) as con:
        known = load_known(con)
        assert known.tasks == set() and known.loaded_benchmarks == set()
        known.ensure_tasks("bench-a")
        assert known.tasks == {("bench-a", "T1"), ("bench-a", "T2")}
        worker = known.for_worker()  # a worker has no database: it gets every stored task
    assert worker.tasks == {(b, t) for b in ("bench-a", "bench-b") for t in ("T1", "T2")}


def test_a_new_run_may_use_stored_tasks_and_a_changed_stored_task_is_refused(tmp_path: Path, tmp_db: Path) -> None:
    _two_benchmarks(tmp_path, tmp_db)
    new_run = tmp_path / "new-run.jsonl"
    new_run.write_text(
        json.dumps({"record": "run", "run_id": "bench-b-v2", "benchmark": "bench-b", "agent": "A"})
        + "\n"
        + json.dumps({"record": "attempt", "run_id": "bench-b-v2", "task_id": "T2", "sample": 0, "score": 0})
        + "\n"
    )
    unknown = tmp_path / "unknown-task.jsonl"
    unknown.write_text(
        json.dumps({"record": "run", "run_id": "bench-b-v3", "benchmark": "bench-b", "agent": "A"})
        + "\n"
        + json.dumps({"record": "attempt", "run_id": "bench-b-v3", "task_id": "T9", "sample": 0, "score": 0})
        + "\n"
    )
    changed = tmp_path / "changed-task.jsonl"
    changed.write_text(json.dumps({"record": "task", "benchmark": "bench-a", "task_id": "T2", "level": "L3"}) + "\n")
    ok, bad, conflict = ingest_paths([new_run, unknown, changed], db=tmp_db, jobs=1)
    assert ok.outcome == "ingested" and ok.n_attempts == 1
    assert bad.outcome == "failed" and "unknown task 'T9' of benchmark 'bench-b'" in str(bad.error)
    assert conflict.outcome == "failed" and "already defined with different level" in str(conflict.error)

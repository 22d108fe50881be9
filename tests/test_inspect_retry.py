"""``inspect eval-retry`` outside an eval set, with Inspect's own CLI (the test-only ``.venv-inspect``): the retry
is a new log (new ``eval_id`` and ``run_id``, no ``eval_set_id``) that keeps the errored log's ``task_id``, which is
how Inspect relates a retry to its original (every other eval, also of the same task, gets a new one). The errored
run reads as superseded by its retry: not on the leaderboard, named in run health, the retry ranked in its place (as
an eval set's retry already was); an independent eval of the same task is linked to neither.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb

from analytics.runs import incomplete_table, load_runs, run_health
from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.test_inspect_real import INSPECT_PYTHON, ROOT


def _inspect(*args: str, cwd: Path) -> None:
    env = {**os.environ, "RETRIED_MARK": str(cwd / "errored_once"), "INSPECT_DISPLAY": "none"}
    proc = subprocess.run(
        [str(INSPECT_PYTHON), "-m", "inspect_ai", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 or "failed the first time" in proc.stdout + proc.stderr, proc.stderr[-3000:]


def _headers(*paths: Path) -> list[dict[str, str | None]]:
    """What Inspect's ``read_eval_log`` says of each log: status and ids."""
    code = (
        "import json, sys; from inspect_ai.log import read_eval_log; ls = [read_eval_log(p, header_only=True) for p"
        " in sys.argv[1:]]; print(json.dumps([{'status': l.status, 'eval_id': l.eval.eval_id, 'run_id':"
        " l.eval.run_id, 'task_id': l.eval.task_id, 'eval_set_id': l.eval.eval_set_id} for l in ls]))"
    )
    out = subprocess.run(
        [str(INSPECT_PYTHON), "-c", code, *map(str, paths)], capture_output=True, text=True, timeout=120
    )
    return list(json.loads(out.stdout))


def test_a_plain_eval_retry_supersedes_the_errored_run(tmp_path: Path) -> None:
    task_file = tmp_path / "retried.py"
    task_file.write_text((ROOT / "tests" / "inspect_real" / "retried.py").read_text())
    logs = tmp_path / "logs"
    _inspect(
        "eval", "retried.py", "--model", "mockllm/model", "--log-dir", str(logs), "--max-samples", "1", cwd=tmp_path
    )
    (errored_log,) = logs.glob("*.eval")
    _inspect("eval-retry", str(errored_log), "--log-dir", str(logs), "--max-samples", "1", cwd=tmp_path)
    (retry_log,) = set(logs.glob("*.eval")) - {errored_log}
    fresh_dir = tmp_path / "fresh"  # the same task evaluated again, not retried: a run of its own, superseding none
    _inspect("eval", "retried.py", "--model", "mockllm/model", "--log-dir", str(fresh_dir), cwd=tmp_path)
    (fresh_log,) = fresh_dir.glob("*.eval")
    errored, retry, fresh = _headers(errored_log, retry_log, fresh_log)
    assert (errored["status"], retry["status"]) == ("error", "success")
    assert retry["task_id"] == errored["task_id"] and retry["eval_set_id"] is None is errored["eval_set_id"]
    assert retry["eval_id"] != errored["eval_id"] and retry["run_id"] != errored["run_id"]
    assert fresh["status"] == "success" and fresh["task_id"] != errored["task_id"]
    first, second, third = (f"retried-{log['eval_id']}" for log in (errored, retry, fresh))

    db = tmp_path / "r.duckdb"
    res = ingest_paths([retry_log, errored_log, fresh_log], db=db)  # the retry first: order does not matter
    assert [r.outcome for r in res] == ["ingested"] * 3, [str(r.error) for r in res]
    con = duckdb.connect(str(db), read_only=True)
    try:
        health = run_health(con, benchmark="retried").set_index("run_id")
        board = load_runs(con, RunFilter(benchmark="retried"))  # the leaderboard's runs
    finally:
        con.close()
    assert sorted(zip(board["run_id"], board["is_complete"], strict=True)) == sorted([(second, True), (third, True)])
    assert health["superseded_by"].to_dict() == {first: second, second: None, third: None}
    assert (bool(health.loc[first, "is_complete"]), bool(health.loc[second, "is_complete"])) == (False, True)
    shown = incomplete_table(health.reset_index())
    assert list(shown["Log status"]) == [f"error (superseded by {second}: not ranked)"]


def test_a_run_retried_twice_names_the_last_retry(tmp_path: Path) -> None:
    """An eval set retries a task up to ``retry_attempts`` times (10 by default), each retry keeping the task id:
    the first errored run is superseded by the retry that stands (the latest), not by an errored one between them
    (the old rule named the smallest later run id: here the second, itself superseded)."""
    records: list[dict[str, object]] = [
        {"record": "benchmark", "benchmark": "chain", "scoring": "binary"},
        {"record": "task", "benchmark": "chain", "task_id": "T1"},
    ]
    for run_id, created, status in (
        ("b-first", "01", "error"),
        ("a-second", "02", "error"),
        ("c-final", "03", "success"),
    ):
        extra = {"inspect_task_id": "task-1", "inspect_created": f"2026-11-27T12:00:{created}+00:00"}
        records.append(
            {"record": "run", "run_id": run_id, "benchmark": "chain", "agent": "m", "status": status, **extra}
        )
        records.append({"record": "attempt", "run_id": run_id, "task_id": "T1", "sample": 0, "score": 1})
    log = tmp_path / "chain.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp_path / "c.duckdb"
    res = ingest_paths([log], db=db)
    assert res[0].outcome == "ingested", res[0].error
    con = duckdb.connect(str(db), read_only=True)
    try:
        health = run_health(con, benchmark="chain").set_index("run_id")
        ranked = list(load_runs(con, RunFilter(benchmark="chain"))["run_id"])
    finally:
        con.close()
    assert health["superseded_by"].to_dict() == {"a-second": "c-final", "b-first": "c-final", "c-final": None}
    assert ranked == ["c-final"]

"""Runlens against the real tool: logs written by inspect-ai itself, compared with what Inspect reads from them.

tests/inspect_real/generate.py runs in the test-only virtualenv ``.venv-inspect`` (requirements-inspect.txt,
installed by ``run.sh test``; its dependencies need other versions than the shared pins) and writes, once per
session: a multiple-choice task with epochs=3, an agentic task with parallel tool calls, a model-graded task,
and a ``fail_on_error=False`` task with a ``message_limit``, each as ``.eval`` (zstd members) and ``.json``, plus
``reference.json`` from ``read_eval_log``, ``evals_df``, ``samples_df`` and ``events_df``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analytics.plaintext import md_plain
from ingest.pipeline import ingest_paths
from tests.adapter_helpers import rows
from tests.apptest import open_page

ROOT = Path(__file__).resolve().parents[1]
INSPECT_PYTHON = Path(os.environ.get("RUNLENS_INSPECT_PYTHON", ROOT / ".venv-inspect" / "bin" / "python"))
LETTERS = {"C": 1.0, "I": 0.0}


@pytest.fixture(scope="session")
def real_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """(a database holding every generated log, Inspect's reference for each log)."""
    if not INSPECT_PYTHON.exists():
        pytest.fail(f"{INSPECT_PYTHON} not found: `bash run.sh test` installs requirements-inspect.txt there")
    out = tmp_path_factory.mktemp("inspect_real")
    proc = subprocess.run(
        [str(INSPECT_PYTHON), str(ROOT / "tests" / "inspect_real" / "generate.py"), str(out / "logs")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    refs = json.loads((out / "logs" / "reference.json").read_text())
    db = out / "real.duckdb"
    results = ingest_paths([Path(r["path"]) for r in refs], db=db)
    assert [r.outcome for r in results] == ["ingested"] * len(refs), [str(r.error) for r in results]
    return db, refs


def _ids(refs: list[dict[str, Any]]) -> list[str]:
    return [f"{r['task']}.{Path(r['path']).suffix[1:]}" for r in refs]


def _attempts(db: Path, ref: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    run_id = f"{ref['task']}-{ref['eval_id']}"
    got = rows(
        db,
        "SELECT attempt_id, task_id, sample, score, status, input_tokens, output_tokens, CAST(extra AS VARCHAR) "
        "FROM attempts WHERE run_id = ?",
        [run_id],
    )
    out = {}
    for attempt_id, task_id, sample, score, status, n_in, n_out, extra in got:
        tools = rows(
            db, "SELECT tool FROM steps WHERE attempt_id = ? AND kind = 'tool_call' ORDER BY step", [attempt_id]
        )
        out[(task_id, sample + 1)] = {
            "score": score,
            "status": status,
            "tokens": [n_in, n_out],
            "extra": json.loads(extra or "{}"),
            "tools": [t for (t,) in tools],
        }
    return out


def test_every_format_and_task_generated(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    _, refs = real_logs
    assert sorted(_ids(refs)) == sorted(
        f"{t}.{f}" for t in ("mc", "agent", "graded", "limits") for f in ("eval", "json")
    )


def test_attempts_scores_tokens_tools_match_inspect(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    db, refs = real_logs
    for ref in refs:
        got = _attempts(db, ref)
        assert len(got) == len(ref["samples"]) == ref["total_samples"], ref["path"]
        for sample in ref["samples"]:
            mine = got[(sample["id"], sample["epoch"])]
            where = f"{ref['path']} {sample['id']}/{sample['epoch']}"
            value = next(iter(sample["scores"].values()), None)
            if value is not None:
                assert mine["score"] == LETTERS[value], where
            assert mine["tokens"] == sample["model_usage"]["mockllm/model"], where
            assert mine["tools"] == sample["tools"], where


def test_accuracy_matches_inspect_when_errors_are_left_out(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    db, refs = real_logs
    for ref in refs:
        got = _attempts(db, ref).values()
        kept = [a["score"] for a in got if a["status"] != "crashed"]
        assert sum(kept) / len(kept) == pytest.approx(ref["headline"]), ref["path"]
        assert len(kept) == ref["completed_samples"], ref["path"]


def test_grader_tokens_apart_from_the_agent(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    db, refs = real_logs
    graded = [r for r in refs if r["task"] == "graded"]
    assert len(graded) == 2
    for ref in graded:
        got = _attempts(db, ref)
        for sample in ref["samples"]:
            mine = got[(sample["id"], sample["epoch"])]
            grading = mine["extra"]["grading"]
            assert [grading["input_tokens"], grading["output_tokens"]] == sample["model_usage"]["mockllm/grader"]
            assert grading["model_calls"][0]["content"].startswith("GRADE:")
            steps = rows(
                db,
                "SELECT count(*) FROM steps s JOIN attempts a USING (attempt_id) "
                "WHERE a.run_id = ? AND a.task_id = ? AND s.content LIKE 'GRADE:%'",
                [f"{ref['task']}-{ref['eval_id']}", sample["id"]],
            )
            assert steps == [(0,)]


def test_limits_and_errors_match_inspect(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    db, refs = real_logs
    limited = [r for r in refs if r["task"] == "limits"]
    assert len(limited) == 2
    for ref in limited:
        got = _attempts(db, ref)
        statuses = []
        for sample in ref["samples"]:
            mine = got[(sample["id"], sample["epoch"])]
            if sample["limit"]:
                assert mine["status"] == "timeout" and mine["extra"]["limit"]["type"] == sample["limit"]["type"]
                assert mine["extra"]["limit"]["type"] == sample["sdf_limit"]
            elif sample["error"]:
                assert mine["status"] == "crashed" and mine["extra"]["error"] == sample["error"] == sample["sdf_error"]
                assert mine["score"] == 0.0  # counted as a failure by default
            else:
                assert mine["status"] == "completed"
            statuses.append(mine["status"])
        assert sorted(statuses) == ["completed", "crashed", "timeout"]
        status = rows(db, "SELECT status FROM runs WHERE run_id = ?", [f"{ref['task']}-{ref['eval_id']}"])
        assert status == [(ref["status"],)]


def test_the_same_eval_converted_adds_nothing(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    """``inspect log convert`` of every .eval log: the .json twin is the same content, reported as present."""
    db, refs = real_logs
    converted = sorted((Path(refs[0]["path"]).parents[1] / "converted").glob("*.json"))
    originals = {Path(r["path"]).stem: r["path"] for r in refs if r["path"].endswith(".eval")}
    assert len(converted) == len(originals) == 4
    before = rows(db, "SELECT count(*) FROM attempts")
    results = ingest_paths(converted, db=db)
    assert [r.outcome for r in results] == ["duplicate"] * 4, [str(r.error) for r in results]
    assert all(r.duplicate_of == originals[Path(r.path).stem] for r in results)
    assert rows(db, "SELECT count(*) FROM attempts") == before


def test_drilldown_shows_the_limit_the_error_and_the_grader(
    real_logs: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, refs = real_logs
    limits = next(r for r in refs if r["task"] == "limits" and r["path"].endswith(".eval"))
    run_id = f"limits-{limits['eval_id']}"
    limited = next(s for s in limits["samples"] if s["limit"])
    at = open_page("views/drilldown.py", db, monkeypatch, run=run_id, task=limited["id"])
    status = {m.label: m.value for m in at.metric}["Status"]
    # shown through the plain-text helper (the value comes from the log)
    assert status == md_plain(f"timeout: {limited['limit']['type']} limit ({limited['limit']['limit']:g})")
    errored = next(s for s in limits["samples"] if s["error"])
    at = open_page("views/drilldown.py", db, monkeypatch, run=run_id, task=errored["id"])
    assert f"Error: {errored['error']}" in [t.value for t in at.text]
    graded = next(r for r in refs if r["task"] == "graded")
    at = open_page("views/drilldown.py", db, monkeypatch, run=f"graded-{graded['eval_id']}", task="g0")
    grader_in, grader_out = graded["samples"][0]["model_usage"]["mockllm/grader"]
    assert any(f"{grader_in:,} / {grader_out:,} tokens" in c.value for c in at.caption)


def test_run_health_states_both_treatments_of_errors(real_logs: tuple[Path, list[dict[str, Any]]]) -> None:
    import duckdb

    from analytics.runs import run_health

    db, refs = real_logs
    con = duckdb.connect(str(db), read_only=True)
    try:
        limits = run_health(con, benchmark="limits").set_index("run_id")
        mc = run_health(con, benchmark="mc")
    finally:
        con.close()
    assert mc["is_complete"].all() and len(mc) == 2
    for ref in (r for r in refs if r["task"] == "limits"):
        row = limits.loc[f"limits-{ref['eval_id']}"]
        assert not row["is_complete"] and row["log_status"] == ref["status"]
        assert (row["completed_samples"], row["total_samples"]) == (ref["completed_samples"], ref["total_samples"])
        assert (row["n_errored"], row["n_limited"]) == (1, 1)
        assert row["pass_rate_errors_excluded"] == pytest.approx(ref["headline"])  # Inspect's accuracy
        passed = sum(1 for s in ref["samples"] if LETTERS.get(next(iter(s["scores"].values()), "I")) == 1.0)
        assert row["pass_rate_errors_failed"] == pytest.approx(passed / ref["total_samples"])


def test_leaderboard_names_incomplete_runs(
    real_logs: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, refs = real_logs
    at = open_page("views/leaderboard.py", db, monkeypatch, benchmark="limits")
    assert any("count as failures" in c.value for c in at.caption)
    table = next(df.value for df in at.dataframe if "completed / total" in df.value.columns)
    ref = next(r for r in refs if r["task"] == "limits")
    assert f"{ref['completed_samples']} / {ref['total_samples']}" in set(table["completed / total"])
    assert {float(v) for v in table["Pass rate (%)"]} == {round(100 / 3, 1)}
    at.toggle(key="lb_errors_out").set_value(True).run()
    table = next(df.value for df in at.dataframe if "completed / total" in df.value.columns)
    assert {float(v) for v in table["Pass rate (%)"]} == {round(100 * ref["headline"], 1)}


def test_leaving_errored_samples_out_gives_inspects_accuracy_on_the_leaderboard(
    real_logs: tuple[Path, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The switch decides the leaderboard itself (rates, tests, ranks), not only the incomplete-runs table."""
    db, refs = real_logs
    monkeypatch.setenv("RUNLENS_DB", str(db))
    for ref in (r for r in refs if r["task"] == "limits"):
        reports = {}
        for mode in ("failures", "excluded"):
            out = subprocess.run(
                [sys.executable, "-m", "analytics", "leaderboard", "--benchmark", "limits", "--json"]
                + ["--errored", mode],
                capture_output=True,
                text=True,
                check=True,
            )
            reports[mode] = json.loads(out.stdout)
            assert reports[mode]["errored"] == mode
        for mode, expected in (("excluded", ref["headline"]), ("failures", None)):
            row = next(r for r in reports[mode]["rows"] if r["slice"] == "all" and ref["eval_id"] in r["run_id"])
            if expected is not None:
                assert row["pass_at"]["1"] == pytest.approx(expected)  # Inspect's accuracy: errored samples left out
            else:
                assert row["pass_at"]["1"] < ref["headline"]  # an errored sample counted as a failure
    at = open_page("views/leaderboard.py", db, monkeypatch, benchmark="limits")
    at.toggle(key="lb_errors_out").set_value(True).run()
    assert not at.exception and any("left out here" in c.value for c in at.caption)

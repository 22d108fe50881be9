"""The fourth generator of failure sets (tests/failure_sets_code.py): its truth matches its records, every cause
can be drawn, its records are a valid native log, and its boilerplate is shared by the causes as its docstring
says."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests import failure_sets_code as code
from tests.failure_sets import FailureSet


def _failed(fs: FailureSet) -> list[dict[str, Any]]:
    return [r for r in fs.records if r["record"] == "attempt" and not r["passed"]]


def test_the_truth_names_every_failed_attempt_and_every_cause_is_drawn() -> None:
    fs = code.failure_set(seed=5, n_causes=len(code.CAUSES), n_failures=600, style="agent")
    failed = _failed(fs)
    assert {(r["run_id"], r["task_id"], r["sample"]) for r in failed} == set(fs.truth)
    assert len(failed) == 600 and len(fs.truth) == 600
    assert set(fs.truth.values()) == {c.name for c in code.CAUSES} == set(fs.causes)
    tasks = {r["task_id"] for r in fs.records if r["record"] == "task"}
    assert {r["task_id"] for r in fs.records if r["record"] == "attempt"} <= tasks


def test_a_seed_gives_the_same_set_and_n_causes_are_drawn() -> None:
    a = code.failure_set(seed=7, n_causes=4, n_failures=200, style="terminal")
    b = code.failure_set(seed=7, n_causes=4, n_failures=200, style="terminal")
    assert a.records == b.records and a.truth == b.truth
    assert len(set(a.truth.values())) == 4


def test_the_terminal_style_has_one_bash_tool_and_the_agent_style_typed_tools() -> None:
    def tools(style: str) -> set[str]:
        fs = code.failure_set(seed=3, n_causes=len(code.CAUSES), n_failures=300, style=style)
        return {s["tool"] for r in _failed(fs) for s in r["steps"] if s["kind"] == "tool_call"}

    assert tools("terminal") == {"bash"}
    assert {"bash", "str_replace_editor", "run_tests", "submit"} <= tools("agent")


def test_runner_boilerplate_is_shared_by_most_causes() -> None:
    """The test runner's summary shows up in failures of most causes, not only in those of failing tests."""
    fs = code.failure_set(seed=11, n_causes=len(code.CAUSES), n_failures=800, style="agent")
    per_cause: Counter[str] = Counter()
    for r in _failed(fs):
        text = json.dumps(r["steps"])
        if "short test summary info" in text or ("Ran " in text and " tests in " in text):
            per_cause[fs.truth[(r["run_id"], r["task_id"], r["sample"])]] += 1
    assert len(per_cause) >= 12, per_cause


def test_the_records_ingest_as_a_native_log(tmp_path: Path) -> None:
    from ingest.pipeline import ingest_paths
    from store import reader

    fs = code.failure_set(seed=2, n_causes=6, n_failures=80, style="terminal")
    db = tmp_path / "code.duckdb"
    (res,) = ingest_paths([fs.write(tmp_path / "code.jsonl")], db=db)
    assert res.outcome == "ingested", res.error
    with reader(db) as con:
        rows = con.execute("SELECT run_id, task_id, sample FROM attempts WHERE NOT passed").fetchall()
    assert {(r, t, int(s)) for r, t, s in rows} == set(fs.truth)

"""OpenAI chat-message trajectories (tau-bench airline, gpt-4o): attempts, steps, reference trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.pipeline import ingest_paths
from tests.adapter_helpers import counts, rows
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def tau_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("tau") / "tau.duckdb"
    results = ingest_paths([shared_data("tau_bench", "gpt-4o-airline.json")], db=db)
    assert [(r.outcome, r.format) for r in results] == [("ingested", "openai-messages")], results[0].error
    return db


def test_trials_become_samples_with_the_source_rewards(tau_db: Path) -> None:
    source = json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())
    assert rows(tau_db, "SELECT run_id, benchmark, agent FROM runs") == [
        ("tau-bench-airline-gpt-4o", "tau-bench-airline", "gpt-4o")
    ]
    got = {(t, s): p for t, s, p in rows(tau_db, "SELECT task_id, sample, score FROM attempts")}
    assert got == {(str(r["task_id"]), r["trial"]): float(r["reward"]) for r in source}
    assert rows(tau_db, "SELECT count(DISTINCT task_id), count(DISTINCT sample) FROM attempts") == [(50, 4)]


def test_tool_calls_carry_arguments_and_results(tau_db: Path) -> None:
    source = json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())
    first = source[0]
    n_calls = sum(len(m.get("tool_calls") or []) for m in first["traj"])
    got = rows(
        tau_db,
        "SELECT n_tool_calls FROM attempts WHERE task_id = ? AND sample = ?",
        [str(first["task_id"]), first["trial"]],
    )
    assert got == [(n_calls,)]
    step = rows(
        tau_db,
        "SELECT s.tool, s.args, s.result FROM v_steps s JOIN attempts a USING (attempt_id) "
        "WHERE a.task_id = ? AND a.sample = ? AND s.kind = 'tool_call' ORDER BY s.step LIMIT 1",
        [str(first["task_id"]), first["trial"]],
    )[0]
    call = next(m["tool_calls"][0] for m in first["traj"] if m.get("tool_calls"))
    reply = next(m for m in first["traj"] if m["role"] == "tool")
    assert step[0] == call["function"]["name"]
    assert json.loads(step[1]) == json.loads(call["function"]["arguments"])
    assert step[2] == reply["content"]
    errors = rows(tau_db, "SELECT count(*) FROM steps WHERE error LIKE 'Error%'")[0][0]
    assert errors > 0


def test_expected_actions_become_the_reference_trajectory(tau_db: Path) -> None:
    source = json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())
    first = source[0]
    ref = rows(tau_db, "SELECT reference_trajectory FROM tasks WHERE task_id = ?", [str(first["task_id"])])[0][0]
    assert ref == [a["name"] for a in first["info"]["task"]["actions"]]


def test_options_override_names(tmp_db: Path, tmp_path: Path) -> None:
    src = json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())[:2]
    path = tmp_path / "trajectories.json"
    path.write_text(json.dumps(src))
    res = ingest_paths([path], db=tmp_db, agent="my-agent", benchmark="tau-bench-airline", run_id="r1")
    assert res[0].outcome == "ingested", res[0].error
    assert rows(tmp_db, "SELECT run_id, agent, benchmark FROM runs") == [("r1", "my-agent", "tau-bench-airline")]


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda text: text[: len(text) // 2], "invalid JSON"),
        (lambda text: text.replace('"task_id": 0', '"task_idx": 0', 1), "task_id: missing"),
        (lambda text: text.replace('"reward": 0.0', '"reward": "lots"', 1), "score"),
    ],
)
def test_malformed_trajectories_write_nothing(fixture_db: Path, tmp_path: Path, mutate, expected: str) -> None:
    text = json.dumps(json.loads(shared_data("tau_bench", "gpt-4o-airline.json").read_text())[:3], indent=1)
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(mutate(text))
    before = counts(fixture_db)
    res = ingest_paths([path], db=fixture_db, fmt="openai-messages")
    assert res[0].outcome == "failed"
    assert expected in str(res[0].error) and str(path) in str(res[0].error)
    assert counts(fixture_db) == before

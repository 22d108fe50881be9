"""Rule findings (DE, REDUNDANT, NO_TOOL, TOOL) against hand-made trajectories, and their storage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import store as rdb
from analytics.rules import attempt_findings
from ingest import rules
from jobs.rules import refresh_rules

GRAPH = {
    "search": [],
    "get_user_account_list": [],
    "daily_data": ["get_user_account_list"],
    "get_account_adgroup_info": ["get_user_account_list"],
    "calculator": [],
}


def call(step: int, rnd: int, tool: str, args: dict | None = None, error: str | None = None) -> dict:
    return {
        "step": step,
        "round": rnd,
        "kind": "tool_call",
        "tool": tool,
        "args": json.dumps(args or {}),
        "error": error,
    }


def codes(findings: list[rules.Finding]) -> list[tuple[str, int]]:
    return [(f.code, f.step) for f in findings]


def test_clean_trajectory_has_no_findings() -> None:
    steps = [
        call(0, 1, "get_user_account_list", {"user_id": "u1"}),
        call(1, 1, "search", {"query": "CTR"}),
        call(2, 2, "daily_data", {"a": 1}),
        call(3, 3, "calculator", {"code": "print(1)"}),
        {"step": 4, "round": 4, "kind": "final", "tool": None, "args": None, "error": None},
    ]
    assert rules.find_rule_errors(steps, GRAPH) == []


def test_empty_trajectory() -> None:
    assert rules.find_rule_errors([], GRAPH) == []
    assert rules.find_rule_errors([], None) == []


def test_dependency_error_before_prerequisite_and_in_same_round() -> None:
    steps = [
        call(0, 1, "daily_data"),
        call(1, 2, "get_user_account_list"),
        call(2, 2, "get_account_adgroup_info"),
        call(3, 3, "daily_data", {"b": 2}),
    ]
    found = rules.find_rule_errors(steps, GRAPH)
    # step 0: prerequisite never called; step 2: prerequisite only in the same (parallel) round
    assert codes(found) == [("DE", 0), ("DE", 2)]
    assert "get_user_account_list" in found[0].detail


def test_failed_prerequisite_does_not_count() -> None:
    steps = [call(0, 1, "get_user_account_list", error="HTTP 500"), call(1, 2, "daily_data")]
    assert codes(rules.find_rule_errors(steps, GRAPH)) == [("TOOL", 0), ("DE", 1)]


def test_computation_before_any_data() -> None:
    steps = [
        call(0, 1, "calculator", {"code": "1+1"}),
        call(1, 2, "search", {"q": "x"}),
        call(2, 3, "calculator", {"code": "2+2"}),
    ]
    found = rules.find_rule_errors(steps, GRAPH)
    assert codes(found) == [("DE", 0)] and "computation" in found[0].detail
    # works without a graph too, and the _compute directive names other computation tools
    assert codes(rules.find_rule_errors([call(0, 1, "calculator")], None)) == [("DE", 0)]
    assert codes(rules.find_rule_errors([call(0, 1, "sql_eval")], {"_compute": ["sql_eval"]})) == [("DE", 0)]


def test_redundant_repeats_with_identical_arguments_only() -> None:
    steps = [
        call(0, 1, "search", {"query": "CTR", "n": 1}),
        call(1, 2, "search", {"n": 1, "query": "CTR"}),
        call(2, 3, "search", {"query": "CPC"}),
        call(3, 4, "search", {"query": "CTR", "n": 1}),
    ]
    assert codes(rules.find_rule_errors(steps, GRAPH)) == [("REDUNDANT", 1), ("REDUNDANT", 3)]


def test_retry_after_failure_is_not_redundant() -> None:
    steps = [call(0, 1, "search", {"q": "a"}, error="timeout"), call(1, 2, "search", {"q": "a"})]
    assert codes(rules.find_rule_errors(steps, None)) == [("TOOL", 0)]


def test_no_tool_round_needs_a_graph_and_skips_last_and_user_rounds() -> None:
    steps = [
        {"step": 0, "round": 1, "kind": "thought", "tool": None, "args": None, "error": None},
        call(1, 2, "search", {"q": "a"}),
        {"step": 2, "round": 3, "kind": "user", "tool": None, "args": None, "error": None},
        {"step": 3, "round": 4, "kind": "model", "tool": None, "args": None, "error": None},
        {"step": 4, "round": 5, "kind": "model", "tool": None, "args": None, "error": None},
    ]
    assert codes(rules.find_rule_errors(steps, GRAPH)) == [("NO_TOOL", 0), ("NO_TOOL", 3)]
    assert rules.find_rule_errors(steps, None) == []


def test_graph_hash_is_stable_and_changes_with_the_graph() -> None:
    assert rules.graph_hash(GRAPH) == rules.graph_hash(dict(reversed(list(GRAPH.items()))))
    assert rules.graph_hash(GRAPH) != rules.graph_hash({**GRAPH, "calculator": ["daily_data"]})
    assert rules.graph_hash(None) == rules.NO_GRAPH


def _labels(db: Path) -> list[tuple]:
    with rdb.reader(db) as con:
        return rdb.query_rows(
            con,
            "SELECT a.task_id, a.sample, e.code, e.source, e.step, e.graph_hash "
            "FROM error_labels e JOIN attempts a USING (attempt_id) ORDER BY ALL",
        )


def test_ingest_labels_new_attempts_and_refresh_keeps_log_labels(fixture_db: Path) -> None:
    # ingest already stored rule findings for the benchmark, which declares a tool graph
    labels = _labels(fixture_db)
    log_labels = [r for r in labels if r[3] == "label"]
    assert log_labels  # the fixture has HAL and TOOL labels from the log
    rule_rows = [r for r in labels if r[3] == "rule"]
    # mini-a-v1 T2 sample 1: daily_data before get_accounts, and it failed
    assert ("T2", 1, "DE", "rule", 0) in [r[:5] for r in rule_rows]
    assert ("T2", 1, "TOOL", "rule", 0) in [r[:5] for r in rule_rows]
    with rdb.reader(fixture_db) as con:
        assert {r[5] for r in rule_rows} == {rules.graph_hash(rules.load_graph(con, "mini-bench"))}
        assert rules.stale_benchmarks(con) == []
    # unchanged graph: nothing recomputed; forced: same labels again, log labels untouched, no duplicates
    assert refresh_rules(fixture_db) == {}
    assert "mini-bench" in refresh_rules(fixture_db, force=True)
    after = _labels(fixture_db)
    assert sorted(after) == sorted(labels)
    assert [r for r in after if r[3] == "label"] == log_labels
    with rdb.reader(fixture_db) as con:
        audit = rdb.query_rows(con, "SELECT action, subject FROM audit_log")
    assert ("rules_recomputed", "mini-bench") in audit


def test_a_file_and_its_rule_findings_go_in_together(tmp_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Findings are written inside the file's transaction: when they fail, nothing of the file remains."""
    from ingest.pipeline import ingest_paths
    from tests.conftest import FIXTURES

    def broken(*_args: object, **_kwargs: object) -> int:
        raise RuntimeError("findings failed")

    monkeypatch.setattr(rules, "label_file_attempts", broken)
    with pytest.raises(RuntimeError, match="findings failed"):
        ingest_paths([FIXTURES / "good.jsonl"], db=tmp_db)
    with rdb.writer(tmp_db, publish_snapshot=False) as con:
        assert rdb.query_rows(
            con,
            "SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM ingest_log), (SELECT count(*) FROM runs)",
        ) == [(0, 0, 0)]
    monkeypatch.undo()
    assert [r.outcome for r in ingest_paths([FIXTURES / "good.jsonl"], db=tmp_db)] == ["ingested"]
    assert [r for r in _labels(tmp_db) if r[3] == "rule"]


def test_recomputed_when_the_graph_changes(fixture_db: Path) -> None:
    refresh_rules(fixture_db)
    with rdb.writer(fixture_db) as con:
        con.execute(
            "UPDATE benchmarks SET tool_graph = ? WHERE benchmark = 'mini-bench'",
            [json.dumps({"daily_data": [], "calculator": ["search"]})],
        )
        assert rules.stale_benchmarks(con) == ["mini-bench"]
    done = refresh_rules(fixture_db)
    assert list(done) == ["mini-bench"]
    rows = [r for r in _labels(fixture_db) if r[3] == "rule"]
    # T2 sample 0 called calculator without a prior search now; the old DE on daily_data is gone
    assert ("T2", 0, "DE", "rule", 2) in [r[:5] for r in rows]
    assert ("T2", 1, "DE", "rule", 0) not in [r[:5] for r in rows]


def _run_cli(argv: list[str]) -> int:
    """``python -m analytics rules`` in process (the CLI imports only the chosen report's module)."""
    from cli import main

    return main(["rules", *argv])


def test_rules_cli_and_graph_file(fixture_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"search": ["get_accounts"]}))
    assert _run_cli(["--db", str(fixture_db), "--benchmark", "mini-bench", "--graph", str(graph), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["recomputed"]["mini-bench"] >= 1
    rows = [r for r in _labels(fixture_db) if r[3] == "rule"]
    assert ("T1", 0, "DE", "rule", 0) in [r[:5] for r in rows]  # search before get_accounts
    graph.write_text("[1, 2]")
    assert _run_cli(["--db", str(fixture_db), "--benchmark", "mini-bench", "--graph", str(graph)]) == 2
    assert "tool graph" in capsys.readouterr().err


def test_graph_file_beside_the_benchmark(fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with rdb.writer(fixture_db) as con:
        con.execute("UPDATE benchmarks SET tool_graph = NULL")
    monkeypatch.setenv("RUNLENS_TOOL_GRAPHS", str(tmp_path))
    (tmp_path / "mini-bench.json").write_text(json.dumps({"calculator": ["search"]}))
    with rdb.reader(fixture_db) as con:
        assert rules.load_graph(con, "mini-bench") == {"calculator": ["search"]}


@pytest.mark.slow
def test_rules_cli_subprocess(fixture_db: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "analytics", "rules", "--db", str(fixture_db)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "up to date" in out.stdout  # ingest already labelled the fixture
    forced = subprocess.run(
        [sys.executable, "-m", "analytics", "rules", "--force", "--db", str(fixture_db)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "mini-bench" in forced.stdout


def test_attempt_findings_live(fixture_db: Path) -> None:
    with rdb.reader(fixture_db) as con:
        aid = rdb.query_rows(con, "SELECT attempt_id FROM attempts WHERE task_id = 'T2' AND sample = 1")[0][0]
        found = attempt_findings(con, attempt_id=aid)
    pairs = set(zip(found["code"], found["source"], strict=False))
    assert {("TOOL", "label"), ("DE", "rule"), ("TOOL", "rule")} <= pairs

"""AppTest of the drilldown page: deep links (demo and tau-bench), hostile content, a 2,000-step trajectory."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from analytics import rules
from analytics import trajectory as tr
from analytics.plaintext import md_plain
from ingest.pipeline import ingest_paths
from tests.apptest import open_page
from tests.conftest import shared_data
from tests.otlp_lines import otlp_line, otlp_span

HOSTILE = '<script>alert("x")</script> ![x](http://evil.example/pixel.png) [click](http://evil.example)'
N_LONG = 2000


def open_drilldown(db: Path, monkeypatch: pytest.MonkeyPatch, **params: str) -> AppTest:
    return open_page("views/drilldown.py", db, monkeypatch, **params)


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_demo_attempt_by_deep_link(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with rdb.reader(demo_db) as con:
        run_id, task_id, sample, n_steps, n_calls, query = rdb.query_rows(
            con,
            "SELECT a.run_id, a.task_id, a.sample, a.n_steps, a.n_tool_calls, t.query FROM attempts a "
            "JOIN runs r USING (run_id) JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id "
            # an attempt with a judge's reason whose task has another sample in the run (both are asserted below)
            "WHERE a.n_tool_calls >= 2 AND json_extract_string(a.judge, '$.brief_reason') IS NOT NULL AND EXISTS (SELECT 1 FROM attempts b "
            "WHERE b.run_id = a.run_id AND b.task_id = a.task_id AND b.sample <> a.sample) "
            "ORDER BY r.eval_date DESC, a.run_id, a.task_id, a.sample DESC LIMIT 1",
        )[0]
        first_tool = rdb.query_rows(
            con,
            "SELECT tool FROM steps s JOIN attempts a USING (attempt_id) WHERE a.run_id = ? "
            "AND a.task_id = ? AND a.sample = ? AND kind = 'tool_call' ORDER BY step LIMIT 1",
            [run_id, task_id, sample],
        )[0][0]
        judge = rdb.query_rows(
            con,
            "SELECT judge::VARCHAR FROM attempts WHERE run_id = ? AND task_id = ? AND sample = ?",
            [run_id, task_id, sample],
        )[0][0]
    at = open_drilldown(demo_db, monkeypatch, run=run_id, task=task_id, sample=str(sample))
    assert metrics(at)["Steps / tool calls"] == f"{n_steps} / {n_calls}"
    assert re.fullmatch(r"\$[\d,.]+|–", metrics(at)["Cost"]), metrics(at)["Cost"]  # dollars, never a bare float
    assert query in texts(at)
    assert json.loads(judge)["brief_reason"] in texts(at)
    assert any(first_tool in t for t in texts(at))  # the timeline shows the steps
    assert at.selectbox(key="dd_run").value == run_id and at.selectbox(key="dd_sample").value == sample
    assert at.query_params["task"] == [task_id] or at.query_params["task"] == task_id
    assert any(m.value.startswith("Coverage:") for m in at.markdown)
    # the benchmark overview: AD-Bench Figures 4 and 3
    at.toggle(key="dd_overview").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("plotly_chart")) == 2
    # one click to another sample of the same task
    other = [b for b in at.button if b.key and b.key.startswith("dd_s_") and not b.disabled]
    assert other, "the task has another sample: a button should lead to it"
    other[0].click().run()
    assert not at.exception
    assert at.selectbox(key="dd_sample").value != sample


def test_tau_bench_attempt_by_deep_link(tmp_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.formats import FORMATS

    src = shared_data("tau_bench", "gpt-4o-airline.json")
    assert "openai-messages" in FORMATS  # tau-bench's trajectories are OpenAI chat messages
    results = ingest_paths([src], db=tmp_db, fmt="openai-messages")
    assert [r.outcome for r in results] == ["ingested"]
    with rdb.reader(tmp_db) as con:
        run_id, task_id, sample, n_steps, n_calls = rdb.query_rows(
            con,
            "SELECT run_id, task_id, sample, n_steps, n_tool_calls FROM attempts WHERE n_tool_calls > 0 "
            "ORDER BY attempt_id LIMIT 1",
        )[0]
        tools = [
            r[0]
            for r in rdb.query_rows(
                con,
                "SELECT tool FROM steps s JOIN attempts a USING (attempt_id) "
                "WHERE a.run_id = ? AND a.task_id = ? AND a.sample = ? AND "
                "kind = 'tool_call' ORDER BY step",
                [run_id, task_id, sample],
            )
        ]
    at = open_drilldown(tmp_db, monkeypatch, run=run_id, task=task_id, sample=str(sample))
    assert metrics(at)["Steps / tool calls"] == f"{n_steps} / {n_calls}"
    shown = " ".join(texts(at))
    assert tools[0] in shown and "user" in shown
    # a transcript: the user's turns and the agent's tool calls are messages of different roles
    roles = {m.name for m in at.chat_message}
    assert {"user", "tool call"} <= roles, roles
    # tau-bench gives the expected actions: they stand beside the calls the agent made, in order
    actions = next(f.value for f in at.dataframe if "expected arguments" in f.value.columns)
    with rdb.reader(tmp_db) as con:
        extra = rdb.query_rows(con, "SELECT extra::VARCHAR FROM tasks WHERE task_id = ?", [task_id])[0][0]
    expected = [a["name"] for a in json.loads(extra)["reference_actions"]]
    assert actions["expected action"].tolist() == expected
    for action, steps in zip(actions["expected action"], actions["steps calling this tool"], strict=True):
        assert (steps == "never called") == (action not in tools)  # exactly when the agent never called it
    assert not actions.isna().any().any()  # no None cells


def _write_special(path: Path) -> Path:
    lines = [
        {"record": "benchmark", "benchmark": "edge-bench", "tool_graph": {"daily_data": ["get_accounts"]}},
        {
            "record": "task",
            "benchmark": "edge-bench",
            "task_id": "hostile",
            "query": "Summarise the page",
            "reference_trajectory": ["fetch"],
        },
        {
            "record": "task",
            "benchmark": "edge-bench",
            "task_id": "long",
            "query": "Long loop",
            "reference_trajectory": ["get_accounts", "daily_data", "calculator"],
        },
        {"record": "run", "run_id": "edge-run", "benchmark": "edge-bench", "agent": "Edge"},
        {
            "record": "attempt",
            "run_id": "edge-run",
            "task_id": "hostile",
            "sample": 0,
            "score": 0,
            "answer": HOSTILE,
            "steps": [
                {"round": 1, "tool": "fetch", "args": {"url": "http://evil.example"}, "result": HOSTILE},
                {"round": 2, "tool": "fetch", "args": {"url": "http://evil.example"}, "result": "x" * 5000 + HOSTILE},
                {"round": 3, "kind": "final", "content": HOSTILE},
            ],
        },
    ]
    steps = [
        {
            "round": i + 1,
            "tool": "daily_data" if i % 2 else "search",
            "args": {"i": i % 7},
            "result": f"row {i}",
            "latency_s": 0.1,
            "input_tokens": 10,
            "output_tokens": 2,
        }
        for i in range(N_LONG)
    ]
    lines.append(
        {"record": "attempt", "run_id": "edge-run", "task_id": "long", "sample": 0, "score": 1, "steps": steps}
    )
    big_args = {f"field_{i}": {"value": i, "note": "n" * 10} for i in range(40)}
    lines += [
        {"record": "task", "benchmark": "edge-bench", "task_id": "wide-args", "query": "One call, long arguments"},
        {
            "record": "attempt",
            "run_id": "edge-run",
            "task_id": "wide-args",
            "sample": 0,
            "score": 0,
            "steps": [{"round": 1, "tool": "bulk_update", "args": big_args, "result": "ok"}],
        },
        {
            "record": "attempt",
            "run_id": "edge-run",
            "task_id": "wide-args",
            "sample": 1,
            "score": 1,
            "steps": [{"round": 1, "tool": "bulk_update", "args": {"a": 1}, "result": "ok"}],
        },
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


@pytest.fixture(scope="module")
def edge_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("edge")
    db = folder / "edge.duckdb"
    assert [r.outcome for r in ingest_paths([_write_special(folder / "edge.jsonl")], db=db)] == ["ingested"]
    return db


def test_hostile_tool_output_is_literal_text(edge_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_drilldown(edge_db, monkeypatch, run="edge-run", task="hostile", sample="0")
    assert HOSTILE in texts(at)  # the short result and the final answer, verbatim
    assert any(t.startswith("x" * 100) and t.endswith("…") for t in texts(at))  # long result folded
    for element in (*at.markdown, *at.caption, *at.info, *at.warning):
        assert "evil.example" not in element.value and "<script" not in element.value
    toggle = next(t for t in at.toggle if t.key.startswith("dd_full_"))
    toggle.set_value(True).run()
    assert not at.exception
    assert any(t.endswith(HOSTILE) and len(t) > 5000 for t in texts(at))  # the whole result, still as text


def test_long_trajectory_is_paged_and_fast(edge_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with rdb.reader(edge_db) as con:
        t0 = time.perf_counter()
        d = tr.attempt_detail(con, run_id="edge-run", task_id="long", sample=0)
        tr.attempts_of(con, run_id="edge-run")
        align = tr.alignment_frame(con, attempt_id=d["attempt_id"], reference=d["reference_trajectory"])
        found = rules.attempt_findings(con, attempt_id=d["attempt_id"])
        page = tr.steps_page(con, attempt_id=d["attempt_id"], offset=1975, limit=25)
        assert time.perf_counter() - t0 < 1.0
    assert len(page) == 25 and page["step"].iloc[-1] == N_LONG - 1
    assert (found["code"] == "REDUNDANT").sum() > 1000 and "DE" in set(found["code"])
    assert align["op"].tolist().count("missing") == 2  # get_accounts and calculator never called
    at = open_drilldown(edge_db, monkeypatch, run="edge-run", task="long", sample="0")
    assert sum(m.value.startswith("**Step ") for m in at.markdown) == 25
    at.number_input(key="dd_page").set_value(80).run()
    assert not at.exception
    steps_shown = [m.value for m in at.markdown if m.value.startswith("**Step ")]
    assert steps_shown[-1] == f"**Step {N_LONG - 1}**" and len(steps_shown) == 25


def test_tasks_are_marked_and_failed_attempts_one_click_apart(edge_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The task list marks pass/fail; "Next failed" walks the run's failed attempts in order; long arguments fold."""
    at = open_drilldown(edge_db, monkeypatch, run="edge-run", task="hostile", sample="0")
    task_box = at.selectbox(key="dd_task")
    assert task_box.format_func("hostile") == "✗ hostile" and task_box.format_func("long") == "✓ long"
    assert task_box.format_func("wide-args") == "◐ wide-args"  # one sample failed, one passed
    assert at.button(key="dd_prev_failed").disabled  # hostile/0 is the run's first failed attempt
    at.button(key="dd_next_failed").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the next failed attempt in the run's order (long passed; wide-args sample 0 failed)
    assert (at.selectbox(key="dd_task").value, at.selectbox(key="dd_sample").value) == ("wide-args", 0)
    assert at.button(key="dd_next_failed").disabled and not at.button(key="dd_prev_failed").disabled
    folded = [e for e in at.expander if e.label.startswith("Arguments (")]
    assert len(folded) == 1 and "field_39" in folded[0].code[0].value  # 40 fields: folded, still all there


def test_the_run_list_follows_the_sidebar(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of the sidebar's benchmark only; a deep link to another benchmark's run still opens it, marked."""
    with rdb.reader(demo_db) as con:
        benches = rdb.query_rows(con, "SELECT benchmark, min(run_id) FROM runs GROUP BY 1 ORDER BY 1")
    (b1, _), (_, run2) = benches[0], benches[1]
    at = open_drilldown(demo_db, monkeypatch, benchmark=b1)
    box = at.selectbox(key="dd_run")
    with rdb.reader(demo_db) as con:
        b1_runs = {r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs WHERE benchmark = ?", [b1])}
    assert set(box.options) and {box.format_func(r) for r in b1_runs} == set(box.options)
    at = open_drilldown(demo_db, monkeypatch, benchmark=b1, run=run2)
    assert at.selectbox(key="dd_run").value == run2
    assert at.selectbox(key="dd_run").format_func(run2).endswith("(outside the sidebar's filters)")


def test_a_stale_task_or_sample_in_the_link_gives_a_notice(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/drilldown.py", fixture_db, monkeypatch, run="mini-a-v1", task="NOPE", sample="7")
    assert not at.exception
    assert any("NOPE" in i.value and "first task" in i.value for i in at.info), [i.value for i in at.info]
    task = at.selectbox(key="dd_task").value
    at = open_page("views/drilldown.py", fixture_db, monkeypatch, run="mini-a-v1", task=task, sample="7")
    assert any("sample" in i.value and "7" in i.value for i in at.info), [i.value for i in at.info]
    label = at.selectbox(key="dd_run").format_func(at.selectbox(key="dd_run").value)
    assert label.startswith("Agent A 1 · 2026-01-15 · mini-a-v1"), label  # the one run-label rule


def test_task_window_lists_the_tasks_around_the_current_one_or_the_matches() -> None:
    from ui.transcript import task_window

    tasks = [f"t{i:04d}" for i in range(1200)]
    assert task_window(tasks[:30], "t0003") == tasks[:30]  # a short run: every task
    around = task_window(tasks, "t0700", size=100)
    assert len(around) == 100 and around[0] == "t0650" and "t0700" in around
    assert task_window(tasks, "t1199", size=100)[-1] == "t1199"  # the window stops at the last task
    assert task_window(tasks, "nope", size=100) == tasks[:100]
    assert task_window(tasks, "t0700", "T11", size=100) == tasks[1100:1200]  # a search, any case
    assert task_window(tasks, "t0700", "zz", size=100) == []


def test_a_run_of_many_tasks_is_searched_not_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with more tasks than the picker lists: the tasks around the linked one, and a search box that finds
    any other (issue 33: a run of 66,667 tasks was one list of every task)."""
    from ui.transcript import TASK_OPTIONS

    n = TASK_OPTIONS + 150
    lines: list[dict[str, object]] = [
        {"record": "benchmark", "benchmark": "many", "scoring": "binary"},
        {"record": "run", "run_id": "many-run", "benchmark": "many", "agent": "A"},
    ]
    for i in range(n):
        lines.append({"record": "task", "benchmark": "many", "task_id": f"task-{i:04d}"})
        lines.append({"record": "attempt", "run_id": "many-run", "task_id": f"task-{i:04d}", "sample": 0,
                      "score": float(i % 2), "steps": [{"round": 1, "kind": "final", "content": "done"}]})  # fmt: skip
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "many.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    at = open_drilldown(db, monkeypatch, run="many-run", task="task-0600", sample="0")
    box = at.selectbox(key="dd_task")
    assert box.value == "task-0600" and len(box.options) == TASK_OPTIONS
    at.text_input(key="dd_find").input("task-001").run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.selectbox(key="dd_task")
    assert len(box.options) == 10 and box.value == "task-0010"  # the first match is opened


def test_a_partial_trace_is_shown_as_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole, part = "5b8efff798038103d269b633813fc60c", "6c9f0008a9149214e37ac744924fd71d"
    spans = [
        otlp_span(whole, "eee19b7ec3c1b174"),  # a root span: the whole trace
        otlp_span(part, "fff19b7ec3c1b175", parent="00000000000000aa"),  # its root (span ...aa) never arrived
        otlp_span(part, "fff19b7ec3c1b176", parent="fff19b7ec3c1b175"),
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text(otlp_line(*spans) + "\n")
    db = tmp_path / "db.duckdb"
    [result] = ingest_paths([path], db=db)  # the real OTLP reader marks the second trace trace_partial
    assert result.outcome == "ingested", result.error
    with rdb.reader(db) as con:
        (run_id,) = rdb.query_rows(con, "SELECT DISTINCT run_id FROM attempts")[0]
    at = open_drilldown(db, monkeypatch, run=run_id, task=part, sample="0")
    assert not at.exception, [e.value for e in at.exception]
    notices = [w.value for w in at.warning if "Partial trace" in w.value]
    want = "Partial trace: its root span was not received; 2 spans stored; completed if the rest arrives."
    assert notices == [md_plain(want)]  # through the plain-text helper (the mark's text comes from the log)
    at = open_drilldown(db, monkeypatch, run=run_id, task=whole, sample="0")
    assert not at.exception, [e.value for e in at.exception]
    assert not [w.value for w in at.warning if "Partial trace" in w.value]


@pytest.mark.parametrize(
    ("extra", "notice"),
    [
        ({}, None),
        ({"trace_partial": {"missing": "root span", "spans": 1}}, "its root span was not received; 1 span stored"),
        ({"trace_partial": True}, "part of it was not received; some spans stored"),  # a mark of another shape
    ],
)
def test_partial_notice_of_a_stored_mark(extra: dict[str, object], notice: str | None) -> None:
    from analytics.trajectory.compute import _outcome_details

    got = tr.partial_notice(_outcome_details(json.dumps(extra))["trace_partial"])
    assert got is None if notice is None else notice in str(got)


def test_the_panels_beside_the_transcript_are_read_when_opened(edge_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first render reads the attempt, its tool calls and a page of steps; the judge's verdicts, the findings, the
    human reviews, the same task in other runs and the failed neighbours are read when their panel is opened (or
    their button pressed), and then show what their readers give."""
    import streamlit as st

    from analytics import review as rv

    calls: list[str] = []

    def recorded(module: object, name: str) -> None:
        fn = getattr(module, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            calls.append(name)
            return fn(*args, **kwargs)

        wrapper.__module__, wrapper.__qualname__ = fn.__module__, fn.__qualname__  # the same cache key
        monkeypatch.setattr(module, name, wrapper)

    for module, name in [
        (tr, "judge_verdicts_of"),
        (tr, "runs_with_task"),
        (tr, "failed_around"),
        (tr, "attempts_of"),
        (tr, "attempt_detail"),
        (rules, "attempt_findings"),
        (rv, "reviews_of"),
    ]:
        recorded(module, name)
    st.cache_data.clear()
    at = open_drilldown(edge_db, monkeypatch, run="edge-run", task="long", sample="0")
    assert calls == [] and not any(t.value.startswith("⚠") for t in at.text)
    assert sum(m.value.startswith("**Step ") for m in at.markdown) == 25  # the transcript is drawn
    assert any(m.value.startswith("Coverage:") for m in at.markdown)  # so is the alignment
    at.session_state["dd_findings_open"] = True
    at.run()
    with rdb.reader(edge_db) as con:
        d = tr.attempt_detail(con, run_id="edge-run", task_id="long", sample=0)
        assert d is not None
        found = rules.attempt_findings(con, attempt_id=int(d["attempt_id"]))
    calls.clear()
    shown = next(f.value for f in at.dataframe if "Detail" in f.value.columns)
    assert set(shown["Code"]) == set(found["code"]) == {"DE", "REDUNDANT"}
    assert any(t.value.startswith("⚠ DE (rule)") for t in at.text)  # and marked on their steps
    for key, what in [
        ("dd_reviews_open", "No human review yet."),
        ("dd_verdicts_open", "No stored verdict for this attempt"),
        ("dd_other_open", "No other run attempted this task."),
    ]:
        at.session_state[key] = True
        at.run()
        assert not at.exception and any(c.value.startswith(what) for c in at.caption), key
    assert sorted(calls) == ["judge_verdicts_of", "reviews_of", "runs_with_task"]
    at.button(key="dd_prev_failed").click().run()  # the neighbour is found when the button is pressed
    assert "failed_around" in calls and (at.selectbox(key="dd_task").value, at.selectbox(key="dd_sample").value) == (
        "hostile",
        0,
    )

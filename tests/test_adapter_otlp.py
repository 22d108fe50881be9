"""OTLP trace files (OTLP/JSON lines and protobuf) made by the real OpenTelemetry SDK: attempts, steps, scores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from ingest.pipeline import ingest_paths
from tests.adapter_helpers import counts, rows
from tests.otlp_producer import T0, expected_by_trace, make_spans, otlp_json_lines, otlp_proto_file


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    return make_spans()


def _ingest(db: Path, path: Path, **options: Any) -> Any:
    [result] = ingest_paths([path], db=db, **options)
    return result


@pytest.fixture(scope="module")
def json_db(tmp_path_factory: pytest.TempPathFactory, spans: list[ReadableSpan]) -> Path:
    folder = tmp_path_factory.mktemp("otlp")
    path = folder / "traces.jsonl"
    path.write_bytes(otlp_json_lines(spans))
    result = _ingest(folder / "db.duckdb", path)
    assert (result.outcome, result.format) == ("ingested", "otlp"), result.error
    return folder / "db.duckdb"


def test_each_trace_is_an_attempt_with_its_llm_and_tool_spans_as_steps(
    json_db: Path, spans: list[ReadableSpan]
) -> None:
    expected = expected_by_trace(spans)
    got = rows(
        json_db,
        "SELECT json_extract_string(extra, '$.trace_id'), run_id, input_tokens, output_tokens, latency_s, n_steps, "
        "n_tool_calls FROM attempts",
    )
    assert {g[0] for g in got} == set(expected)
    for trace_id, run_id, tok_in, tok_out, latency, n_steps, n_tools in got:
        want = expected[trace_id]
        assert run_id.startswith(want["service"] + "@")
        assert (tok_in, tok_out) == want["tokens"]
        assert latency == pytest.approx(want["latency_s"])
        assert (n_steps, n_tools) == (want["n_steps"], len(want["tools"]))
        steps = rows(
            json_db,
            "SELECT s.tool, s.latency_s FROM steps s JOIN attempts a USING (attempt_id) "
            "WHERE json_extract_string(a.extra, '$.trace_id') = ? ORDER BY s.step",
            [trace_id],
        )
        assert [t for t, _ in steps if t] == want["tools"]
        assert [lat for _, lat in steps] == pytest.approx(want["latencies"])


def test_runs_tasks_and_samples_come_from_service_and_session(json_db: Path) -> None:
    assert rows(json_db, "SELECT run_id, agent, agent_version, kind, eval_date::VARCHAR FROM runs ORDER BY run_id") == [
        ("support-agent@1.2", "support-agent", "1.2", "agent", "2026-01-01"),
        ("travel-agent@0.3", "travel-agent", "0.3", "agent", "2026-01-01"),
    ]
    # the two support-agent traces share session.id "weather-paris": samples 0 and 1 of one task, in start order
    got = rows(json_db, "SELECT run_id, task_id, sample, score FROM attempts ORDER BY run_id, sample")
    assert got == [
        ("support-agent@1.2", "weather-paris", 0, 1.0),  # OpenInference EVALUATOR span, evaluation.score 1.0
        ("support-agent@1.2", "weather-paris", 1, 0.0),  # root attribute eval.score 0.0
        ("travel-agent@0.3", "flight-nyc", 0, 0.5),  # GenAI gen_ai.evaluation.result event, score 0.5
    ]
    assert rows(json_db, "SELECT name, value FROM attempt_metrics ORDER BY name") == [
        ("correctness", 1.0),
        ("task_success", 0.5),
    ]


def test_step_details_errors_and_unknown_attributes(json_db: Path) -> None:
    travel = rows(
        json_db,
        "SELECT s.kind, s.tool, s.args::VARCHAR, s.result, s.error, s.content FROM steps s "
        "JOIN attempts a USING (attempt_id) WHERE a.run_id = 'travel-agent@0.3' ORDER BY s.step",
    )
    assert [r[0] for r in travel] == ["model", "tool_call", "tool_call", "final"]
    assert json.loads(travel[1][2]) == {"to": "NYC"}
    assert travel[1][4] == "tool failed; TimeoutError: upstream timed out"  # status message + exception event
    assert travel[2][3] == "AF12 09:40" and travel[2][4] is None
    assert travel[3][5] == "Take AF12 at 09:40."
    [(extra,)] = rows(json_db, "SELECT s.extra::VARCHAR FROM steps s WHERE s.tool = 'get_weather' LIMIT 1")
    assert json.loads(extra)["attributes"] == {"weather.provider": "met-office"}
    [(attempt_extra,)] = rows(json_db, "SELECT extra::VARCHAR FROM attempts WHERE sample = 1")
    assert json.loads(attempt_extra)["attributes"]["customer.tier"] == "gold"
    # spans that are neither root nor step (here the EVALUATOR span) are kept whole in the attempt's extra
    [(first_extra,)] = rows(
        json_db, "SELECT extra::VARCHAR FROM attempts WHERE sample = 0 AND task_id = 'weather-paris'"
    )
    [evaluator] = json.loads(first_extra)["other_spans"]
    assert (evaluator["name"], evaluator["span_kind"]) == ("eval.correctness", "evaluator")
    assert evaluator["attributes"]["evaluation.label"] == "correct"
    [(answer, status)] = rows(json_db, "SELECT answer, status FROM attempts WHERE run_id = 'travel-agent@0.3'")
    assert (answer, status) == ("Take AF12 at 09:40.", "completed")


def test_protobuf_file_reads_as_the_json_one(tmp_path: Path, json_db: Path, spans: list[ReadableSpan]) -> None:
    path = tmp_path / "traces.pb"
    path.write_bytes(otlp_proto_file(spans))
    db = tmp_path / "pb.duckdb"
    result = _ingest(db, path)
    assert (result.outcome, result.format) == ("ingested", "otlp"), result.error
    sql = "SELECT run_id, task_id, sample, score, input_tokens, output_tokens, n_steps FROM attempts ORDER BY ALL"
    assert rows(db, sql) == rows(json_db, sql)
    assert _ingest(db, path).outcome == "duplicate"


def test_scores_csv_joined_by_trace_id_wins(tmp_path: Path, spans: list[ReadableSpan]) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_bytes(otlp_json_lines(spans))
    ids = list(expected_by_trace(spans))
    scores = tmp_path / "scores.csv"
    scores.write_text("trace_id,score,helpfulness\n" + "".join(f"{t},0.25,{i}\n" for i, t in enumerate(ids)))
    db = tmp_path / "db.duckdb"
    result = _ingest(db, path, scores=str(scores))
    assert result.outcome == "ingested", result.error
    assert rows(db, "SELECT DISTINCT score FROM attempts") == [(0.25,)]
    got = rows(
        db,
        "SELECT json_extract_string(a.extra, '$.trace_id'), m.value FROM attempt_metrics m JOIN attempts a USING (attempt_id) WHERE m.name = 'helpfulness'",
    )
    assert dict(got) == {t: float(i) for i, t in enumerate(ids)}


def test_mapping_names_other_attributes(tmp_path: Path, spans: list[ReadableSpan]) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_bytes(otlp_json_lines(spans))
    db = tmp_path / "db.duckdb"
    result = _ingest(db, path, mapping="task_id=input.value,run_id=service.name,benchmark=weather-bench")
    assert result.outcome == "ingested", result.error
    got = rows(
        db, "SELECT r.benchmark, a.run_id, a.task_id, a.sample FROM attempts a JOIN runs r USING (run_id) ORDER BY ALL"
    )
    # travel-agent's root has no input.value: its task falls back to the trace id
    assert got[:2] == [
        ("otel", "support-agent", "Weather in Paris?", 0),
        ("otel", "support-agent", "Weather in Paris?", 1),
    ]


# ---------------------------------------------------------------------------------------------
# Malformed files: file:line and nothing written
# ---------------------------------------------------------------------------------------------


def _span_json(trace: str, span: str, parent: str = "", name: str = "s") -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(T0),
        "endTimeUnixNano": str(T0 + 1000),
        "attributes": [{"key": "eval.score", "value": {"doubleValue": 1.0}}],
    }


def _line(*spans: dict[str, Any]) -> str:
    return json.dumps(
        {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]}
    )


TRACE = "5b8efff798038103d269b633813fc60c"


@pytest.mark.parametrize(
    ("lines", "where", "reason"),
    [
        ([_line(_span_json(TRACE, "eee19b7ec3c1b174")), '{"resourceSpans": [ oops'], ":2: -:", "invalid JSON"),
        (
            [_line(_span_json(TRACE, "eee19b7ec3c1b174")), _line(_span_json("", "eee19b7ec3c1b175"))],
            ":2: traceId:",
            "missing",
        ),
        (
            [
                _line(_span_json(TRACE, "000000000000000a", "000000000000000b")),
                _line(_span_json(TRACE, "000000000000000b", "000000000000000a")),
            ],
            ":1: parentSpanId:",
            "cycle in the parent ids",
        ),
        (
            [
                _line(
                    *(_span_json(TRACE, format(i + 1, "016x"), "0000000000000001" if i else "") for i in range(10_000))
                )
            ],
            ":1: spans:",
            "10,000 spans, more than the limit",
        ),
        ([_line({**_span_json(TRACE, "eee19b7ec3c1b174"), "attributes": []})], ":1: score:", "has no score"),
    ],
    ids=["bad-json", "no-trace-id", "cycle", "10k-spans", "no-score"],
)
def test_malformed_otlp_names_the_line_and_writes_nothing(
    tmp_path: Path, lines: list[str], where: str, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    db = tmp_path / "db.duckdb"
    result = _ingest(db, path, fmt="otlp", mapping="missing_score=error")
    assert result.outcome == "failed"
    message = str(result.error)
    assert f"{path}{where}" in message and reason in message, message
    assert {k: v for k, v in counts(db).items() if k != "ingest_log"} == dict.fromkeys(
        ("benchmarks", "tasks", "runs", "attempts", "steps", "texts", "attempt_metrics"), 0
    )


def test_garbage_protobuf_is_refused_at_its_message(tmp_path: Path) -> None:
    path = tmp_path / "bad.pb"
    path.write_bytes((5).to_bytes(4, "big") + b"\xff\xff\xff\xff\xff")
    result = _ingest(tmp_path / "db.duckdb", path, fmt="otlp")
    assert result.outcome == "failed" and f"{path}:1: -: not an OTLP protobuf" in str(result.error)


def test_attempt_span_makes_each_agent_span_an_attempt(tmp_path: Path) -> None:
    """One trace holding a whole experiment (a CHAIN root over two AGENT runs, each scored by an annotation)."""
    from openinference.semconv.trace import AnnotationAttributes, OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import set_span_in_context

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    root = tracer.start_span("experiment", attributes={kind: OpenInferenceSpanKindValues.CHAIN.value})
    for i, label in enumerate(("correct", "incorrect")):
        agent = tracer.start_span("agent", context=set_span_in_context(root))
        agent.set_attributes(
            {
                kind: OpenInferenceSpanKindValues.AGENT.value,
                "runlens.task_id": f"q{i}",
                f"annotations.0.{AnnotationAttributes.ANNOTATION_NAME}": "judge",
                f"annotations.0.{AnnotationAttributes.ANNOTATION_LABEL}": label,  # a label, no score: 1 / 0
            }
        )
        tool = tracer.start_span("lookup", context=set_span_in_context(agent))
        tool.set_attributes({kind: OpenInferenceSpanKindValues.TOOL.value, SpanAttributes.TOOL_NAME: f"lookup{i}"})
        tool.end()
        agent.end()
    root.end()
    path = tmp_path / "experiment.jsonl"
    path.write_bytes(otlp_json_lines(memory.get_finished_spans()))
    mapping = tmp_path / "agents.yaml"
    mapping.write_text("name: agents\nattempt_span: {kind: AGENT}\nbenchmark: qa\n")
    db = tmp_path / "db.duckdb"
    result = _ingest(db, path, mapping=str(mapping))
    assert result.outcome == "ingested", result.error
    got = rows(
        db,
        "SELECT a.task_id, a.score, s.tool, json_extract_string(a.extra, '$.root_span') FROM attempts a "
        "JOIN steps s USING (attempt_id) ORDER BY a.task_id",
    )
    assert got == [("q0", 1.0, "lookup0", "agent"), ("q1", 0.0, "lookup1", "agent")]
    assert rows(db, "SELECT benchmark FROM runs") == [("qa",)]


def test_root_token_counts_are_used_when_no_llm_span_has_any(tmp_path: Path) -> None:
    root = _span_json(TRACE, "eee19b7ec3c1b174")
    root["attributes"] += [
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1234"}},  # int64 as a string, as OTLP/JSON
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 56}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text(_line(root) + "\n")
    db = tmp_path / "db.duckdb"
    result = _ingest(db, path, fmt="otlp")
    assert result.outcome == "ingested", result.error
    assert rows(db, "SELECT input_tokens, output_tokens, n_steps FROM attempts") == [(1234, 56, 0)]


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def test_bare_and_varint_delimited_protobuf(tmp_path: Path, json_db: Path, spans: list[ReadableSpan]) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tests.otlp_producer import by_trace

    messages = [encode_spans(group).SerializeToString() for group in by_trace(spans)]
    sql = "SELECT run_id, task_id, sample, score, input_tokens, n_steps FROM attempts ORDER BY ALL"
    for name, data in (
        ("bare.binpb", encode_spans(spans).SerializeToString()),  # one request body, all traces
        ("delimited.pb", b"".join(_varint(len(m)) + m for m in messages)),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        db = tmp_path / f"{name}.duckdb"
        result = _ingest(db, path)
        assert (result.outcome, result.format) == ("ingested", "otlp"), result.error
        assert rows(db, sql) == rows(json_db, sql)


def test_drilldown_and_leaderboard_show_a_trace(json_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages read traces like any attempt: the drilldown lists the GenAI trace's steps and its tool error."""
    from tests.apptest import open_page

    db = tmp_path / "pages.duckdb"
    shutil.copy(json_db, db)  # a private copy: the app may publish its snapshot beside it
    at = open_page("views/drilldown.py", db, monkeypatch, run="travel-agent@0.3", task="flight-nyc", sample="0")
    assert {m.label: m.value for m in at.metric}["Steps / tool calls"] == "4 / 2"
    shown = " ".join(str(t.value) for t in at.text)
    assert "search_flights" in shown and "upstream timed out" in shown
    board = open_page("views/leaderboard.py", db, monkeypatch, benchmark="otel")
    assert any("support-agent" in df.value.to_csv() for df in board.dataframe)


def test_earlier_genai_attributes_as_openllmetry_writes_them(tmp_path: Path) -> None:
    """gen_ai.prompt.N.* / gen_ai.completion.N.* with llm.request.type and traceloop.span.kind (OpenLLMetry)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import set_span_in_context

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    root = tracer.start_span("qa.workflow", attributes={"traceloop.span.kind": "workflow", "eval.score": 1.0})
    ctx = set_span_in_context(root)
    llm_attrs: dict[str, Any] = {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "Who wrote Dune?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.name": "lookup",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"q": "Dune"}',
        "gen_ai.usage.prompt_tokens": 11,
        "gen_ai.usage.completion_tokens": 7,
    }
    tracer.start_span("openai.chat", context=ctx, attributes=llm_attrs).end()
    tool_attrs = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "lookup",
        "traceloop.entity.input": '{"q": "Dune"}',
        "traceloop.entity.output": "Frank Herbert",
    }
    tracer.start_span("lookup.tool", context=ctx, attributes=tool_attrs).end()
    final_attrs = {
        "llm.request.type": "chat",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "Frank Herbert.",
        "gen_ai.usage.prompt_tokens": 20,
        "gen_ai.usage.completion_tokens": 4,
    }
    tracer.start_span("openai.chat", context=ctx, attributes=final_attrs).end()
    root.end()
    path = tmp_path / "legacy.jsonl"
    path.write_bytes(otlp_json_lines(memory.get_finished_spans()))
    db = tmp_path / "db.duckdb"
    result = _ingest(db, path)
    assert result.outcome == "ingested", result.error
    got = rows(db, "SELECT kind, tool, args::VARCHAR, result, content FROM steps ORDER BY step")
    assert [(k, t) for k, t, *_ in got] == [("model", None), ("tool_call", "lookup"), ("final", None)]
    assert json.loads(got[1][2]) == {"q": "Dune"} and got[1][3] == "Frank Herbert"
    assert rows(db, "SELECT input_tokens, output_tokens, answer, score FROM attempts") == [
        (31, 11, "Frank Herbert.", 1.0)
    ]


# ---------------------------------------------------------------------------------------------
# Score-less traces, partial traces, mapping keys, task text
# ---------------------------------------------------------------------------------------------


def _unscored(trace: str, span: str, *, crashed: bool, parent: str = "") -> dict[str, Any]:
    out = {**_span_json(trace, span, parent), "attributes": [{"key": "session.id", "value": {"stringValue": trace}}]}
    if crashed:
        out["status"] = {"code": 2, "message": "agent crashed"}
    return out


SCORELESS = [
    _line(_unscored(format(i + 1, "032x"), format(i + 1, "016x"), crashed=i == 9)) for i in range(10)
]  # the ten score-less traces, the last one crashed


def test_score_less_traces_are_stored_unscored_whatever_their_status(tmp_path: Path) -> None:
    path = tmp_path / "scoreless.jsonl"
    path.write_text("\n".join(SCORELESS) + "\n")
    result = _ingest(tmp_path / "db.duckdb", path)
    assert result.outcome == "ingested", result.error
    got = rows(tmp_path / "db.duckdb", "SELECT status, score, passed FROM attempts ORDER BY task_id")
    assert got == [("completed", None, None)] * 9 + [("crashed", None, None)]  # never 0 for the crashed one


@pytest.mark.parametrize(("missing", "outcome", "n"), [("error", "failed", 0), ("skip", "ingested", 0)])
def test_missing_score_error_and_skip_treat_every_status_alike(
    tmp_path: Path, missing: str, outcome: str, n: int
) -> None:
    path = tmp_path / "scoreless.jsonl"
    path.write_text("\n".join(SCORELESS) + "\n")
    result = _ingest(tmp_path / "db.duckdb", path, mapping=f"missing_score={missing}")
    assert result.outcome == outcome
    if missing == "error":
        assert str(result.error).count("has no score") == 10  # the crashed one too
    else:
        assert rows(tmp_path / "db.duckdb", "SELECT count(*) FROM attempts") == [(n,)]


def test_a_trace_without_its_root_span_is_marked_partial(tmp_path: Path) -> None:
    path = tmp_path / "fragment.jsonl"
    path.write_text(_line(_span_json(TRACE, "eee19b7ec3c1b174", parent="00000000000000aa")) + "\n")
    result = _ingest(tmp_path / "db.duckdb", path)
    assert result.outcome == "ingested", result.error
    got = rows(tmp_path / "db.duckdb", "SELECT json_extract_string(extra, '$.trace_partial.missing') FROM attempts")
    assert got == [("root span",)]


@pytest.mark.parametrize(
    ("mapping", "reason"),
    [
        ("taskid=dataset.example_id", "unknown mapping key 'taskid'"),  # a typo: was silently ignored
        ("task_id=x,evaluaton=correctness", "unknown mapping key 'evaluaton'"),
        ("missing_score=sometimes", "missing_score keep|error|skip"),
    ],
)
def test_inline_mapping_keys_are_validated(tmp_path: Path, mapping: str, reason: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line(_span_json(TRACE, "eee19b7ec3c1b174")) + "\n")
    result = _ingest(tmp_path / "db.duckdb", path, mapping=mapping)
    assert result.outcome == "failed" and reason in str(result.error), result.error


def test_a_yaml_mapping_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    mapping = tmp_path / "m.yaml"
    mapping.write_text("name: m\nevaluaton: correctness\n")
    path = tmp_path / "t.jsonl"
    path.write_text(_line(_span_json(TRACE, "eee19b7ec3c1b174")) + "\n")
    result = _ingest(tmp_path / "db.duckdb", path, mapping=str(mapping))
    assert result.outcome == "failed" and "unknown mapping key(s) evaluaton" in str(result.error)


def test_task_text_and_reference_answer_are_mapped(tmp_path: Path) -> None:
    span = _span_json(TRACE, "eee19b7ec3c1b174")
    span["attributes"] += [
        {"key": "dataset.question", "value": {"stringValue": "What is 2+2?"}},
        {"key": "runlens.reference_answer", "value": {"stringValue": "4"}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text(_line(span) + "\n")
    result = _ingest(tmp_path / "db.duckdb", path, mapping="query=dataset.question")
    assert result.outcome == "ingested", result.error
    assert rows(tmp_path / "db.duckdb", "SELECT query, reference_answer FROM tasks") == [("What is 2+2?", "4")]


# ---------------------------------------------------------------------------------------------
# Cost from model and tokens
# ---------------------------------------------------------------------------------------------


def _catalog_usd(model: str, n_in: int, n_out: int, when_ns: int) -> float:
    """The pinned catalog's own answer (the reference the reader must agree with)."""
    import datetime as dt

    from genai_prices import Usage, calc_price

    when = dt.datetime.fromtimestamp(when_ns / 1e9, dt.UTC)
    found = calc_price(Usage(input_tokens=n_in, output_tokens=n_out), model_ref=model, genai_request_timestamp=when)
    return float(found.total_price)


def test_traced_runs_get_a_computed_cost_from_the_catalog(json_db: Path, spans: list[ReadableSpan]) -> None:
    got = rows(
        json_db,
        "SELECT run_id, sample, cost_usd, is_cost_computed, json_extract(extra, '$.cost_source')::VARCHAR "
        "FROM attempts ORDER BY run_id, sample",
    )
    llm = {}  # trace -> [(model, in, out, start)]
    for span in spans:
        attrs = span.attributes or {}
        model = attrs.get("llm.model_name") or attrs.get("gen_ai.request.model")
        if model:
            n_in = int(attrs.get("llm.token_count.prompt", attrs.get("gen_ai.usage.input_tokens", 0)))  # type: ignore[arg-type]
            n_out = int(attrs.get("llm.token_count.completion", attrs.get("gen_ai.usage.output_tokens", 0)))  # type: ignore[arg-type]
            llm.setdefault(span.context.trace_id, []).append((str(model), n_in, n_out, span.start_time or 0))
    want = sorted(sum(_catalog_usd(*call) for call in calls) for calls in llm.values())
    assert sorted(r[2] for r in got) == pytest.approx(want)
    assert all(r[2] > 0 for r in got)
    assert {(r[3], r[4]) for r in got} == {(True, '{"genai-prices 0.2.3":2}')}


def test_the_mappings_prices_win_over_the_catalog_and_an_unknown_model_leaves_the_cost_empty(
    tmp_path: Path, spans: list[ReadableSpan]
) -> None:
    path = tmp_path / "traces.jsonl"
    text = otlp_json_lines(spans).decode().replace("gpt-4.1", "house-model-7")  # the GenAI trace's model
    path.write_text(text)
    mapping = tmp_path / "prices.yaml"
    mapping.write_text("prices:\n  gpt-4o-mini: {input_per_mtok: 1000, output_per_mtok: 2000}\n")
    db = tmp_path / "db.duckdb"
    assert _ingest(db, path, mapping=str(mapping)).outcome == "ingested"
    got = rows(
        db,
        "SELECT run_id, cost_usd, is_cost_computed, json_extract_string(extra, '$.cost_missing.models[0]') "
        "FROM attempts ORDER BY run_id, sample",
    )
    oi_cost = ((120 + 160) * 1000 + (15 + 6) * 2000) / 1e6  # the OpenInference trace's tokens at the mapping's price
    assert got == [
        ("support-agent@1.2", pytest.approx(oi_cost), True, None),
        ("support-agent@1.2", pytest.approx(oi_cost), True, None),
        ("travel-agent@0.3", None, False, "house-model-7"),  # no price: no cost, not a partial sum
    ]


def _cached_call_spans(usage: dict[str, int], model: str) -> list[ReadableSpan]:
    """One scored agent span and one chat span carrying ``usage``, written by the real SDK."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "cache-agent", "service.version": "1"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("agent", start_time=T0, end_on_exit=False) as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "eval.score": 1.0})
        chat = tracer.start_span("chat", start_time=T0 + 10)
        chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": model, **usage})
        chat.end(end_time=T0 + 20)
        root.end(end_time=T0 + 30)
    provider.shutdown()
    return list(memory.get_finished_spans())


# Claude Sonnet 4, 1,000 input tokens of which 800 read from the cache and 100 written to it, 50 output tokens,
# as each convention reports them; OpenLLMetry's earlier Anthropic names count the input without its cached parts.
CACHED_USAGE = {
    "genai": {
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.cache_read.input_tokens": 800,
        "gen_ai.usage.cache_creation.input_tokens": 100,
        "gen_ai.usage.output_tokens": 50,
    },
    "openinference": {
        "llm.token_count.prompt": 1000,
        "llm.token_count.prompt_details.cache_read": 800,
        "llm.token_count.prompt_details.cache_write": 100,
        "llm.token_count.completion": 50,
    },
    "openllmetry-anthropic": {
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.cache_read_input_tokens": 800,
        "gen_ai.usage.cache_creation_input_tokens": 100,
        "gen_ai.usage.output_tokens": 50,
    },
}


@pytest.mark.parametrize("convention", sorted(CACHED_USAGE))
def test_cached_input_is_priced_at_the_catalogs_cache_prices(tmp_path: Path, convention: str) -> None:
    from genai_prices import Usage, calc_price

    model = "claude-sonnet-4-20250514"
    path = tmp_path / "t.jsonl"
    path.write_bytes(otlp_json_lines(_cached_call_spans(CACHED_USAGE[convention], model)))
    db = tmp_path / "db.duckdb"
    assert _ingest(db, path).outcome == "ingested"
    [(cost, details)] = rows(db, "SELECT cost_usd, json_extract(extra, '$.token_details')::VARCHAR FROM attempts")
    usage = Usage(input_tokens=1000, cache_read_tokens=800, cache_write_tokens=100, output_tokens=50)
    want = float(calc_price(usage, model_ref=model).total_price)
    all_input = float(calc_price(Usage(input_tokens=1000, output_tokens=50), model_ref=model).total_price)
    assert cost == pytest.approx(want)
    assert want < 0.6 * all_input  # a cache read costs a tenth of an input token here: the difference is large
    assert json.loads(details) == {"cache_read_tokens": 800, "cache_write_tokens": 100}


def test_a_mappings_cache_prices_and_cached_input_at_the_input_price_without_them(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(otlp_json_lines(_cached_call_spans(CACHED_USAGE["genai"], "house-model-7")))
    costs = []
    for i, cache in enumerate(["", ", cache_read_per_mtok: 0.1, cache_write_per_mtok: 2"]):
        mapping = tmp_path / f"prices{i}.yaml"
        mapping.write_text(f"prices:\n  house-model-7: {{input_per_mtok: 1, output_per_mtok: 4{cache}}}\n")
        db = tmp_path / f"db{i}.duckdb"
        assert _ingest(db, path, mapping=str(mapping)).outcome == "ingested"
        costs.append(rows(db, "SELECT cost_usd FROM attempts")[0][0])
    assert costs == [
        pytest.approx((1000 * 1 + 50 * 4) / 1e6),  # no cache prices: every input token at the input price
        pytest.approx((100 * 1 + 800 * 0.1 + 100 * 2 + 50 * 4) / 1e6),
    ]


def test_a_mapping_price_with_an_unknown_field_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(otlp_json_lines(_cached_call_spans(CACHED_USAGE["genai"], "house-model-7")))
    mapping = tmp_path / "prices.yaml"
    mapping.write_text("prices:\n  house-model-7: {input_per_mtok: 1, output_per_mtok: 4, cached_per_mtok: 0.1}\n")
    result = _ingest(tmp_path / "db.duckdb", path, mapping=str(mapping))
    assert result.outcome != "ingested"
    assert "cache_read_per_mtok" in str(result.error)
    assert not (tmp_path / "db.duckdb").exists() or rows(tmp_path / "db.duckdb", "SELECT count(*) FROM attempts") == [
        (0,)
    ]

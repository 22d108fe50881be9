"""Agent traces made by the real OpenTelemetry SDK, for the OTLP tests.

Two services are traced: ``support-agent`` 1.2 with OpenInference attributes (names from the
``openinference-semantic-conventions`` package) and ``travel-agent`` 0.3 with OpenTelemetry GenAI attributes.
Span times are given explicitly (a fake clock), so latencies and order are known exactly. The tests derive what
Runlens should store from the SDK's own span objects.

"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import (
    EvaluationAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, set_span_in_context

T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in ns
MS = 1_000_000
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


class Clock:
    """A fake clock: each tick is ``step_ms`` milliseconds after the last."""

    def __init__(self, start_ns: int) -> None:
        self.now = start_ns

    def tick(self, ms: int) -> int:
        self.now += ms * MS
        return self.now


def _msg(prefix: str, i: int, field: str) -> str:
    return f"{prefix}.{i}.{field}"


def oi_trace(
    tracer: Any, clock: Clock, *, session: str, question: str, score: float | None, extra: dict[str, Any]
) -> None:
    """One OpenInference agent trace: AGENT root > LLM (asks for a tool) > TOOL > LLM (answers) > EVALUATOR."""
    start = clock.tick(1)
    root = tracer.start_span("agent.run", start_time=start, attributes={KIND: OpenInferenceSpanKindValues.AGENT.value})
    root.set_attribute(SpanAttributes.SESSION_ID, session)
    root.set_attribute(SpanAttributes.INPUT_VALUE, question)
    root.set_attribute(SpanAttributes.OUTPUT_VALUE, "Sunny, 21C")
    for key, value in extra.items():
        root.set_attribute(key, value)
    ctx = set_span_in_context(root)
    llm = tracer.start_span("llm.chat", context=ctx, start_time=clock.tick(10))
    inp, out = SpanAttributes.LLM_INPUT_MESSAGES, SpanAttributes.LLM_OUTPUT_MESSAGES
    call = f"{_msg(out, 0, MessageAttributes.MESSAGE_TOOL_CALLS)}.0"
    llm.set_attributes(
        {
            KIND: OpenInferenceSpanKindValues.LLM.value,
            SpanAttributes.LLM_MODEL_NAME: "gpt-4o-mini",
            _msg(inp, 0, MessageAttributes.MESSAGE_ROLE): "user",
            _msg(inp, 0, MessageAttributes.MESSAGE_CONTENT): question,
            _msg(out, 0, MessageAttributes.MESSAGE_ROLE): "assistant",
            f"{call}.{ToolCallAttributes.TOOL_CALL_FUNCTION_NAME}": "get_weather",
            f"{call}.{ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}": '{"city": "Paris"}',
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT: 120,
            SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: 15,
            SpanAttributes.LLM_TOKEN_COUNT_TOTAL: 135,
        }
    )
    llm.end(end_time=clock.tick(400))
    tool = tracer.start_span("tool.get_weather", context=ctx, start_time=clock.tick(5))
    tool.set_attributes(
        {
            KIND: OpenInferenceSpanKindValues.TOOL.value,
            SpanAttributes.TOOL_NAME: "get_weather",
            SpanAttributes.INPUT_VALUE: '{"city": "Paris"}',
            SpanAttributes.OUTPUT_VALUE: "sunny, 21C",
            "weather.provider": "met-office",  # not a convention: kept in the step's extra
        }
    )
    tool.end(end_time=clock.tick(250))
    llm2 = tracer.start_span("llm.chat", context=ctx, start_time=clock.tick(5))
    llm2.set_attributes(
        {
            KIND: OpenInferenceSpanKindValues.LLM.value,
            SpanAttributes.LLM_MODEL_NAME: "gpt-4o-mini",
            _msg(out, 0, MessageAttributes.MESSAGE_ROLE): "assistant",
            _msg(out, 0, MessageAttributes.MESSAGE_CONTENT): "Sunny, 21C",
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT: 160,
            SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: 6,
        }
    )
    llm2.end(end_time=clock.tick(300))
    if score is not None:
        ev = tracer.start_span("eval.correctness", context=ctx, start_time=clock.tick(1))
        ev.set_attributes(
            {
                KIND: OpenInferenceSpanKindValues.EVALUATOR.value,
                EvaluationAttributes.EVALUATION_NAME: "correctness",
                EvaluationAttributes.EVALUATION_SCORE: score,
                EvaluationAttributes.EVALUATION_LABEL: "correct" if score >= 1 else "incorrect",
            }
        )
        ev.end(end_time=clock.tick(20))
    root.end(end_time=clock.tick(1))


def genai_trace(tracer: Any, clock: Clock, *, conversation: str, score: float) -> None:
    """One GenAI agent trace: invoke_agent > chat (tool call) > execute_tool (fails) > execute_tool > chat."""
    root = tracer.start_span("invoke_agent travel-agent", start_time=clock.tick(1))
    root.set_attributes(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "travel-agent",
            "gen_ai.conversation.id": conversation,
        }
    )
    ctx = set_span_in_context(root)
    chat = tracer.start_span("chat gpt-4.1", context=ctx, start_time=clock.tick(2))
    chat.set_attributes(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4.1",
            "gen_ai.usage.input_tokens": 200,
            "gen_ai.usage.output_tokens": 30,
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {"type": "tool_call", "id": "c1", "name": "search_flights", "arguments": {"to": "NYC"}}
                        ],
                    }
                ]
            ),
        }
    )
    chat.end(end_time=clock.tick(500))
    bad = tracer.start_span("execute_tool search_flights", context=ctx, start_time=clock.tick(3))
    bad.set_attributes(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_flights",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": '{"to": "NYC"}',
        }
    )
    bad.record_exception(TimeoutError("upstream timed out"), timestamp=clock.tick(100))
    bad.set_status(Status(StatusCode.ERROR, "tool failed"))
    bad.end(end_time=clock.tick(1))
    good = tracer.start_span("execute_tool search_flights", context=ctx, start_time=clock.tick(3))
    good.set_attributes(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_flights",
            "gen_ai.tool.call.arguments": '{"to": "NYC"}',
            "gen_ai.tool.call.result": "AF12 09:40",
        }
    )
    good.end(end_time=clock.tick(200))
    final = tracer.start_span("chat gpt-4.1", context=ctx, start_time=clock.tick(2))
    final.set_attributes(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4.1",
            "gen_ai.usage.input_tokens": 260,
            "gen_ai.usage.output_tokens": 12,
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Take AF12 at 09:40."}]}]
            ),
        }
    )
    final.end(end_time=clock.tick(300))
    root.add_event(
        "gen_ai.evaluation.result",
        {"gen_ai.evaluation.name": "task_success", "gen_ai.evaluation.score.value": score},
        timestamp=clock.tick(1),
    )
    root.end(end_time=clock.tick(1))


def make_spans(exporter: Callable[[], SpanExporter] | None = None) -> list[ReadableSpan]:
    """Produce the test traces with the SDK; every span also goes to an exporter made by ``exporter`` (one per
    service, as each service has its own provider) as it ends."""
    out: list[ReadableSpan] = []
    clock = Clock(T0)
    for service, version in (("support-agent", "1.2"), ("travel-agent", "0.3")):
        memory = InMemorySpanExporter()  # one per provider: shutting a provider down stops its exporters
        provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": version}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter()))
        tracer = provider.get_tracer("runlens-tests")
        if service == "support-agent":
            oi_trace(tracer, clock, session="weather-paris", question="Weather in Paris?", score=1.0, extra={})
            oi_trace(
                tracer,
                clock,
                session="weather-paris",
                question="Weather in Paris?",
                score=None,
                extra={"eval.score": 0.0, "customer.tier": "gold"},
            )
        else:
            genai_trace(tracer, clock, conversation="flight-nyc", score=0.5)
        provider.force_flush()
        out.extend(memory.get_finished_spans())
        provider.shutdown()
    return out


def _hex_ids(doc: dict[str, Any]) -> dict[str, Any]:
    """protobuf's json_format writes ids as base64; OTLP/JSON (and the Collector) write them as hex."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return doc


def by_trace(spans: Sequence[ReadableSpan]) -> list[list[ReadableSpan]]:
    """Spans grouped by trace, in the order the traces started."""
    groups: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        groups.setdefault(span.context.trace_id, []).append(span)
    return sorted(groups.values(), key=lambda g: min(s.start_time or 0 for s in g))


def otlp_json_lines(spans: Sequence[ReadableSpan]) -> bytes:
    """The spans as the Collector's file exporter writes them: one ExportTraceServiceRequest per line (one per
    trace here), encoded by the SDK's own OTLP encoder and written as OTLP/JSON."""
    lines = [json.dumps(_hex_ids(MessageToDict(encode_spans(group)))) for group in by_trace(spans)]
    return ("\n".join(lines) + "\n").encode()


def otlp_proto_file(spans: Sequence[ReadableSpan]) -> bytes:
    """The spans as the Collector's file exporter writes ``format: proto``: each message after its 4-byte
    big-endian length."""
    out = b""
    for group in by_trace(spans):
        message = encode_spans(group).SerializeToString()
        out += len(message).to_bytes(4, "big") + message
    return out


STEP_OPS = {"chat": "llm", "execute_tool": "tool"}


def _role(span: ReadableSpan) -> str | None:
    """What the span is by its own attributes: llm, tool or another kind (None)."""
    attrs = span.attributes or {}
    oi = attrs.get("openinference.span.kind")
    if oi in ("LLM", "TOOL"):
        return str(oi).lower()
    return STEP_OPS.get(str(attrs.get("gen_ai.operation.name")))


def expected_by_trace(spans: list[ReadableSpan]) -> dict[str, dict[str, Any]]:
    """Per trace id (hex): steps in start order, token sums and root latency, read off the SDK's spans."""
    out = {}
    for group in by_trace(spans):
        root = next(s for s in group if s.parent is None)
        steps = sorted((s for s in group if _role(s)), key=lambda s: s.start_time or 0)
        llms = [s.attributes or {} for s in steps if _role(s) == "llm"]
        tokens_in = sum(int(a.get("llm.token_count.prompt", a.get("gen_ai.usage.input_tokens", 0))) for a in llms)
        tokens_out = sum(int(a.get("llm.token_count.completion", a.get("gen_ai.usage.output_tokens", 0))) for a in llms)
        out[format(root.context.trace_id, "032x")] = {
            "tools": [
                str((s.attributes or {}).get("tool.name", (s.attributes or {}).get("gen_ai.tool.name")))
                for s in steps
                if _role(s) == "tool"
            ],
            "n_steps": len(steps),
            "latencies": [((s.end_time or 0) - (s.start_time or 0)) / 1e9 for s in steps],
            "tokens": (tokens_in, tokens_out),
            "latency_s": ((root.end_time or 0) - (root.start_time or 0)) / 1e9,
            "service": root.resource.attributes["service.name"],
        }
    return out

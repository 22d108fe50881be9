"""Real producers end to end: a small agent loop calls a local fake OpenAI server through the ``openai`` client,
traced by the OpenInference instrumentation (``openinference-instrumentation-openai``) or the OpenTelemetry GenAI
one (``opentelemetry-instrumentation-openai-v2``), exported live by the SDK's BatchSpanProcessor and OTLP/HTTP
exporter to a running ``serve-otlp``.

Its tool step is slower than the receiver's ``--trace-timeout`` (1 s here), so the first LLM span reaches the
receiver long before the root: the trace must still be stored once, whole. Then a span of the same trace is sent
after the trace was stored (a summary the agent asked for in a background thread during the run, whose LLM call
ends late): it is merged into the stored attempt, in start order.
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.fake_openai_server import FakeOpenAI
from tests.test_otlp_receiver import TOKEN, Receiver, _free_port, _snapshot

SLOW_TOOL_S = 2.5  # the receiver's trace timeout is 1 s


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    folder = tmp_path_factory.mktemp("instrumented")
    running = Receiver(folder / "i.duckdb", _free_port(), folder / "i.log", "--root-wait", "120", timeout="1")
    yield running
    running.proc.kill()
    running.proc.wait()


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def _instrumentor(convention: str) -> Any:
    if convention == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        return OpenAIInstrumentor()
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as GenAIInstrumentor

    return GenAIInstrumentor()


ROOT_ATTRS = {
    "openinference": {"openinference.span.kind": "AGENT", "session.id": "weather-oi"},
    "genai": {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "weather-genai"},
}
TOOL_ATTRS = {
    "openinference": {
        "openinference.span.kind": "TOOL",
        "tool.name": "get_weather",
        "input.value": '{"city": "Paris"}',
    },
    "genai": {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.arguments": '{"city": "Paris"}',
    },
}


def _rows(db: Path, trace_id: str) -> list[tuple[Any, ...]]:
    return _snapshot(
        db,
        "SELECT task_id, score, input_tokens, output_tokens, n_steps, n_tool_calls, "
        "json_extract_string(extra, '$.trace_partial') FROM attempts "
        "WHERE json_extract_string(extra, '$.trace_id') = ?",
        [trace_id],
    )


def _wait(db: Path, trace_id: str, n_steps: int, receiver: Receiver) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = _rows(db, trace_id)
        if rows and rows[0][4] == n_steps:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"trace {trace_id} never had {n_steps} steps: {_rows(db, trace_id)}\n{receiver.log()}")


@pytest.mark.parametrize("convention", ["openinference", "genai"])
def test_a_slow_step_and_a_late_span_from_instrumented_openai_calls(
    receiver: Receiver, fake_openai: FakeOpenAI, convention: str
) -> None:
    import openai

    release = threading.Event()  # the summary call answers once the trace is stored
    fake_openai.set_script(
        [
            ("Weather in Paris", [("tool_call", "get_weather", '{"city": "Paris"}'), ("reply", "Sunny, 21C")]),
            ("Summarize", [("wait", release, "A sunny day in Paris.")]),
        ]
    )
    provider = TracerProvider(resource=Resource.create({"service.name": f"{convention}-agent", "service.version": "1"}))
    exporter = OTLPSpanExporter(endpoint=receiver.url, headers={"Authorization": f"Bearer {TOKEN}"})
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    instrumentor = _instrumentor(convention)
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=fake_openai.base_url, api_key="test", max_retries=0)
        tracer = provider.get_tracer("agent-loop")
        question = [{"role": "user", "content": "Weather in Paris?"}]
        attrs = {**ROOT_ATTRS[convention], "eval.score": 1.0, "runlens.query": "Weather in Paris?"}
        with tracer.start_as_current_span(
            "agent.run", attributes={**attrs, "runlens.reference_answer": "Sunny"}
        ) as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            first = client.chat.completions.create(model="gpt-4o-mini", messages=question)  # type: ignore[arg-type]
            assert first.choices[0].message.tool_calls
            with tracer.start_as_current_span("tool get_weather", attributes=TOOL_ATTRS[convention]) as tool:
                time.sleep(SLOW_TOOL_S)  # the first LLM span was exported ~0.1 s in: its trace timed out meanwhile
                assert _rows(receiver.db, trace_id) == []  # not stored without its root (was: a "complete" fragment)
                tool.set_attribute(
                    "output.value" if convention == "openinference" else "gen_ai.tool.call.result", "sunny"
                )
            summary = threading.Thread(  # in the root's context: its span is a child of the root
                target=contextvars.copy_context().run,
                args=(client.chat.completions.create,),
                kwargs={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Summarize the day"}]},
            )
            summary.start()
            time.sleep(0.05)  # the summary call starts before the final one
            final = client.chat.completions.create(model="gpt-4o-mini", messages=question)  # type: ignore[arg-type]
            assert final.choices[0].message.content == "Sunny, 21C"
        provider.force_flush()
        task = ROOT_ATTRS[convention].get("session.id") or ROOT_ATTRS[convention]["gen_ai.conversation.id"]
        assert _wait(receiver.db, trace_id, 3, receiver) == [(task, 1.0, 200, 40, 3, 1, None)]
        assert summary.is_alive()  # stored while the summary call still runs
        steps_sql = (
            "SELECT s.kind, s.tool, s.content, json_extract(s.extra, '$.tool_calls[0].name')::VARCHAR "
            "FROM steps s JOIN attempts a USING (attempt_id) "
            "WHERE json_extract_string(a.extra, '$.trace_id') = ? ORDER BY s.step"
        )
        # the step that asks for a tool has no text: its content is empty, never the raw HTTP response JSON
        assert _snapshot(receiver.db, steps_sql, [trace_id]) == [
            ("model", None, None, '"get_weather"'),
            ("tool_call", "get_weather", None, None),
            ("final", None, "Sunny, 21C", None),
        ]
        assert _snapshot(receiver.db, "SELECT query, reference_answer FROM tasks WHERE task_id = ?", [task]) == [
            ("Weather in Paris?", "Sunny")
        ]
        release.set()
        summary.join()
        provider.force_flush()  # the summary's span, sent after its trace was stored
        assert _wait(receiver.db, trace_id, 4, receiver) == [(task, 1.0, 300, 60, 4, 1, None)]  # merged: one attempt
        assert _snapshot(receiver.db, steps_sql, [trace_id]) == [
            ("model", None, None, '"get_weather"'),
            ("tool_call", "get_weather", None, None),
            ("model", None, "A sunny day in Paris.", None),  # in start order, before the final answer
            ("final", None, "Sunny, 21C", None),
        ]
        from genai_prices import Usage, calc_price

        # OpenInference reports the 64 cached prompt tokens, which cost the catalog's cache-read price; the GenAI
        # instrumentation reports them for the Responses API only, so its chat calls are priced as all uncached
        cached = 64 if convention == "openinference" else None
        usage = Usage(input_tokens=100, cache_read_tokens=cached, output_tokens=20)
        per_call = float(calc_price(usage, model_ref="gpt-4o-mini").total_price)
        uncached = float(calc_price(Usage(input_tokens=100, output_tokens=20), model_ref="gpt-4o-mini").total_price)
        assert per_call < uncached or cached is None
        cost = _snapshot(
            receiver.db,
            "SELECT cost_usd, is_cost_computed FROM attempts WHERE json_extract_string(extra, '$.trace_id') = ?",
            [trace_id],
        )
        assert cost == [(pytest.approx(3 * per_call), True)]  # three calls priced by the catalog, marked computed
        details = _snapshot(
            receiver.db,
            "SELECT json_extract(extra, '$.token_details') FROM attempts WHERE json_extract_string(extra, '$.trace_id') = ?",
            [trace_id],
        )
        # the cached and reasoning parts the instrumentation reports, summed over the calls
        expected = {"cache_read_tokens": 192, "reasoning_tokens": 24} if convention == "openinference" else None
        assert (details[0][0] and json.loads(details[0][0])) == expected
    finally:
        release.set()
        instrumentor.uninstrument()
        provider.shutdown()
    assert "merged with the spans stored earlier" in receiver.log()

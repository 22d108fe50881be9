"""OTLP/JSON export lines built by hand for the tests that need a trace without its root span (the real SDK always
sends a root eventually; these tests store the trace before it does)."""

from __future__ import annotations

import json

T0_NS = 1_767_225_600_000_000_000  # 2026-01-01


def otlp_span(trace: str, span: str, parent: str = "") -> dict[str, object]:
    """One span named ``agent`` with a score of 1.0 (``parent`` empty: a root span)."""
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": "agent",
        "startTimeUnixNano": str(T0_NS),
        "endTimeUnixNano": str(T0_NS + 1000),
        "attributes": [{"key": "eval.score", "value": {"doubleValue": 1.0}}],
    }


def otlp_line(*spans: dict[str, object], service: str | None = None) -> str:
    """One line of an OTLP/JSON file export holding ``spans`` (under one resource, named ``service`` if given)."""
    attributes = [] if service is None else [{"key": "service.name", "value": {"stringValue": service}}]
    resource = {"attributes": attributes}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]})

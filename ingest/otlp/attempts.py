"""Spans -> one attempt record: run, task and sample from the mapping's attributes, tokens, cost, latency and
status from the root and its model steps; the spans that are not steps are kept whole (``other_spans``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.otlp.mapping import TraceMapping
from ingest.otlp.scores import _apply_scores
from ingest.otlp.steps import _steps_and_evaluations
from ingest.otlp.traces import Trace
from ingest.otlp_conventions import (
    LLM_TOKENS_IN,
    LLM_TOKENS_OUT,
    STEP_KINDS,
    TOKEN_DETAILS,
    Evaluation,
    span_class,
)
from ingest.otlp_decode import STATUS_ERROR, Span


@dataclass
class Attempt:
    """One attempt being built: its key, record and where it came from."""

    loc: str
    trace_id: str
    benchmark: str
    run_id: str
    task_id: str
    sample: int | None
    start_ns: int
    run: dict[str, Any]
    record: dict[str, Any]
    task: dict[str, Any] = field(default_factory=dict)  # query, reference_answer: when the mapping finds them


def _lookup(name: str, root: Span, spans: list[Span], mapping: TraceMapping) -> Any:
    """The first attribute of the mapping's list for ``name`` found on the root, its resource, or another span."""
    keys = mapping.attributes.get(name, ())
    for source in (root.attrs, root.resource, *(s.attrs for s in sorted(spans, key=lambda s: s.start_ns))):
        for key in keys:
            value = source.get(key)
            if value is not None and value != "":
                return value
    return None


def _used_keys(mapping: TraceMapping) -> set[str]:
    return {key for keys in mapping.attributes.values() for key in keys}


def build_attempt(
    path: Path, trace: Trace, root: Span, spans: list[Span], mapping: TraceMapping, options: dict[str, Any]
) -> Attempt:
    """The attempt record (without run, task and sample numbers resolved) of one attempt root and its spans."""
    steps, evals = _steps_and_evaluations(spans, mapping)
    others = [_span_summary(s) for s in spans if s is not root and span_class(s) not in STEP_KINDS]
    agent = options.get("agent") or _lookup("agent", root, spans, mapping) or root.resource.get("service.name")
    version = _lookup("agent_version", root, spans, mapping)
    run_id = options.get("run_id") or _lookup("run_id", root, spans, mapping)
    run_id = run_id or (f"{agent}@{version}" if version else str(agent or "otel"))
    benchmark = options.get("benchmark") or _lookup("benchmark", root, spans, mapping) or mapping.benchmark
    task_id = _lookup("task_id", root, spans, mapping)
    if task_id is None:
        task_id = trace.trace_id if not mapping.attempt_span else f"{trace.trace_id}:{root.span_id}"
    sample = _lookup("sample", root, spans, mapping)
    record = _attempt_record(trace, root, steps, evals, mapping, _lookup("score", root, spans, mapping))
    if others:
        record["other_spans"] = others
    passed = _lookup("passed", root, spans, mapping)
    if isinstance(passed, bool):
        record["passed"] = passed
    eval_date = _lookup("eval_date", root, spans, mapping)
    if root.parent_id is not None:  # the trace's root span has not been seen: never stored as complete
        record["trace_partial"] = {"missing": "root span", "root_parent_span_id": root.parent_id, "spans": len(spans)}
    task = {k: str(v) for k in ("query", "reference_answer") if (v := _lookup(k, root, spans, mapping)) is not None}
    run = {
        "agent": str(agent or run_id),
        "agent_version": None if version is None else str(version),
        "eval_date": str(eval_date) if eval_date else _date(root.start_ns),
    }
    return Attempt(
        loc=f"{path}:{root.line}",
        trace_id=trace.trace_id,
        benchmark=str(benchmark),
        run_id=str(run_id),
        task_id=str(task_id),
        sample=_sample(sample),
        start_ns=root.start_ns,
        run=run,
        record=record,
        task=task,
    )


def _sample(value: Any) -> int | None:
    """A sample number from an attribute (an integer, or its decimal text); None when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii() and len(value.strip()) <= 9:
        return int(value)
    return None


def _span_summary(span: Span) -> dict[str, Any]:
    """A span that is neither the root nor a step, kept whole (its attributes are not dropped)."""
    summary = {
        "name": span.name,
        "span_id": span.span_id,
        "parent_span_id": span.parent_id,
        "span_kind": span_class(span),
        "latency_s": (span.end_ns - span.start_ns) / 1e9,
        "attributes": span.attrs or None,
        "status": {2: "error", 1: "ok"}.get(span.status_code),
        "status_message": span.status_message or None,
        "events": [{"name": n, "attributes": a} for n, _, a in span.events] or None,
    }
    return {k: v for k, v in summary.items() if v is not None}


def _date(ns: int) -> str | None:
    if ns <= 0:
        return None
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).date().isoformat()


def _attempt_record(
    trace: Trace,
    root: Span,
    steps: list[dict[str, Any]],
    evals: list[Evaluation],
    mapping: TraceMapping,
    score_attr: Any,
) -> dict[str, Any]:
    models = [s for s in steps if s["kind"] in ("model", "final")]
    rest = {k: v for k, v in root.attrs.items() if k not in _used_keys(mapping)}
    answer = rest.pop("output.value", None)
    if answer is None and models:
        answer = models[-1].get("content")
    record: dict[str, Any] = {
        "record": "attempt",
        "answer": answer,
        "input_tokens": _first(_sum(models, "input_tokens"), _root_tokens(rest, LLM_TOKENS_IN)),
        "output_tokens": _first(_sum(models, "output_tokens"), _root_tokens(rest, LLM_TOKENS_OUT)),
        "cost_usd": None,
        "latency_s": (root.end_ns - root.start_ns) / 1e9,
        "status": "crashed" if root.status_code == STATUS_ERROR else "completed",
        "steps": steps,
        "trace_id": trace.trace_id,
        "root_span": root.name,
        "input": rest.pop("input.value", None),
        "attributes": rest or None,
        "resource": {k: v for k, v in root.resource.items() if k not in _used_keys(mapping)} or None,
    }
    if root.status_code == STATUS_ERROR:
        record["error"] = root.status_message or "error"
    details = {f: _sum(models, f) for f in TOKEN_DETAILS}
    record["token_details"] = {f: n for f, n in details.items() if n is not None} or None
    _apply_cost(record, models)
    _apply_scores(record, evals, mapping, score_attr)
    return {k: v for k, v in record.items() if v is not None}


def _apply_cost(record: dict[str, Any], models: list[dict[str, Any]]) -> None:
    """The attempt's cost: the sum over its model steps when every step with tokens has a cost (from the span, the
    mapping's prices or the catalog), else none, with the models that had no price (``cost_missing``). A cost
    with any computed part names its sources (``cost_source``: source -> steps), which marks it computed."""
    priced = [s for s in models if s.get("cost_usd") is not None]
    unpriced = [s for s in models if s.get("cost_usd") is None and (s.get("input_tokens") or s.get("output_tokens"))]
    if unpriced:
        names = sorted({str(s.get("model") or "(no model name)") for s in unpriced})
        record["cost_missing"] = {
            "models": names,
            "steps": len(unpriced),
            "reason": "no price in the mapping's prices or the catalog: add them under prices: in the mapping",
        }
        return
    if not priced:
        return
    record["cost_usd"] = sum(s["cost_usd"] for s in priced)
    sources: dict[str, int] = {}
    for s in priced:
        key = s.get("cost_source", "span")
        sources[key] = sources.get(key, 0) + 1
    if set(sources) != {"span"}:
        record["cost_source"] = sources


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _root_tokens(rest: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    """Token counts an agent's root span carries itself (used only when no LLM span reports any)."""
    for key in keys:
        value = rest.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _sum(steps: list[dict[str, Any]], key: str) -> Any:
    values = [s[key] for s in steps if s.get(key) is not None]
    return sum(values) if values else None

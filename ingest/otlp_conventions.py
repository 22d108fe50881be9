"""What a span means, read with the OpenInference and the OpenTelemetry GenAI semantic conventions.

A span is classified (``llm``, ``tool``, ``retriever``, ``agent``, ``chain``, ``evaluator``, ``other``), LLM, tool
and retriever spans become native steps, and evaluation results (OpenInference ``evaluation.*`` /
``annotation.*`` attributes, EVALUATOR spans, the GenAI ``gen_ai.evaluation.result`` event) are collected. Every
attribute a step does not use is kept in the step's ``attributes`` (extra). Attribute names: docs/formats.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ingest.otlp_decode import STATUS_ERROR, Span

OI_KIND = "openinference.span.kind"
GENAI_OP = "gen_ai.operation.name"
OI_KINDS = {
    "LLM": "llm",
    "TOOL": "tool",
    "RETRIEVER": "retriever",
    "AGENT": "agent",
    "CHAIN": "chain",
    "EVALUATOR": "evaluator",
    "EMBEDDING": "other",
    "RERANKER": "retriever",
    "GUARDRAIL": "other",
}
GENAI_OPS = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
}
STEP_KINDS = ("llm", "tool", "retriever")
LEGACY_REQUEST_TYPE = "llm.request.type"
LEGACY_KIND = "traceloop.span.kind"
LEGACY_KINDS = {"tool": "tool", "agent": "agent", "workflow": "chain", "task": "chain"}
# the earlier GenAI message attributes, flattened: gen_ai.completion.0.content, gen_ai.prompt.1.role, ...
_LEGACY_MESSAGE = re.compile(r"^gen_ai\.(prompt|completion)\.(\d{1,9})\.(.+)$")
_LEGACY_TOOL_CALL = re.compile(r"^tool_calls\.(\d{1,9})\.(name|arguments|id)$")
# OpenInference flattens lists: llm.output_messages.0.message.tool_calls.1.tool_call.function.name
# list indices of at most 9 digits: a longer one is no index (the attribute is kept as it is), never a huge int
_OI_MESSAGE = re.compile(r"^llm\.(input|output)_messages\.(\d{1,9})\.message\.(.+)$")
_OI_TOOL_CALL = re.compile(r"^tool_calls\.(\d{1,9})\.tool_call\.(.+)$")
_OI_CONTENTS = re.compile(r"^contents\.(\d{1,9})\.message_content\.(.+)$")
_OI_FEEDBACK = re.compile(
    r"^(?:trace\.|session\.)?(annotations|evaluations)\.(\d{1,9})\.(annotation|evaluation)\.(\w+)$"
)
LLM_TOKENS_IN = ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
LLM_TOKENS_OUT = ("llm.token_count.completion", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
# the parts of the input read from and written to the prompt cache, and the output's reasoning (already counted in
# the input and output above): OpenInference, the GenAI conventions, and OpenLLMetry's earlier names
LLM_CACHE_READ = (
    "llm.token_count.prompt_details.cache_read",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
)
LLM_CACHE_WRITE = (
    "llm.token_count.prompt_details.cache_write",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
)
LLM_REASONING = ("llm.token_count.completion_details.reasoning", "gen_ai.usage.reasoning.output_tokens")
TOKEN_DETAILS = {
    "cache_read_tokens": LLM_CACHE_READ,
    "cache_write_tokens": LLM_CACHE_WRITE,
    "reasoning_tokens": LLM_REASONING,
}
MODEL_KEYS = ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model", "llm.request.model_name")


@dataclass(frozen=True)
class Evaluation:
    """One evaluation result found in a trace."""

    name: str
    score: float | None
    label: str | None
    explanation: str | None
    span_id: str
    time_ns: int


def span_class(span: Span) -> str:
    """``llm``, ``tool``, ``retriever``, ``agent``, ``chain``, ``evaluator`` or ``other``."""
    oi = span.attrs.get(OI_KIND)
    if isinstance(oi, str) and oi.upper() in OI_KINDS:
        return OI_KINDS[oi.upper()]
    op = span.attrs.get(GENAI_OP)
    if isinstance(op, str) and op in GENAI_OPS:
        return GENAI_OPS[op]
    # the earlier GenAI attributes (still written by OpenLLMetry): llm.request.type and traceloop.span.kind
    if span.attrs.get(LEGACY_REQUEST_TYPE) in ("chat", "completion"):
        return "llm"
    return LEGACY_KINDS.get(str(span.attrs.get(LEGACY_KIND)), "other")


def _take(rest: dict[str, Any], *keys: str) -> Any:
    """The first of ``keys`` present in ``rest`` (each found key is removed: it is used, not extra)."""
    found = None
    for key in keys:
        if key in rest:
            value = rest.pop(key)
            if found is None and value is not None:
                found = value
    return found


def _json_or_text(value: Any) -> Any:
    """A JSON string decoded (tool arguments are usually JSON text), any other value as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer() and value >= 0:
        return int(value)
    return None


def oi_messages(rest: dict[str, Any], direction: str) -> list[dict[str, Any]]:
    """OpenInference ``llm.<direction>_messages.*`` as ``[{role, content, tool_calls}]`` (keys removed)."""
    messages: dict[int, dict[str, Any]] = {}
    for key in [k for k in rest if k.startswith(f"llm.{direction}_messages.")]:
        match = _OI_MESSAGE.match(key)
        if match is None or match.group(1) != direction:
            continue
        value = rest.pop(key)
        msg = messages.setdefault(int(match.group(2)), {})
        field = match.group(3)
        call = _OI_TOOL_CALL.match(field)
        part = _OI_CONTENTS.match(field)
        if call is not None:
            calls = msg.setdefault("_calls", {})
            calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        elif part is not None and part.group(2) == "text":
            msg.setdefault("_parts", {})[int(part.group(1))] = value
        elif field in ("role", "content", "name", "tool_call_id"):
            msg[field] = value
    out = []
    for _, msg in sorted(messages.items()):
        if "content" not in msg and msg.get("_parts"):
            msg["content"] = "\n".join(str(v) for _, v in sorted(msg["_parts"].items()))
        msg.pop("_parts", None)
        calls = msg.pop("_calls", {})
        if calls:
            msg["tool_calls"] = [
                _drop_none(
                    {
                        "name": c.get("function.name"),
                        "arguments": _json_or_text(c.get("function.arguments")),
                        "id": c.get("id"),
                    }
                )
                for _, c in sorted(calls.items())
            ]
        out.append(msg)
    return out


def genai_messages(rest: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON text of ``[{role, parts}]``) as
    ``[{role, content, tool_calls}]`` (key removed)."""
    raw = _json_or_text(rest.pop(key, None))
    if not isinstance(raw, list):
        return []
    out = []
    for msg in raw:
        if not isinstance(msg, dict):
            continue
        texts, calls = [], []
        for part in msg.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                texts.append(str(part.get("content") or ""))
            elif part.get("type") == "tool_call":
                calls.append(
                    _drop_none({"name": part.get("name"), "arguments": part.get("arguments"), "id": part.get("id")})
                )
        item: dict[str, Any] = {"role": msg.get("role"), "content": "\n".join(texts) if texts else None}
        if calls:
            item["tool_calls"] = calls
        out.append(item)
    return out


def legacy_messages(rest: dict[str, Any], direction: str) -> list[dict[str, Any]]:
    """The earlier GenAI ``gen_ai.<prompt|completion>.N.{role,content,tool_calls.M.*}`` attributes as
    ``[{role, content, tool_calls}]`` (keys removed)."""
    messages: dict[int, dict[str, Any]] = {}
    for key in [k for k in rest if k.startswith(f"gen_ai.{direction}.")]:
        match = _LEGACY_MESSAGE.match(key)
        if match is None:
            continue
        value = rest.pop(key)
        msg = messages.setdefault(int(match.group(2)), {})
        call = _LEGACY_TOOL_CALL.match(match.group(3))
        if call is not None:
            msg.setdefault("_calls", {}).setdefault(int(call.group(1)), {})[call.group(2)] = value
        elif match.group(3) in ("role", "content"):
            msg[match.group(3)] = value
    out = []
    for _, msg in sorted(messages.items()):
        calls = msg.pop("_calls", {})
        if calls:
            msg["tool_calls"] = [
                _drop_none({"name": c.get("name"), "arguments": _json_or_text(c.get("arguments")), "id": c.get("id")})
                for _, c in sorted(calls.items())
            ]
        out.append(msg)
    return out


def span_error(span: Span, rest: dict[str, Any]) -> str | None:
    """The span's error: its ERROR status message, its exception events, or the GenAI ``error.type``."""
    parts = []
    for name, _, attrs in span.events:
        if name == "exception":
            kind, message = attrs.get("exception.type"), attrs.get("exception.message")
            parts.append(": ".join(str(p) for p in (kind, message) if p))
    error_type = rest.pop("error.type", None)
    if span.status_code == STATUS_ERROR:
        parts.insert(0, span.status_message or str(error_type or "error"))
    elif error_type is not None:
        parts.append(str(error_type))
    return "; ".join(dict.fromkeys(p for p in parts if p)) or None


def llm_step(span: Span, *, keep_input: bool) -> dict[str, Any]:
    """A native ``model`` step from an LLM span: output text, requested tool calls, tokens, model, latency."""
    rest = dict(span.attrs)
    _take(rest, OI_KIND, GENAI_OP)
    inputs = (
        oi_messages(rest, "input") or genai_messages(rest, "gen_ai.input.messages") or legacy_messages(rest, "prompt")
    )
    outputs = (
        oi_messages(rest, "output")
        or genai_messages(rest, "gen_ai.output.messages")
        or legacy_messages(rest, "completion")
    )
    _take(rest, LEGACY_REQUEST_TYPE)
    out_text = "\n".join(str(m["content"]) for m in outputs if m.get("content")) or None
    input_value = _take(rest, "input.value")
    if outputs or rest.get("output.mime_type") == "application/json":
        # the output messages say what the model said (a turn that only asks for a tool says nothing); the raw
        # response (OpenInference's output.value: the provider's HTTP response JSON) stays in the attributes
        content = out_text
    else:
        content = _as_text(_take(rest, "output.value"))
        _take(rest, "output.mime_type")
    _take(rest, "input.mime_type")
    step: dict[str, Any] = {
        "kind": "model",
        "content": content,
        "input_tokens": _int_or_none(_take(rest, *LLM_TOKENS_IN)),
        "output_tokens": _int_or_none(_take(rest, *LLM_TOKENS_OUT)),
        **{field: _int_or_none(_take(rest, *keys)) for field, keys in TOKEN_DETAILS.items()},
        "latency_s": (span.end_ns - span.start_ns) / 1e9,
        "error": span_error(span, rest),
        "model": _take(rest, *MODEL_KEYS),
        "span_id": span.span_id,
        "span_name": span.name,
    }
    calls = [c for m in outputs for c in m.get("tool_calls", [])]
    if calls:
        step["tool_calls"] = calls
    if keep_input:  # the first model call's prompt is the task as the agent saw it; later ones repeat it
        step["input_messages"] = inputs or None
        step["input"] = input_value if not inputs else None
    elif inputs:
        step["n_input_messages"] = len(inputs)
    cost = rest.get("llm.cost.total")
    step["cost_usd"] = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    rest.pop("llm.cost.total", None)
    step["attributes"] = rest or None
    return _drop_none(step)


def tool_step(span: Span, cls: str) -> dict[str, Any]:
    """A native ``tool_call`` step from a tool (or retriever) span: tool name, arguments, result, error."""
    rest = dict(span.attrs)
    _take(rest, OI_KIND, GENAI_OP)
    _take(rest, LEGACY_KIND)
    name = _take(rest, "tool.name", "gen_ai.tool.name", "traceloop.entity.name") or span.name or cls
    args = _take(rest, "gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input")
    result = _take(rest, "gen_ai.tool.call.result", "output.value", "traceloop.entity.output")
    if result is None and cls == "retriever":
        docs = sorted(k for k in rest if k.startswith("retrieval.documents."))
        result = json.dumps({k: rest.pop(k) for k in docs}, ensure_ascii=False) if docs else None
    _take(rest, "input.mime_type", "output.mime_type")
    step: dict[str, Any] = {
        "kind": "tool_call",
        "tool": str(name),
        "args": _json_or_text(args),
        "result": _as_text(result),
        "latency_s": (span.end_ns - span.start_ns) / 1e9,
        "error": span_error(span, rest),
        "call_id": _take(rest, "gen_ai.tool.call.id", "tool_call.id", "tool.id"),
        "span_id": span.span_id,
        "span_name": span.name,
        "attributes": rest or None,
    }
    if cls == "retriever":
        step["span_kind"] = "RETRIEVER"
    return _drop_none(step)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def evaluations(span: Span, cls: str) -> list[Evaluation]:
    """Evaluation results a span carries: OpenInference feedback attributes (``evaluations.N.evaluation.*``,
    ``annotations.N.annotation.*``, and ``evaluation.*`` on an EVALUATOR span, whose ``output.value`` is the
    score when no ``evaluation.score`` is given) and GenAI ``gen_ai.evaluation.result`` events."""
    found: list[Evaluation] = []
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in span.attrs.items():
        match = _OI_FEEDBACK.match(key)
        if match is not None:
            groups.setdefault((match.group(1), int(match.group(2))), {})[match.group(4)] = value
    for (_, _), fields in sorted(groups.items()):
        found.append(_evaluation(fields, span.span_id, span.start_ns, span.name))
    if cls == "evaluator":
        fields = {k.split(".", 1)[1]: v for k, v in span.attrs.items() if k.startswith("evaluation.")}
        if "score" not in fields and _number(span.attrs.get("output.value")) is not None:
            fields["score"] = span.attrs["output.value"]
        found.append(_evaluation(fields, span.span_id, span.end_ns, span.name))
    for name, when, attrs in span.events:
        if name == "gen_ai.evaluation.result":
            fields = {
                "name": attrs.get("gen_ai.evaluation.name"),
                "score": attrs.get("gen_ai.evaluation.score.value"),
                "label": attrs.get("gen_ai.evaluation.score.label"),
                "explanation": attrs.get("gen_ai.evaluation.explanation"),
            }
            found.append(_evaluation(fields, span.span_id, when, name))
    return found


LABEL_SCORES = {"correct": 1.0, "pass": 1.0, "passed": 1.0, "true": 1.0, "yes": 1.0}
LABEL_SCORES |= {"incorrect": 0.0, "fail": 0.0, "failed": 0.0, "false": 0.0, "no": 0.0}


def _evaluation(fields: dict[str, Any], span_id: str, when: int, fallback_name: str) -> Evaluation:
    label = fields.get("label")
    score = _number(fields.get("score"))
    if score is None and isinstance(label, str):
        score = LABEL_SCORES.get(label.strip().lower())
    explanation = fields.get("explanation")
    return Evaluation(
        name=str(fields.get("name") or fallback_name or "evaluation"),
        score=score,
        label=None if label is None else str(label),
        explanation=None if explanation is None else str(explanation),
        span_id=span_id,
        time_ns=when,
    )

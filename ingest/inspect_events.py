"""Inspect AI sample events -> native steps: the solver's model turns, tool calls and errors; the grader's calls apart.

Split from ``ingest/inspect_log.py`` (the log and its records) by record kind: this module reads a sample's
``events`` (or old ``transcript.events``, or ``messages`` without events) and token usage.
"""

from __future__ import annotations

import json
from typing import Any

from ingest.cost import Tokens
from ingest.inspect_usage import BadCount, call_cost, call_tokens, count, provider_of, usage_totals

__all__ = ["BadCount"]  # read through this module by the samples reader

# The fields of Inspect's ModelEvent / ToolEvent / ErrorEvent (0.3.285, plus older names): any other field of such
# an event is kept in the step's extra (``inspect_extra``), never dropped.
_EVENT_BASE = "uuid span_id timestamp working_start metadata pending event"
KNOWN_EVENT_FIELDS = {
    "model": frozenset(
        f"""{_EVENT_BASE} model role requested_model input input_refs tools tool_choice config output retries
        request_ids error traceback traceback_ansi cache call completed working_time""".split()
    ),
    "tool": frozenset(
        f"""{_EVENT_BASE} type id function arguments view result truncated error events completed working_time agent
        agent_span_id failed message_id internal""".split()
    ),
    "error": frozenset(_EVENT_BASE.split() + ["error"]),
}


def as_obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (logs omit or null out optional parts)."""
    return value if isinstance(value, dict) else {}


def as_seq(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def sample_events(sample: dict[str, Any]) -> list[Any]:
    """A sample's events: ``events``, or in old logs ``transcript.events``."""
    events = sample.get("events")
    if events is None:
        events = as_obj(sample.get("transcript")).get("events")
    return as_seq(events)


def content_text(value: Any, attachments: dict[str, Any]) -> str | None:
    """Content (string or list of content parts) as text, resolving ``attachment://`` references."""
    if value is None:
        return None
    if isinstance(value, str):
        for scheme in ("attachment://", "tc://"):  # tc:// is the old transcript's content pool
            if value.startswith(scheme):
                return str(attachments.get(value[len(scheme) :], value))
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict):
                parts.append(
                    content_text(part.get("text") or part.get("reasoning") or part.get("content"), attachments) or ""
                )
            else:
                parts.append(content_text(part, attachments) or "")
        return "\n".join(p for p in parts if p)
    return json.dumps(value, ensure_ascii=False)


def _usage(model_usage: Any, version: tuple[int, ...] | None) -> dict[str, Any]:
    """Tokens and cost summed over every model the sample used (``model_usage``: one entry per model)."""
    if not isinstance(model_usage, dict) or not model_usage:
        return {}
    calls = []
    for name, usage in model_usage.items():
        if isinstance(usage, dict):
            tokens = call_tokens(usage, f"model_usage.{name}", provider_of(name), version)
            calls.append((tokens, call_cost(usage, tokens, name, None, None), str(name)))
    return usage_totals(calls)


GRADING_SPANS = ("scorer", "scorers")


def _is_grading_open(ev: dict[str, Any]) -> bool:
    """A scorer span (``span_begin`` of type scorer/scorers) or an old-style scorer ``step`` beginning."""
    if ev.get("event") == "span_begin":
        return ev.get("type") in GRADING_SPANS
    return ev.get("event") == "step" and ev.get("type") == "scorer" and ev.get("action") == "begin"


def _is_grading_close(ev: dict[str, Any], open_ids: list[Any]) -> bool:
    if ev.get("event") == "span_end":
        return ev.get("id") in open_ids
    return ev.get("event") == "step" and ev.get("type") == "scorer" and ev.get("action") == "end"


def split_events(events: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(solver events, grading events)``: whatever happens inside a scorer span belongs to the grader.

    Inspect scores a sample after its solver, so the events inside a scorer span are contiguous; model calls
    there are the grader's (``model_graded_qa``), never the agent's turns.
    """
    solver: list[dict[str, Any]] = []
    grading: list[dict[str, Any]] = []
    open_ids: list[Any] = []
    depth = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        if _is_grading_open(ev):
            depth += 1
            open_ids.append(ev.get("id"))
        elif depth and _is_grading_close(ev, open_ids):
            depth -= 1
            if ev.get("event") == "span_end":
                open_ids.remove(ev.get("id"))
        (grading if depth else solver).append(ev)
    return solver, grading


def steps_from_sample(
    sample: dict[str, Any], att: dict[str, Any], version: tuple[int, ...] | None = None
) -> list[dict[str, Any]]:
    """Steps from the solver's events (model turns, tool calls, errors); from messages without events.

    Scorer spans are left out: ``grading_of`` reads them.
    """
    solver, _ = split_events(sample_events(sample))
    steps: list[dict[str, Any]] = []
    rnd = 0
    for ev in solver:
        kind = ev.get("event")
        if kind == "model":
            rnd += 1
            steps.append(_model_step(ev, rnd, att, version) | _event_extra(ev))
        elif kind == "tool":
            steps.append(
                {
                    "round": rnd,
                    "kind": "tool_call",
                    "tool": ev.get("function"),
                    "args": ev.get("arguments"),
                    "result": content_text(ev.get("result"), att) or "",
                    "latency_s": ev.get("working_time"),
                    "error": _err(ev.get("error")),
                }
                | _event_extra(ev)
            )
        elif kind == "error":
            steps.append({"round": rnd, "kind": "error", "error": _err(ev.get("error")) or "error"} | _event_extra(ev))
    if not steps:
        steps = _steps_from_messages(sample.get("messages"), att)
    _mark_final(steps)
    return [{k: v for k, v in s.items() if v is not None} for s in steps]


def _event_extra(ev: dict[str, Any]) -> dict[str, Any]:
    """``{"inspect_extra": {...}}`` with the event's fields this reader does not know, or nothing."""
    known = KNOWN_EVENT_FIELDS.get(str(ev.get("event")), frozenset())
    unknown = {k: v for k, v in ev.items() if k not in known}
    return {"inspect_extra": unknown} if unknown else {}


def _call(ev: dict[str, Any], version: tuple[int, ...] | None) -> tuple[Tokens, tuple[float, str] | None]:
    """A model event's tokens (input with its cached parts, as Inspect counts them) and its cost, or None."""
    output = as_obj(ev.get("output"))
    usage = as_obj(output.get("usage"))
    tokens = call_tokens(usage, "events[].output.usage", provider_of(ev.get("model")), version)
    return tokens, call_cost(usage, tokens, ev.get("model"), output.get("model"), ev.get("timestamp"))


def _model_step(ev: dict[str, Any], rnd: int, att: dict[str, Any], version: tuple[int, ...] | None) -> dict[str, Any]:
    output = as_obj(ev.get("output"))
    message = as_obj(as_obj((as_seq(output.get("choices")) or [{}])[0]).get("message"))
    tokens, cost = _call(ev, version)
    return {
        "round": rnd,
        "kind": "model",
        "content": content_text(message.get("content"), att),
        "input_tokens": tokens.input,
        "output_tokens": tokens.output,
        "cache_read_tokens": tokens.cache_read,
        "cache_write_tokens": tokens.cache_write,
        "cost_usd": None if cost is None else cost[0],
        "cost_source": None if cost is None else cost[1],
        "latency_s": output.get("time", ev.get("working_time")),
        "error": _err(ev.get("error")),
        "n_tool_calls": len(as_seq(message.get("tool_calls"))),
    }


CALL_DETAILS = ("cache_read_tokens", "cache_write_tokens", "cost_usd", "cost_source")  # a call's, when it has them


def _token_sums(model_events: list[dict[str, Any]], version: tuple[int, ...] | None) -> dict[str, Any]:
    """Input/output tokens over model events, and their cost when every call has one (``usage_totals``)."""
    return usage_totals([(*_call(ev, version), str(ev.get("model") or "(no model name)")) for ev in model_events])


def grading_of(
    sample: dict[str, Any], att: dict[str, Any], version: tuple[int, ...] | None = None
) -> dict[str, Any] | None:
    """The grader's model calls and their tokens (kept apart from the agent's), or None without any."""
    _, grading = split_events(sample_events(sample))
    calls = [ev for ev in grading if ev.get("event") == "model"]
    if not calls:
        return None
    turns = [
        {
            "model": ev.get("model"),
            **{
                k: v
                for k, v in _model_step(ev, 0, att, version).items()
                if k not in ("round", "kind") and (v is not None or k not in CALL_DETAILS)
            },
        }
        for ev in calls
    ]
    return {"model_calls": turns, **_token_sums(calls, version)}


def agent_usage(sample: dict[str, Any], version: tuple[int, ...] | None = None) -> dict[str, Any]:
    """The agent's tokens and cost: its own model calls when the log has events, else ``model_usage``; ``version``:
    the inspect-ai version that wrote the log (``inspect_usage.inspect_version``), which says how it counted input.

    Raises:
        BadCount: a token count is not a whole number (its JSON path below the sample in ``args[0]``).
    """
    solver, grading = split_events(sample_events(sample))
    calls = [ev for ev in solver if ev.get("event") == "model"]
    if calls:
        return _token_sums(calls, version)
    if any(ev.get("event") == "model" for ev in grading):
        return {}  # only the grader's calls were logged: model_usage would credit them to the agent
    return _usage(sample.get("model_usage"), version)


TOKEN_DETAILS = ("input_tokens_cache_read", "input_tokens_cache_write", "reasoning_tokens")


def token_details(sample: dict[str, Any]) -> dict[str, int]:
    """The agent's cache-read, cache-write and reasoning tokens (Inspect's ``ModelUsage`` fields beside input and
    output), summed like ``agent_usage``: over its own model calls when the log has events, else ``model_usage``.

    Raises:
        BadCount: a count is not a whole number.
    """
    solver, grading = split_events(sample_events(sample))
    calls = [ev for ev in solver if ev.get("event") == "model"]
    if calls:
        usages = [("events[].output.usage", as_obj(as_obj(ev.get("output")).get("usage"))) for ev in calls]
    elif any(ev.get("event") == "model" for ev in grading):
        return {}
    else:
        usages = [(f"model_usage.{m}", as_obj(u)) for m, u in as_obj(sample.get("model_usage")).items()]
    totals: dict[str, int] = {}
    for where, usage in usages:
        for key in TOKEN_DETAILS:
            n = count(usage.get(key), f"{where}.{key}")
            if n is not None:
                totals[key] = totals.get(key, 0) + n
    return totals


def _err(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or json.dumps(error))
    return str(error)


def _steps_from_messages(messages: Any, att: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    by_call: dict[str, int] = {}
    rnd = 0
    for msg in messages if isinstance(messages, list) else []:
        if not isinstance(msg, dict) or msg.get("role") in ("system", "user"):
            continue
        if msg.get("role") == "assistant":
            rnd += 1
            calls = msg.get("tool_calls") or []
            steps.append(
                {
                    "round": rnd,
                    "kind": "model",
                    "content": content_text(msg.get("content"), att),
                    "n_tool_calls": len(calls),
                }
            )
            for call in calls:
                if isinstance(call, dict):
                    by_call[str(call.get("id"))] = len(steps)
                    steps.append(
                        {"round": rnd, "kind": "tool_call", "tool": call.get("function"), "args": call.get("arguments")}
                    )
        elif msg.get("role") == "tool":
            ix = by_call.get(str(msg.get("tool_call_id")))
            if ix is not None:
                steps[ix]["result"] = content_text(msg.get("content"), att) or ""
                steps[ix]["error"] = _err(msg.get("error"))
    return steps


def _mark_final(steps: list[dict[str, Any]]) -> None:
    """The last model turn that called no tool and said something is the final answer."""
    for step in reversed(steps):
        if step["kind"] == "model":
            if not step.get("n_tool_calls") and step.get("content"):
                step["kind"] = "final"
            break
    for step in steps:
        step.pop("n_tool_calls", None)

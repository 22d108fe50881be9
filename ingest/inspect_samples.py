"""Inspect samples -> task and attempt records: each sample is a task, each sample x epoch an attempt (``sample =
epoch - 1``) with its score, tokens, latency, status and steps; the fields this reader does not map are kept.

Split from ``ingest/inspect_log.py`` (the log and its run) by record kind, beside ``inspect_events`` (steps) and
``inspect_scores`` (scores).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ingest.errors import ProblemCollector
from ingest.inspect_events import (
    BadCount,
    agent_usage,
    as_obj,
    content_text,
    grading_of,
    sample_events,
    steps_from_sample,
    token_details,
)
from ingest.inspect_scores import sample_scores

KNOWN_SAMPLE = frozenset(
    [
        "id",
        "epoch",
        "input",
        "choices",
        "target",
        "sandbox",
        "files",
        "setup",
        "messages",
        "output",
        "scores",
        "metadata",
        "store",
        "events",
        "model_usage",
        "total_time",
        "working_time",
        "uuid",
        "error",
        "error_retries",
        "attachments",
        "limit",
        "invalidation",
        "total_tokens",
        "started_at",
        "completed_at",
        "timelines",
        "events_data",
        "transcript",  # old layout of events (read through _events)  # the pool of messages events point into (0.3.2xx .eval): its content is read as steps
    ]
)
KNOWN_EVENTS = frozenset(
    [
        "sample_init",
        "sample_limit",
        "sandbox",
        "state",
        "store",
        "model",
        "tool",
        "approval",
        "input",
        "score",
        "score_edit",
        "error",
        "logger",
        "info",
        "step",
        "subtask",
        "span_begin",
        "span_end",
        "compaction",
        "checkpoint",
    ]
)


@dataclass
class SampleContext:
    """What every sample of one log needs: names, the headline score and its scale, where problems go."""

    benchmark: str
    run_id: str
    headline: str | None
    scale: str
    problems: ProblemCollector
    inspect_version: tuple[int, ...] | None = None  # which says how its model calls counted cached input
    warned: set[str] = field(default_factory=set)

    def warn_once(self, key: str, loc: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.problems.warn(loc, message)


def unknown_fields(obj: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Fields this reader does not map: kept (in ``extra``), never dropped."""
    return {k: v for k, v in obj.items() if k not in known}


def sample_records(loc: str, sample: dict[str, Any], ctx: SampleContext) -> Iterator[tuple[str, dict[str, Any]]]:
    """The task record and the attempt record of one sample (``loc``: its location); problems go to ``ctx``."""
    if sample.get("id") is None:
        ctx.problems.add(loc, "id", "missing sample id")
        return
    if _bad_types(loc, sample, ctx.problems):
        return
    # old logs (before ~0.3.50) keep events and their content pool under ``transcript``
    att = {**as_obj(as_obj(sample.get("transcript")).get("content")), **as_obj(sample.get("attachments"))}
    task_id = str(sample["id"])
    target = sample.get("target")
    yield (
        loc,
        {
            "record": "task",
            "benchmark": ctx.benchmark,
            "task_id": task_id,
            "query": content_text(sample.get("input"), att),
            "reference_answer": content_text(target, att)
            if not isinstance(target, list)
            else json.dumps(target, ensure_ascii=False),
        },
    )
    epoch = sample.get("epoch", 1)
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        ctx.problems.add(f"{loc}.epoch", "epoch", f"expected an integer >= 1, got {type(epoch).__name__} {epoch!r}")
        return
    entries = sample_scores(sample.get("scores"))
    for entry in entries:
        if entry.is_read_as_zero:
            ctx.warn_once(
                f"zero:{entry.name}",
                f"{loc}.scores.{entry.scorer}.value",
                f"scorer {entry.name!r} gave {json.dumps(entry.raw)[:80]}, which Inspect reads as 0 "
                "(value_to_float); stored as 0 with the value as written",
            )
    head = next((e for e in entries if e.name == ctx.headline), None)
    value = None if head is None else head.value
    status = _status(sample)
    attempt: dict[str, Any] = {
        "record": "attempt",
        "run_id": ctx.run_id,
        "task_id": task_id,
        "sample": epoch - 1,
        "score": value if ctx.scale != "raw" else None,
        "raw_score": value,
        "status": status,
        "latency_s": sample.get("total_time"),
        "answer": head.answer if head is not None and head.answer is not None else _answer(sample, att),
        "scores": [e.as_record(is_headline=e is head) for e in entries] or None,
        "scorer": ctx.headline,
        "score_value": None if head is None else head.raw,
        "explanation": None if head is None else head.explanation,
        "working_time_s": sample.get("working_time"),
        "inspect_uuid": sample.get("uuid"),
        "limit": sample.get("limit") if isinstance(sample.get("limit"), dict) else None,
        "inspect_extra": _sample_extra(sample) or None,
        "unknown_events": [
            e for e in sample_events(sample) if isinstance(e, dict) and e.get("event") not in KNOWN_EVENTS
        ]
        or None,
    }
    if value is not None and ctx.scale == "raw":
        attempt["is_scored"] = False  # on its own scale: no [0, 1] score, the raw value is kept
    elif value is None and status == "completed":
        # Inspect writes samples before scoring them (``--no-score``) or keeps a NaN: an empty score, not a 0
        attempt["is_scored"] = False
        ctx.problems.warn(
            f"{loc}.scores",
            f"sample {task_id!r} epoch {epoch} has no score{f' for {ctx.headline!r}' if ctx.headline else ''}: "
            "stored with an empty score (run `inspect score` on the log to score it)",
        )
    try:  # every token count is read here once: a bad one refuses the sample with its path
        attempt.update(agent_usage(sample, ctx.inspect_version))
        details = token_details(sample)
        if details:
            attempt["inspect_extra"] = {**(attempt["inspect_extra"] or {}), "token_details": details}
        attempt["grading"] = grading_of(sample, att, ctx.inspect_version)
        attempt["steps"] = steps_from_sample(sample, att, ctx.inspect_version)
    except BadCount as exc:
        ctx.problems.add(f"{loc}.{exc.args[0]}", "tokens", "expected a whole number of tokens")
        return
    if isinstance(sample.get("error"), dict):
        attempt["error"] = sample["error"].get("message")
    yield loc, {k: v for k, v in attempt.items() if v is not None}


# Sample fields Inspect defines that Runlens does not map but keeps (the attempt's ``inspect_extra``).
KEPT_SAMPLE_FIELDS = ("metadata", "store", "error_retries")


def _sample_extra(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample's fields this reader does not map, and its metadata, store and error retries (when not empty)."""
    kept = {k: sample[k] for k in KEPT_SAMPLE_FIELDS if sample.get(k) not in (None, {}, [])}
    return kept | unknown_fields(sample, KNOWN_SAMPLE)


SAMPLE_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str, int),
    "total_time": (int, float),
    "working_time": (int, float),
    "scores": (dict,),
    "events": (list,),
    "messages": (list,),
    "model_usage": (dict,),
}


def _bad_types(loc: str, sample: dict[str, Any], problems: ProblemCollector) -> bool:
    """True (with problems at Inspect's JSON path, ``$.samples[3].total_time``) when a field has the wrong type."""
    bad = False
    for name, types in SAMPLE_TYPES.items():
        value = sample.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            expected = " or ".join("number" if t in (int, float) else t.__name__ for t in types)
            problems.add(
                f"{loc}.{name}",
                name,
                f"expected {expected.replace('number or number', 'number')}, got {type(value).__name__}",
            )
            bad = True
    return bad


def _status(sample: dict[str, Any]) -> str:
    """``timeout`` for any limit Inspect hit (message, token, time, working, cost, ...; the kind is kept in the
    attempt's ``limit``), ``crashed`` for an error, else ``completed``."""
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        return "timeout"
    if sample.get("error"):
        return "crashed"
    return "completed"


def _answer(sample: dict[str, Any], att: dict[str, Any]) -> str | None:
    output = as_obj(sample.get("output"))
    if isinstance(output.get("completion"), str) and output["completion"]:
        return output["completion"]
    for choice in output.get("choices") or []:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            return content_text(choice["message"].get("content"), att)
    return None

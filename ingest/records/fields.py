"""What every record kind shares: the fields each kind defines, and the checkers that read one field.

Each checker returns the normalised value or raises ``_Bad(field, reason)``, which the normaliser collects as a
problem at the record's location (it never escapes the package).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import orjson

RECORD_KINDS = ("benchmark", "task", "run", "attempt", "rating")
SCORING = ("binary", "graded", "continuous")
AGENT_KINDS = ("llm", "agent", "framework", "human")
STATUSES = ("completed", "tool_failure", "timeout", "crashed", "refused")
RATER_KINDS = ("human", "llm")
DEFAULT_THRESHOLD = {"binary": 1.0, "graded": 0.5, "continuous": 0.5}
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1  # the INTEGER and BIGINT columns the values go to
INLINE_RESULT_CHARS = 1024  # longer tool results are stored once in `texts`, keyed by hash

BENCHMARK_FIELDS = ("benchmark", "version", "scoring", "pass_threshold", "description", "tool_graph")
TASK_FIELDS = (
    "benchmark",
    "task_id",
    "level",
    "category",
    "capabilities",
    "human_minutes",
    "query",
    "reference_answer",
    "reference_trajectory",
)
RUN_FIELDS = (
    "run_id",
    "benchmark",
    "agent",
    "family",
    "agent_version",
    "kind",
    "eval_date",
    "judge",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "status",
)
ATTEMPT_FIELDS = (
    "run_id",
    "task_id",
    "sample",
    "score",
    "raw_score",
    "passed",
    "answer",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "status",
    "errors",
    "judge",
    "steps",
    "metrics",
    "is_scored",
    "scores",
)
STEP_FIELDS = (
    "round",
    "kind",
    "tool",
    "args",
    "result",
    "content",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "error",
)
RATING_FIELDS = ("run_id", "task_id", "sample", "rater", "rater_kind", "dimension", "value")


class _Fallback(Exception):
    """Internal: a line the fast path decoded needs the general path (which then reports any problem)."""


class _Bad(Exception):
    """Internal: one field of one record is invalid (collected, never escapes this module)."""

    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field_name
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Field checkers: each returns the normalised value or raises _Bad(field, reason)
# ---------------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _ident(rec: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = rec.get(name)
    if value is None:
        if required:
            raise _Bad(name, "missing required field")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Bad(name, f"expected a string, got {_type_name(value)}")
    text = str(value)
    if not text.strip():
        raise _Bad(name, "must not be empty")
    return text


def _text(rec: dict[str, Any], name: str) -> str | None:
    value = rec.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    raise _Bad(name, f"expected a string, got {_type_name(value)}")


def _number(
    rec: dict[str, Any], name: str, *, lo: float | None = None, hi: float | None = None, integer: bool = False
) -> float | int | None:
    value = rec.get(name)
    if value is None:
        return None
    if type(value) is int and integer and (lo is None or value >= lo) and (hi is None or value <= hi):
        return value  # the common case, without the general checks below
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(name, f"expected a number, got {_type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Bad(name, f"{value} is not a finite number")
    if integer and not float(value).is_integer():
        raise _Bad(name, f"expected an integer, got {value}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise _Bad(name, f"{value} is outside {bounds}")
    return int(value) if integer else float(value)


def _enum(rec: dict[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = rec.get(name)
    if value is None:
        return default
    if value not in allowed:
        raise _Bad(name, f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def _bool(rec: dict[str, Any], name: str) -> bool | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _Bad(name, f"expected true or false, got {_type_name(value)}")
    return value


def _str_list(rec: dict[str, Any], name: str) -> list[str] | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(name, "expected an array of strings")
    return value


def _object(rec: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Bad(name, f"expected an object, got {_type_name(value)}")
    return value


def _date(rec: dict[str, Any], name: str) -> dt.date | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(name, f"expected a date 'YYYY-MM-DD', got {_type_name(value)}")
    try:
        if len(value) == 10:
            return dt.date.fromisoformat(value)
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if stamp.tzinfo is not None:
            stamp = stamp.astimezone(dt.UTC)
        return stamp.date()
    except ValueError:
        raise _Bad(name, f"{value!r} is not a date 'YYYY-MM-DD' or an ISO timestamp") from None


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):  # integers beyond 64 bits, exotic values
        return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _extra(rec: dict[str, Any], known: tuple[str, ...]) -> str | None:
    """The fields of ``rec`` the format does not define, as JSON text (kept, never dropped); None when none."""
    allowed = _KNOWN_SETS.get(known)
    if allowed is None:
        allowed = _KNOWN_SETS[known] = frozenset((*known, "record"))
    if allowed.issuperset(rec):
        return None
    return _json_text({k: v for k, v in rec.items() if k not in allowed})


_KNOWN_SETS: dict[tuple[str, ...], frozenset[str]] = {}


def _tool_graph(rec: dict[str, Any]) -> dict[str, list[str]] | None:
    graph = _object(rec, "tool_graph")
    if graph is None:
        return None
    for tool, prereqs in graph.items():
        if not isinstance(prereqs, list) or not all(isinstance(p, str) for p in prereqs):
            raise _Bad(f"tool_graph.{tool}", "expected an array of prerequisite tool names")
    return graph

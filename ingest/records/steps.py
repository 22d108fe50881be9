"""The steps of an attempt: step rows from a decoded record (each step checked) or from a fast-path line (the
hot loop of ingest); a long tool result is kept once in ``texts``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

from ingest.fastpath import FastStep
from ingest.records.fields import (
    INLINE_RESULT_CHARS,
    INT32_MAX,
    INT64_MAX,
    STEP_FIELDS,
    _Bad,
    _extra,
    _Fallback,
    _json_text,
    _number,
    _text,
    _type_name,
)


def _record_steps(
    steps: list[Any] | tuple[()], ix: int, keep: Callable[[str], str]
) -> tuple[list[tuple[Any, ...]], int, int]:
    """The step rows of attempt ``ix`` from a decoded record, each step checked, with the attempt's counts of tool
    calls and rounds (counted in the same pass); ``_Bad`` names the step (``steps[2].kind``). ``keep`` stores a long
    tool result apart and returns its key."""
    rows = []
    n_tool = 0
    rounds: set[int] = set()
    for pos, raw in enumerate(steps):
        if not isinstance(raw, dict):
            raise _Bad(f"steps[{pos}]", f"expected an object, got {_type_name(raw)}")
        try:
            rnd, kind, tool, args, content, result, in_tok, out_tok, latency, error, extra = _step(raw)
        except _Bad as bad:
            raise _Bad(f"steps[{pos}].{bad.field}", bad.reason) from None
        chars = digest = None
        if result is not None:
            chars = len(result)
            if chars > INLINE_RESULT_CHARS:
                digest, result = keep(result), None
        rows.append(
            (ix, pos, rnd, kind, tool, args, content, result, digest, chars, in_tok, out_tok, latency, error, extra)
        )
        if kind == "tool_call":
            n_tool += 1
        rounds.add(pos + 1 if rnd is None else rnd)
    return rows, n_tool, len(rounds)


def _fast_steps(
    steps: list[FastStep] | tuple[()], ix: int, keep: Callable[[str], str]
) -> tuple[list[tuple[Any, ...]], int, int]:
    """``_record_steps`` for steps the fast path decoded: the hot loop of ingest. ``_Fallback`` where
    ``_record_steps`` would find a problem (the steps appended so far are then dropped by ``feed``)."""
    rows = []
    n_tool = 0
    rounds: set[int] = set()
    for pos, step in enumerate(steps):
        rnd, tool, kind, args, content, result, error = (
            step.round,
            step.tool,
            step.kind,
            step.args,
            step.content,
            step.result,
            step.error,
        )
        if kind is None:
            kind = "tool_call" if tool else "message"
        elif not kind:
            raise _Fallback
        if args is not None:
            try:  # (``_fast_json`` inline: the one call of every step)
                args = orjson.dumps(args).decode("utf-8")
            except (TypeError, orjson.JSONEncodeError):
                raise _Fallback from None
        if content is not None and content.__class__ is not str:
            content = _fast_json(content)
        if error is not None and error.__class__ is not str:
            error = _fast_json(error)
        chars = digest = None
        if result is not None:
            if result.__class__ is not str:
                result = _fast_json(result)
            chars = len(result)
            if chars > INLINE_RESULT_CHARS:
                digest, result = keep(result), None
        rows.append((
            ix, pos, rnd, kind, tool, args, content, result, digest, chars,
            step.input_tokens, step.output_tokens, step.latency_s, error, None,
        ))  # fmt: skip
        if kind == "tool_call":
            n_tool += 1
        rounds.add(pos + 1 if rnd is None else rnd)
    return rows, n_tool, len(rounds)


_STEP_KNOWN = frozenset(STEP_FIELDS)


def _fast_json(value: Any) -> str:
    """``_json_text`` of a value the fast path decoded; _Fallback for integers beyond 64 bits, which the general
    path reads differently (orjson makes them floats)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        raise _Fallback from None


def _step(raw: dict[str, Any]) -> tuple[Any, ...]:
    """One step's checked fields: round, kind, tool, args, content, result, tokens in and out, latency, error,
    extra."""
    tool = raw.get("tool")
    if tool is not None and not isinstance(tool, str):
        tool = _text(raw, "tool")
    kind = raw.get("kind")
    if kind is None:
        kind = "tool_call" if tool else "message"
    elif not isinstance(kind, str):
        raise _Bad("kind", f"expected a string, got {_type_name(kind)}")
    elif not kind:
        raise _Bad("kind", "must not be empty")
    result = raw.get("result")
    if result is not None and not isinstance(result, str):
        result = _json_text(result)
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        content = _json_text(content)
    error = raw.get("error")
    if error is not None and not isinstance(error, str):
        error = _json_text(error)
    args = raw.get("args")
    extra = None
    if not _STEP_KNOWN.issuperset(raw):
        extra = _extra(raw, STEP_FIELDS)
    rnd = raw.get("round")
    if rnd is not None and (type(rnd) is not int or not 0 <= rnd <= INT32_MAX):
        rnd = _number(raw, "round", lo=0, hi=INT32_MAX, integer=True)
    latency = raw.get("latency_s")
    if latency is not None and (type(latency) is not float or not 0.0 <= latency < math.inf):
        latency = _number(raw, "latency_s", lo=0.0)
    in_tok = raw.get("input_tokens")
    if in_tok is not None and (type(in_tok) is not int or not 0 <= in_tok <= INT64_MAX):
        in_tok = _number(raw, "input_tokens", lo=0, hi=INT64_MAX, integer=True)
    out_tok = raw.get("output_tokens")
    if out_tok is not None and (type(out_tok) is not int or not 0 <= out_tok <= INT64_MAX):
        out_tok = _number(raw, "output_tokens", lo=0, hi=INT64_MAX, integer=True)
    return (
        rnd,
        kind,
        tool,
        None if args is None else _json_text(args),
        content,
        result,
        in_tok,
        out_tok,
        latency,
        error,
        extra,
    )

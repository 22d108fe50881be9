"""Reader of the native run-log format v1 (JSON Lines, see DESIGN.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ingest.errors import ProblemCollector
from ingest.fastpath import decode_attempt


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_JSON_ERRORS: tuple[type[Exception], ...] = (ValueError,)

MAX_LINE_BYTES = 64 * 1024 * 1024  # one record larger than this is refused, not parsed


def detect_native(path: Path, head: bytes) -> bool:
    """True when the file looks like native JSONL: its first non-blank line is an object with `record`."""
    for line in head.splitlines():
        if line.strip():
            try:
                first = json.loads(line)
            except ValueError:
                return b'"record"' in line
            return isinstance(first, dict) and "record" in first
    return False


def parse_native(
    path: Path, data: bytes, problems: ProblemCollector, progress: Any = None
) -> Iterator[tuple[str, Any]]:
    """Yield ``(file:line, record)`` for every line; undecodable lines become problems.

    A record is the line's JSON value, or a :class:`~ingest.fastpath.FastLine` for an attempt the fast path
    decoded (see ``Normaliser.feed``).

    Args:
        path: the file (for locations only).
        data: its bytes.
        problems: where bad lines are reported.
        progress: optional tqdm-like object updated with bytes consumed.
    """
    name = str(path)
    if not data or data.isspace():
        problems.add(f"{name}:1", "-", "empty file: expected JSON Lines records")
        return
    start = 0
    lineno = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        lineno += 1
        raw = data[start:end]
        if progress is not None:
            progress.update(end + 1 - start)
        start = end + 1
        if not raw or raw.isspace():  # no copy of the line, unlike strip()
            continue
        loc = f"{name}:{lineno}"
        if len(raw) > MAX_LINE_BYTES:
            problems.add(loc, "-", f"line of {len(raw):,} bytes exceeds the {MAX_LINE_BYTES:,}-byte limit")
            continue
        fast = decode_attempt(raw)
        if fast is not None:
            yield loc, fast
            continue
        record, reason = load_record(raw)
        if reason is not None:
            problems.add(loc, "-", reason)
            continue
        yield loc, record


def load_record(raw: bytes) -> tuple[Any, str | None]:
    """``(value, None)`` for a line of JSON, ``(None, why not)`` for any other."""
    try:
        return orjson.loads(raw), None  # validates UTF-8 too; the slow path below only explains a refusal
    except orjson.JSONDecodeError:
        reason = _explain(raw)
        if reason is not None:
            return None, reason
    value = json.loads(raw)  # what only the stdlib reads: numbers beyond double range, lone surrogates
    if may_hold_lone_surrogate(raw) and has_lone_surrogate(value):
        return None, LONE_SURROGATE
    return value, None


LONE_SURROGATE = "invalid text: a \\u escape makes a lone UTF-16 surrogate, which is not a character"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
# a high surrogate escape with the low one that should follow it, or a low one on its own
_SURROGATE_PAIR = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(\\u[dD][c-fC-F][0-9a-fA-F]{2})?|(\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def may_hold_lone_surrogate(data: bytes) -> bool:
    """True when JSON text has a surrogate escape (``\\ud800``-``\\udfff``), paired or not: a cheap pre-check."""
    return _SURROGATE_ESCAPE.search(data) is not None


def lone_surrogate_line(data: bytes) -> int:
    """The line of the first lone surrogate escape in JSON text (1 when none is found)."""
    for found in _SURROGATE_PAIR.finditer(data):
        if found.group(2) is not None or found.group(1) is None:
            return data.count(b"\n", 0, found.start()) + 1
    return 1


def has_lone_surrogate(value: Any) -> bool:
    """True when a decoded JSON value holds a string with a lone UTF-16 surrogate (the stdlib reads ``"\\ud800"``
    into one; it is not text, and nothing downstream can store it)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (RecursionError, ValueError):
        return False  # deep, but text: kept (stored through the stdlib encoder)
    return False


def _explain(raw: bytes) -> str | None:
    """Why a line orjson refused is not JSON (UTF-8 first, then the stdlib's line and column); None if it is."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (byte {exc.start + 1} of the line)"
    try:
        json.loads(raw, parse_constant=_reject_constant)
    except _JSON_ERRORS as exc:
        return f"invalid JSON: {exc}"
    except RecursionError:
        return "invalid JSON: nested too deeply"
    return None

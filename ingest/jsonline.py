"""One line of JSON as the readers and the validator take it: parsed fast, or refused with the reason.

Shared by the native reader, the OpenAI-messages reader and the validator, so none of them imports another.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Protocol

import orjson

from ingest.errors import ProblemCollector

# One record (a line of JSON) larger than this is refused before it is copied or parsed: parsing takes several
# times the line in memory, and no real record is this large (an attempt with a 1 MB trajectory is about 1 MB).
MAX_RECORD_BYTES = int(os.environ.get("RUNLENS_MAX_RECORD_BYTES", 64 * 1024 * 1024))


class Readable(Protocol):
    """What a reader of a stream needs of it: a file, or an archive's member as it is decompressed."""

    def read(self, n: int = -1, /) -> bytes: ...


def record_too_long(n_bytes: int) -> str:
    """The reason a record of ``n_bytes`` is refused."""
    return (
        f"line of {n_bytes:,} bytes exceeds the {MAX_RECORD_BYTES:,}-byte limit of one record "
        "(RUNLENS_MAX_RECORD_BYTES); refused without reading it"
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_JSON_ERRORS: tuple[type[Exception], ...] = (ValueError,)


def load_record(raw: bytes) -> tuple[Any, str | None]:
    """``(value, None)`` for a line of JSON, ``(None, why not)`` for any other (a line over ``MAX_RECORD_BYTES``
    included)."""
    if len(raw) > MAX_RECORD_BYTES:
        return None, record_too_long(len(raw))
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


def may_hold_lone_surrogate(data: bytes | bytearray) -> bool:
    """True when JSON text has a surrogate escape (``\\ud800``-``\\udfff``), paired or not: a cheap pre-check."""
    return _SURROGATE_ESCAPE.search(data) is not None


def lone_surrogate_line(data: bytes | bytearray) -> int:
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


def load_json(path: Path, data: bytes | bytearray, problems: ProblemCollector) -> Any:
    """Parse a whole JSON document; a syntax error is reported at ``file:line`` (None returned)."""
    try:
        value = json.loads(data.decode("utf-8-sig"))
        if may_hold_lone_surrogate(data) and has_lone_surrogate(value):
            problems.add(f"{path}:{lone_surrogate_line(data)}", "-", LONE_SURROGATE)
            return None
        return value
    except UnicodeDecodeError as exc:
        problems.add(f"{path}:1", "-", f"not valid UTF-8 (byte {exc.start + 1})")
    except json.JSONDecodeError as exc:
        problems.add(f"{path}:{exc.lineno}", "-", f"invalid JSON (column {exc.colno}): {exc.msg}")
    except RecursionError:
        problems.add(f"{path}:1", "-", "invalid JSON: nested too deeply")
    return None

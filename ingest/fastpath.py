"""The fast path for native attempt lines: decoded and type-checked in C by msgspec.

Attempt records are nearly every line of a real log, and their steps are the millions of rows of an ingest.
A line whose every field has the plain type the format documents (strings, non-negative integers, numbers in
range, no unknown fields) is decoded straight into :class:`FastAttempt`, with no Python dict per record or
step and no per-field checks in Python. Anything else -- another record kind, an unknown field, a number where
a string is expected, a value out of range, a malformed line -- fails this strict decoding and takes the general
path (``orjson`` and the checkers of :mod:`ingest.records`), which accepts the same inputs and explains every
refusal. The two paths give identical rows for every line the fast one accepts (tests/test_ingest_fastpath.py
checks that on generated records), so errors and results never depend on which path a line took.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

NonNegInt = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]  # a BIGINT column
NonNegInt32 = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]  # an INTEGER column
NonNegFloat = Annotated[float, msgspec.Meta(ge=0.0)]
UnitFloat = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class FastStep(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A step whose fields have their documented types (see records.STEP_FIELDS)."""

    round: NonNegInt32 | None = None
    kind: str | None = None
    tool: str | None = None
    args: Any = None
    result: Any = None
    content: Any = None
    input_tokens: NonNegInt | None = None
    output_tokens: NonNegInt | None = None
    latency_s: NonNegFloat | None = None
    error: Any = None


class FastAttempt(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """An attempt record whose fields have their documented types (see records.ATTEMPT_FIELDS)."""

    record: Literal["attempt"]
    run_id: str
    task_id: str
    sample: NonNegInt32 | None = None
    score: bool | UnitFloat | None = None
    raw_score: float | None = None
    passed: bool | None = None
    answer: Any = None
    input_tokens: NonNegInt | None = None
    output_tokens: NonNegInt | None = None
    cost_usd: NonNegFloat | None = None
    latency_s: NonNegFloat | None = None
    status: str | None = None
    errors: list[str] | None = None
    judge: dict[str, Any] | None = None
    steps: list[FastStep] | None = None
    metrics: dict[str, float | None] | None = None


class FastLine:
    """A line decoded by the fast path, with its bytes (re-read by the general path when a check fails)."""

    __slots__ = ("attempt", "raw")

    def __init__(self, attempt: FastAttempt, raw: bytes | memoryview) -> None:
        self.attempt = attempt
        self.raw = raw


class TaskLine:
    """A native line that starts as a task record (``{"record":"task"``), its bytes not yet decoded: the
    normaliser defines a line it has read before (the same bytes) from that line's row, and reads any other by the
    record path (``Normaliser.feed_part``)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


_DECODER = msgspec.json.Decoder(FastAttempt)
_MISSES = (msgspec.MsgspecError, ValueError, RecursionError)  # ValueError: invalid UTF-8


def decode_attempt(raw: bytes | memoryview) -> FastLine | None:
    """The line as a :class:`FastLine`, or None when it is not a plainly typed attempt record. ``raw`` may be a
    view of the line where it was read (no copy): the line's buffer then stays as long as the FastLine."""
    try:
        return FastLine(_DECODER.decode(raw), raw)
    except _MISSES:
        return None

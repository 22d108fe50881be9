"""OTLP trace data -> spans: the OTLP/JSON and OTLP protobuf encodings of ``ExportTraceServiceRequest``.

What is accepted (docs/formats.md, "OpenTelemetry traces"):

- **OTLP/JSON lines**, as the OpenTelemetry Collector's file exporter writes them: one
  ``{"resourceSpans": [...]}`` object per line (lowerCamelCase keys; trace and span ids in hex; 64-bit integers
  as strings or numbers; attribute values as ``AnyValue`` objects). A whole file holding one pretty-printed
  request is read too. snake_case keys and base64 ids (what protobuf's own ``json_format`` writes) are accepted.
- **OTLP protobuf**: the Collector file exporter's ``format: proto`` (each message preceded by its length as a
  4-byte big-endian unsigned integer), one bare message (an OTLP/HTTP request body saved to a file), or messages
  each preceded by a varint length (protobuf's ``writeDelimitedTo``).
- Either, as the file exporter writes it with ``compression: zstd`` (``ingest.otlp_zstd``).

The result is a list of :class:`Span` with the line (JSON) or message number (protobuf) each came from; nothing
here knows about evaluation runs (see ``ingest.otlp``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ingest.errors import ProblemCollector

STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
STATUS_ERROR = 2
MAX_ZSTD_BYTES = 16 * 1024**3  # what a zstd-compressed file may expand to, at most (and half the memory available)
MAX_MESSAGE_BYTES = 256 * 1024 * 1024  # one protobuf message larger than this is not a plausible length prefix


@dataclass
class Span:
    """One span, decoded, with where it came from.

    Attributes:
        line: the file's line (OTLP/JSON) or message number (protobuf), 1-based.
        attrs: attribute values as Python values (AnyValue decoded; arrays as lists, kvlists as dicts).
        resource: the attributes of the span's resource (``service.name`` ...).
        events: ``(name, time_ns, attributes)`` of each span event (exceptions, evaluation results).
    """

    line: int
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    status_code: int = 0
    status_message: str = ""
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    # the span as read (``keep_parts``): its resource, scope and span as compact OTLP/JSON, ids in hex
    part: tuple[bytes, bytes, bytes] | None = field(default=None, repr=False, compare=False)


class BadSpan(ValueError):
    """A span (or request) that cannot be read; ``field`` names the offending key."""

    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field_name
        self.reason = reason

    def __reduce__(self) -> tuple[type[BadSpan], tuple[str, str]]:
        return (BadSpan, (self.field, self.reason))  # raised in a decoding worker process, re-raised here


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def _get(obj: dict[str, Any], camel: str, snake: str | None = None) -> Any:
    """A field by its OTLP/JSON name (lowerCamelCase), else by its protobuf name (snake_case)."""
    if camel in obj:
        return obj[camel]
    return obj.get(snake) if snake else None


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` object as a Python value (int64 strings become ints; bytes stay base64 text)."""
    if not isinstance(value, dict):
        return value
    for key, snake in (("stringValue", "string_value"), ("boolValue", "bool_value"), ("bytesValue", "bytes_value")):
        if key in value or snake in value:
            return _get(value, key, snake)
    if "intValue" in value or "int_value" in value:
        return _int(_get(value, "intValue", "int_value"), "intValue")
    if "doubleValue" in value or "double_value" in value:
        raw = _get(value, "doubleValue", "double_value")
        return float(raw) if isinstance(raw, (int, float, str)) else raw
    if "arrayValue" in value or "array_value" in value:
        inner = _get(value, "arrayValue", "array_value") or {}
        return [any_value(v) for v in (inner.get("values") or [])]
    if "kvlistValue" in value or "kvlist_value" in value:
        inner = _get(value, "kvlistValue", "kvlist_value") or {}
        return key_values(inner.get("values") or [])
    return None  # an empty AnyValue is a null


def key_values(items: Any) -> dict[str, Any]:
    """A list of ``{"key", "value": AnyValue}`` as a dict."""
    if not isinstance(items, list):
        raise BadSpan("attributes", "expected an array of {key, value}")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise BadSpan("attributes", "expected {key, value} objects with a string key")
        out[item["key"]] = any_value(item.get("value"))
    return out


INT64 = (-(2**63), 2**63 - 1)  # intValue, status codes: protobuf int64
UINT64 = (0, 2**64 - 1)  # timestamps: protobuf fixed64 nanoseconds


def _int(raw: Any, name: str, bounds: tuple[int, int] = INT64) -> int:
    """An OTLP/JSON 64-bit integer: a decimal string or a JSON number, within ``bounds`` (int64 unless said).

    A value outside the protobuf type's range (a 5,000-digit timestamp) is a bad span, never a crash: the text is
    checked for length before it is converted."""
    value: int | None = None
    if isinstance(raw, bool):
        value = None
    elif isinstance(raw, int):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        digits = text[1:] if text[:1] == "-" else text
        if digits.isdigit() and digits.isascii() and len(digits) <= 20:  # 2**64 has 20 digits
            value = int(text)
        elif digits.isdigit() and digits.isascii():
            raise BadSpan(name, f"{len(digits):,}-digit integer is outside the 64-bit range")
    if value is None:
        shown = raw if not isinstance(raw, str) or len(raw) <= 40 else f"{raw[:40]}... ({len(raw):,} characters)"
        raise BadSpan(name, f"expected an integer (a number or a decimal string), got {shown!r}")
    if not bounds[0] <= value <= bounds[1]:
        raise BadSpan(name, f"{value} is outside the range [{bounds[0]}, {bounds[1]}]")
    return value


def hex_id(raw: Any, n_bytes: int, name: str) -> str | None:
    """A trace or span id as lowercase hex (None when absent or empty); hex and base64 are accepted."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise BadSpan(name, f"expected a hex string, got {type(raw).__name__}")
    text = raw.strip()
    if len(text) == 2 * n_bytes:
        try:
            bytes.fromhex(text)
            return None if set(text) == {"0"} else text.lower()
        except ValueError:
            pass
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == n_bytes:
        return None if not any(decoded) else decoded.hex()
    raise BadSpan(name, f"{raw!r} is not a {n_bytes}-byte id in hex")


def _status_code(raw: Any) -> int:
    if raw is None:
        return 0
    if isinstance(raw, str) and raw in STATUS_CODES:
        return STATUS_CODES[raw]
    return _int(raw, "status.code")


# ---------------------------------------------------------------------------------------------
# Requests -> spans
# ---------------------------------------------------------------------------------------------


def spans_of_request(request: Any, line: int, *, keep_parts: bool = False) -> Iterator[Span]:
    """The spans of one decoded ``ExportTraceServiceRequest`` (or ``TracesData``) object; with ``keep_parts``
    each span keeps itself as read (``Span.part``: what a trace's spans are stored as, ``ingest.otlp.lines``).

    Raises:
        BadSpan: the request or one of its spans is malformed.
    """
    if not isinstance(request, dict):
        raise BadSpan("-", 'expected an OTLP ExportTraceServiceRequest object ({"resourceSpans": [...]})')
    resource_spans = _get(request, "resourceSpans", "resource_spans")
    if not isinstance(resource_spans, list):
        raise BadSpan("resourceSpans", "missing: not an OTLP trace request (metrics and logs are not read)")
    for rs in resource_spans:
        if not isinstance(rs, dict):
            raise BadSpan("resourceSpans", "expected objects")
        resource = key_values((rs.get("resource") or {}).get("attributes") or [])
        resource_json = compact(rs.get("resource") or {}) if keep_parts else b""
        for ss in _get(rs, "scopeSpans", "scope_spans") or []:
            if not isinstance(ss, dict):
                raise BadSpan("scopeSpans", "expected objects")
            scope = str((ss.get("scope") or {}).get("name") or "")
            scope_json = compact(ss.get("scope") or {}) if keep_parts else b""
            for raw in ss.get("spans") or []:
                span = _span(raw, line, resource, scope)
                if keep_parts:
                    span.part = (resource_json, scope_json, compact(_canonical_span(raw, span)))
                yield span


_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _canonical_span(raw: dict[str, Any], span: Span) -> dict[str, Any]:
    """The span as read, with its ids as lowercase hex under their OTLP/JSON names (a copy only when needed)."""
    if (
        raw.get("traceId") == span.trace_id
        and raw.get("spanId") == span.span_id
        and (raw.get("parentSpanId") or None) == span.parent_id
        and not ("trace_id" in raw or "span_id" in raw or "parent_span_id" in raw)
    ):
        return raw
    out = {k: v for k, v in raw.items() if k not in _ID_KEYS}
    out.update(traceId=span.trace_id, spanId=span.span_id, parentSpanId=span.parent_id or "")
    return out


def compact(obj: Any) -> bytes:
    """Compact JSON, copied to an exact-size object: orjson's own result keeps its larger working buffer's
    allocation (100,000 spans took 385 MB that way, against none extra copied)."""
    return bytes(memoryview(orjson.dumps(obj)))


def _span(raw: Any, line: int, resource: dict[str, Any], scope: str) -> Span:
    if not isinstance(raw, dict):
        raise BadSpan("spans", "expected span objects")
    trace_id = hex_id(_get(raw, "traceId", "trace_id"), 16, "traceId")
    if trace_id is None:
        raise BadSpan("traceId", "missing: every span needs its 16-byte trace id")
    span_id = hex_id(_get(raw, "spanId", "span_id"), 8, "spanId")
    if span_id is None:
        raise BadSpan("spanId", f"missing in a span of trace {trace_id}")
    start = _int(_get(raw, "startTimeUnixNano", "start_time_unix_nano") or 0, "startTimeUnixNano", UINT64)
    end = _int(_get(raw, "endTimeUnixNano", "end_time_unix_nano") or start, "endTimeUnixNano", UINT64)
    status = raw.get("status") or {}
    events = []
    for ev in raw.get("events") or []:
        if isinstance(ev, dict):
            when = _int(_get(ev, "timeUnixNano", "time_unix_nano") or start, "events.timeUnixNano", UINT64)
            events.append((str(ev.get("name") or ""), when, key_values(ev.get("attributes") or [])))
    kind = raw.get("kind") or 0
    return Span(
        line=line,
        trace_id=trace_id,
        span_id=span_id,
        parent_id=hex_id(_get(raw, "parentSpanId", "parent_span_id"), 8, "parentSpanId"),
        name=str(raw.get("name") or ""),
        kind=kind if isinstance(kind, int) else 0,
        start_ns=start,
        end_ns=max(end, start),
        attrs=key_values(raw.get("attributes") or []),
        status_code=_status_code(status.get("code")),
        status_message=str(status.get("message") or ""),
        events=events,
        resource=resource,
        scope=scope,
    )


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def is_json(data: bytes) -> bool:
    """True when the bytes start (after blanks) like a JSON object: OTLP/JSON rather than protobuf."""
    return data.lstrip()[:1] == b"{"


def read_spans(path: Path, data: bytes, problems: ProblemCollector, *, keep_parts: bool = False) -> list[Span]:
    """Every span of an OTLP file, JSON lines or protobuf; problems go to the collector (``file:line``). With
    ``keep_parts`` each span keeps itself as read (``Span.part``)."""
    from ingest.otlp_zstd import TooLarge, decompressed, layout

    if layout(data) is not None:  # the Collector file exporter's compression: zstd
        from ingest.pipeline import _memory_available

        room = _memory_available()
        budget = MAX_ZSTD_BYTES if room is None else min(MAX_ZSTD_BYTES, room // 2)
        try:
            data = decompressed(data, budget)
        except TooLarge:
            problems.add(f"{path}:1", "-", f"zstd data expands past {budget:,} bytes (half the memory available)")
            return []
        except ValueError as exc:
            problems.add(f"{path}:1", "-", str(exc))
            return []
    if is_json(data):
        return _json_spans(path, data, problems, keep_parts)
    return _proto_spans(path, data, problems, keep_parts)


def _json_spans(path: Path, data: bytes, problems: ProblemCollector, keep_parts: bool) -> list[Span]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        problems.add(f"{path}:{line}", "-", f"not valid UTF-8 (byte {exc.start + 1})")
        return []
    documents = _json_documents(path, text, problems)
    spans: list[Span] = []
    for line, doc in documents:
        try:
            spans.extend(spans_of_request(doc, line, keep_parts=keep_parts))
        except BadSpan as bad:
            problems.add(f"{path}:{line}", bad.field, bad.reason)
    return spans


def _json_documents(path: Path, text: str, problems: ProblemCollector) -> list[tuple[int, Any]]:
    """``(line, object)`` per JSON line; a file that is one multi-line JSON document is one object at line 1."""
    out: list[tuple[int, Any]] = []
    lines = text.split("\n")
    first_error: tuple[int, str] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            first_error = first_error or (number, f"invalid JSON (column {exc.colno}): {exc.msg}")
        except RecursionError:
            first_error = first_error or (number, "invalid JSON: nested too deeply")
    if first_error is None:
        return out
    try:  # not JSON lines: maybe one pretty-printed request
        return [(1, json.loads(text))]
    except (json.JSONDecodeError, RecursionError):
        problems.add(f"{path}:{first_error[0]}", "-", first_error[1])
        return []


def proto_messages(data: bytes) -> list[bytes]:
    """The messages of a protobuf file: 4-byte big-endian length-prefixed when the prefixes tile the file
    exactly (the Collector file exporter's ``format: proto``), else the whole file as one message."""
    messages: list[bytes] = []
    offset = 0
    while offset + 4 <= len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        if size > MAX_MESSAGE_BYTES or offset + 4 + size > len(data):
            return [data]
        messages.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return messages if offset == len(data) and messages else [data]


def decode_proto_request(message: bytes) -> dict[str, Any]:
    """One protobuf ``ExportTraceServiceRequest`` as its OTLP/JSON object (ids in hex).

    Raises:
        BadSpan: the bytes are not such a message.
    """
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(message)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise BadSpan("-", f"not an OTLP protobuf ExportTraceServiceRequest: {exc}") from None
    doc = MessageToDict(request, use_integers_for_enums=True)
    if message and not doc.get("resourceSpans"):  # bytes that parse only as unknown fields are no trace request
        raise BadSpan("-", "not an OTLP protobuf ExportTraceServiceRequest: no resourceSpans in it")
    doc.setdefault("resourceSpans", [])
    for rs in doc.get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for span in ss.get("spans") or []:
                for key, n_bytes in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                    if span.get(key):  # json_format writes bytes as base64; OTLP/JSON uses hex
                        span[key] = base64.b64decode(span[key]).hex().rjust(2 * n_bytes, "0")
    return doc


def varint_messages(data: bytes) -> list[bytes] | None:
    """The messages of a varint length-delimited stream (protobuf's ``writeDelimitedTo``), or None when the
    prefixes do not tile the bytes exactly."""
    messages: list[bytes] = []
    offset = 0
    while offset < len(data):
        size, shift = 0, 0
        while True:
            if offset >= len(data) or shift > 63:
                return None
            byte = data[offset]
            offset += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if offset + size > len(data):
            return None
        messages.append(data[offset : offset + size])
        offset += size
    return messages or None


def _proto_spans(path: Path, data: bytes, problems: ProblemCollector, keep_parts: bool) -> list[Span]:
    messages = proto_messages(data)
    if messages == [data]:  # not 4-byte framed: one bare message, else a varint-delimited stream
        try:
            return list(spans_of_request(decode_proto_request(data), 1, keep_parts=keep_parts))
        except BadSpan as bad:
            messages = varint_messages(data) or messages
            if messages == [data]:
                problems.add(f"{path}:1", bad.field, bad.reason)
                return []
    spans: list[Span] = []
    for number, message in enumerate(messages, start=1):
        try:
            spans.extend(spans_of_request(decode_proto_request(message), number, keep_parts=keep_parts))
        except BadSpan as bad:
            problems.add(f"{path}:{number}", bad.field, bad.reason)
    return spans

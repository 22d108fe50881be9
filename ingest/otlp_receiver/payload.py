"""Request bodies: decoded (protobuf or OTLP/JSON; gzip, deflate, zstd or none) and checked as the file reader checks spans,
then prepared for the buffer; in a decoding worker process (``decode_pool``)."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import orjson

from ingest.errors import ProblemCollector
from ingest.otlp import group_traces
from ingest.otlp_decode import BadSpan, decode_proto_request, spans_of_request
from ingest.otlp_receiver.buffer import Prepared, prepare

PROTOBUF = "application/x-protobuf"


def prepare_payload(body: bytes, content_type: str, content_encoding: str, max_bytes: int) -> list[Prepared]:
    """Decode, check and prepare a request body: what a decoding worker process does (``decode_payload`` then
    ``prepare``), so the receiver's own process never holds the interpreter lock for a large body's parse."""
    out = prepare(decode_payload(body, content_type, content_encoding, max_bytes=max_bytes))
    if len(body) > 1 << 20:
        _trim()  # the decoded request is garbage now: give its pages back, so an idle worker stays small
    return out


def _trim() -> None:
    """glibc's malloc_trim: return freed heap pages to the system (elsewhere: nothing)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def decode_payload(body: bytes, content_type: str, content_encoding: str, *, max_bytes: int) -> dict[str, Any]:
    """An OTLP/HTTP request body as a validated OTLP/JSON object with canonical keys and hex ids.

    Raises:
        BadSpan: the body is not a well-formed trace request (the reason is sent back with HTTP 400).
    """
    encoding = content_encoding.strip().lower()
    if encoding in WBITS:  # gzip, or deflate (zlib: the SDK exporter's Compression.Deflate)
        try:
            body = _inflate(body, max_bytes, WBITS[encoding])
        except (OSError, EOFError, zlib.error) as exc:
            raise BadSpan("-", f"bad {encoding} body: {exc}") from None
    elif encoding == "zstd":  # the Collector's otlphttp exporter, compression: zstd
        body = _unzstd(body, max_bytes)
    elif encoding not in ("", "identity"):
        raise BadSpan("-", f"unsupported Content-Encoding {content_encoding!r} (gzip, deflate, zstd or none)")
    if content_type.split(";")[0].strip().lower() == PROTOBUF:
        doc = decode_proto_request(body)
    else:
        try:  # orjson: a 26 MB body parses in a fraction of json's time, and the parse holds the GIL throughout
            doc = orjson.loads(body)
        except (orjson.JSONDecodeError, RecursionError) as exc:
            raise BadSpan("-", f"invalid JSON: {exc}") from None
    spans = list(spans_of_request(doc, 1))  # checks every span, as the file reader does
    problems = ProblemCollector()
    group_traces(Path("request"), spans, problems)  # cycles, duplicate span ids, oversized traces
    if problems:
        first = problems.problems[0]
        raise BadSpan(first.field, first.reason)
    return _canonical(doc, spans)


WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}  # zlib's framing of each encoding


def _inflate(body: bytes, max_bytes: int, wbits: int) -> bytes:
    """Decompress at most ``max_bytes`` (a gzip or deflate bomb is refused, not inflated)."""
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(body, max_bytes + 1)
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise BadSpan("-", f"body inflates beyond {max_bytes:,} bytes")
    if not inflater.eof:
        raise EOFError("truncated body")
    return out


def _unzstd(body: bytes, max_bytes: int) -> bytes:
    """A zstd body decompressed within ``max_bytes`` (a bomb is refused as it expands, never held).

    Raises:
        BadSpan: it is not zstd, or it expands past ``max_bytes``.
    """
    import zstandard

    from ingest.otlp_zstd import TooLarge, expand

    try:
        return expand(body, max_bytes)
    except TooLarge:
        raise BadSpan("-", f"body inflates beyond {max_bytes:,} bytes") from None
    except zstandard.ZstdError as exc:
        raise BadSpan("-", f"bad zstd body: {exc}") from None


def _canonical(doc: dict[str, Any], spans: list[Any]) -> dict[str, Any]:
    """The request with lowerCamelCase keys and hex ids on every span (snake_case/base64 senders accepted)."""
    out_rs = []
    i = 0
    for rs in doc.get("resourceSpans") or doc.get("resource_spans") or []:
        out_ss = []
        for ss in rs.get("scopeSpans") or rs.get("scope_spans") or []:
            out_spans = []
            for raw in ss.get("spans") or []:
                decoded = spans[i]
                i += 1
                span = {k: v for k, v in raw.items() if k not in ("trace_id", "span_id", "parent_span_id")}
                span.update(traceId=decoded.trace_id, spanId=decoded.span_id, parentSpanId=decoded.parent_id or "")
                out_spans.append(span)
            out_ss.append({"scope": ss.get("scope") or {}, "spans": out_spans})
        out_rs.append({"resource": rs.get("resource") or {}, "scopeSpans": out_ss})
    return {"resourceSpans": out_rs}

"""A trace's spans as one OTLP/JSON line: what the receiver buffers and what is stored with each OTLP attempt (in
``texts``, named by ``extra.otlp_spans``) so that spans arriving later can be merged with them
(``ingest.otlp.merge``)."""

from __future__ import annotations

import base64
import hashlib
import zlib
from typing import Any

import orjson

from ingest.otlp_decode import Span, compact

Part = tuple[bytes, bytes, bytes]  # one span's resource, scope and span, each as compact OTLP/JSON
Prepared = tuple[str, str, bool, Part]  # (trace id, span id, is a root, part)


def prepare(doc: dict[str, Any]) -> list[Prepared]:
    """A canonical request's spans as compact JSON, ready to buffer (a resource or scope is serialised once)."""
    out: list[Prepared] = []
    for rs in doc.get("resourceSpans") or []:
        resource = compact(rs.get("resource") or {})
        for ss in rs.get("scopeSpans") or []:
            scope = compact(ss.get("scope") or {})
            for span in ss.get("spans") or []:
                part = (resource, scope, compact(span))
                out.append((span["traceId"], span.get("spanId", ""), not span.get("parentSpanId"), part))
    return out


def as_line(parts: list[Part]) -> bytes:
    """One OTLP/JSON request line holding a trace's spans: one resourceSpans entry per resource and scope (in the
    order they first come), each holding its spans in order."""
    groups: dict[tuple[bytes, bytes], list[bytes]] = {}
    for resource, scope, span in parts:
        groups.setdefault((resource, scope), []).append(span)
    entries = [
        b'{"resource":%s,"scopeSpans":[{"scope":%s,"spans":[%s]}]}' % (resource, scope, b",".join(spans))
        for (resource, scope), spans in groups.items()
    ]
    return b'{"resourceSpans":[' + b",".join(entries) + b"]}"


KEPT_PREFIX = "otlp+zlib:"  # a kept trace: its OTLP/JSON line, zlib-compressed, base64 (a quarter of the size)


def spans_text(spans: list[Span]) -> tuple[str, str]:
    """(SHA-256, text) of the OTLP/JSON line holding ``spans`` (read with ``keep_parts``), as kept in ``texts``:
    compressed (``KEPT_PREFIX``), since nothing but a merge reads it."""
    line = as_line([s.part for s in spans if s.part is not None])
    text = KEPT_PREFIX + base64.b64encode(zlib.compress(line, 6)).decode("ascii")
    return hashlib.sha256(text.encode()).hexdigest(), text


def kept_line(text: str) -> bytes:
    """The OTLP/JSON line of a kept trace's text (``spans_text``'s, or the plain line an earlier receiver kept)."""
    if text.startswith(KEPT_PREFIX):
        return zlib.decompress(base64.b64decode(text[len(KEPT_PREFIX) :]))
    return text.encode()


def merged_line(old: bytes, new: bytes) -> tuple[bytes, int]:
    """The spans stored and the spans that came since, as one trace line (each span once, by span id); and how
    many spans are new."""
    old_spans = prepare(orjson.loads(old))
    parts = [part for _, _, _, part in old_spans]
    seen = {span_id for _, span_id, _, _ in old_spans}
    added = 0
    for _, span_id, _, part in prepare(orjson.loads(new)):
        if span_id not in seen:
            seen.add(span_id)
            parts.append(part)
            added += 1
    return as_line(parts), added

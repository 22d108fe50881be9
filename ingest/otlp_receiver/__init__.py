"""``python -m ingest serve-otlp``: a live OTLP trace receiver that writes complete traces as attempts.

Any OpenTelemetry exporter can point at it (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces``).
``POST /v1/traces`` takes an ``ExportTraceServiceRequest`` as protobuf (``application/x-protobuf``) or OTLP/JSON
(``application/json``), optionally gzip-compressed; ``--grpc-port`` adds OTLP/gRPC (``ingest.otlp_grpc``).
Spans are buffered per trace until the trace is complete: its root span has arrived (or the trace is stored
already) and no span came for ``settle_s``. A trace whose root has not arrived waits (a step slower than
``trace_timeout_s`` must not split it): it is stored marked partial only after ``root_wait_s``, past
``max_waiting_bytes`` of such traces, or at shutdown. Spans of a trace already stored are merged: the trace's
stored spans and the new ones are read again and its attempt replaced in one transaction. Every
``flush_interval_s`` the complete traces are written, at most ``max_batch_traces`` per transaction, through the one
writer, which then publishes the read snapshot. Traces go through the ``otlp`` reader and the usual validation; a
trace that fails validation is logged and left out, the others of its batch are written. ``POST /v1/scores``
(with the token) sets scores after the run (``ingest.scores``); ``GET /health`` answers at once.

No request can stall it: bodies are counted while read, decoding runs in worker threads (never in the event loop,
which answers ``/health``), dropped spans are counted by reason with one log line per request, and memory is
bounded (``max_open_traces``, ``max_buffered_bytes``; spans beyond are dropped and reported to the exporter in
``partialSuccess``). SIGTERM / SIGINT stop accepting, flush every buffered trace, then exit. Docs:
docs/formats.md, "Live OTLP receiver"; docs/security.md.
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime as dt
import hashlib
import hmac
import io
import ipaddress
import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import orjson

from ingest.errors import IngestError, ProblemCollector
from ingest.known import load_known
from ingest.otlp import MAX_SPANS_PER_TRACE, group_traces, load_trace_mapping, parse_otlp
from ingest.otlp_decode import BadSpan, decode_proto_request, spans_of_request
from ingest.records import Known, Normaliser
from ingest.scores import apply_scores
from store import Location, RunlensError, resolve_db_path, writer
from store.attempt_update import replace_attempts
from store.ingest_writer import write_bundle

log = logging.getLogger("runlens.otlp")
PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class Limits:
    """How long spans wait and how much may wait (see the module docstring)."""

    settle_s: float = 2.0
    trace_timeout_s: float = 60.0
    flush_interval_s: float = 2.0
    max_open_traces: int = 10_000
    max_buffered_bytes: int = 64 * 1024 * 1024
    max_body_bytes: int = 32 * 1024 * 1024
    max_requests: int = 8  # trace requests read or decoded at once (more get HTTP 503)
    decode_workers: int = 2  # threads decoding and buffering requests
    max_batch_traces: int = 500  # traces written per transaction (more complete traces: more transactions)
    root_wait_s: float = 1800.0  # how long spans of a trace wait for its root span before being stored as partial
    max_waiting_bytes: int = 16 * 1024 * 1024  # rootless traces past the timeout: beyond, oldest stored as partial


@dataclass
class _Open:
    """The spans received so far of one trace, as ``(resource, scope, span)`` OTLP/JSON objects."""

    parts: list[Part] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    n_bytes: int = 0
    has_root: bool = False
    stored: bool = False  # the trace was written already (these spans came late): merged after the settle time
    last_seen: float = 0.0


class TraceBuffer:
    """Spans per trace until the trace is complete; thread-safe, bounded in traces and bytes."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._open: dict[str, _Open] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._dropped: collections.OrderedDict[str, float] = collections.OrderedDict()  # trace id -> when
        self._stored: collections.OrderedDict[str, None] = collections.OrderedDict()  # written lately (bounded)
        self.dropped_spans = 0

    def mark_stored(self, trace_ids: Iterable[str]) -> None:
        """Remember traces just written: their late spans are merged after the settle time, not kept waiting for
        a root span that is stored already."""
        with self._lock:
            for trace_id in trace_ids:
                self._stored[trace_id] = None
                self._stored.move_to_end(trace_id)
            while len(self._stored) > self.limits.max_open_traces:
                self._stored.popitem(last=False)

    @property
    def n_open(self) -> int:
        """Traces waiting."""
        return len(self._open)

    def add(self, request: dict[str, Any] | list[Prepared]) -> tuple[int, list[str]]:
        """Buffer the spans of a (validated) OTLP/JSON request, or of its ``prepare``d form; return (spans
        rejected, reasons).

        Linear in the request's spans: reasons are counted in a dict by kind (a few trace ids each as examples),
        and one summary line is logged per request, however many traces it drops."""
        spans = prepare(request) if isinstance(request, dict) else request
        rejected = 0
        counts: dict[str, list[Any]] = {}  # reason -> [spans, traces (set, bounded), example trace ids]
        now = self.clock()
        with self._lock:
            for trace_id, span_id, is_root, part in spans:
                held = self._open.get(trace_id)
                if held is not None and span_id in held.span_ids:
                    # an exporter's retry of a request that did arrive: the span is buffered already
                    held.last_seen = now
                    continue
                size = len(part[2])
                reason = self._admit(trace_id, size)
                if reason is not None:
                    rejected += 1
                    _count(counts, reason, trace_id)
                    continue
                entry = self._open.get(trace_id)
                if entry is None:
                    entry = self._open[trace_id] = _Open(stored=trace_id in self._stored)
                entry.parts.append(part)
                entry.span_ids.add(span_id)
                entry.n_bytes += size
                entry.has_root = entry.has_root or is_root
                entry.last_seen = now
                self._bytes += size
        reasons = _summaries(counts)
        if rejected:
            self.dropped_spans += rejected
            log.warning("request: dropped %d span(s): %s", rejected, "; ".join(reasons))
        return rejected, reasons

    def _admit(self, trace_id: str, size: int) -> str | None:
        """None when a span of ``size`` bytes of ``trace_id`` fits, else why not (without the trace id: reasons
        are counted by kind). A trace that does not fit is dropped whole (its buffered spans too, and its later
        spans for a while): only complete traces are written."""
        if trace_id in self._dropped:
            return "their trace was dropped earlier"
        entry = self._open.get(trace_id)
        reason = None
        if entry is None and len(self._open) >= self.limits.max_open_traces:
            reason = f"{self.limits.max_open_traces:,} traces are open (--max-open-traces)"
        elif self._bytes + size > self.limits.max_buffered_bytes:
            reason = f"{self.limits.max_buffered_bytes:,} bytes of spans are buffered (--max-buffered-mb)"
        elif entry is not None and len(entry.parts) >= MAX_SPANS_PER_TRACE:
            reason = f"more than {MAX_SPANS_PER_TRACE:,} spans in a trace (RUNLENS_OTLP_MAX_SPANS)"
        if reason is None:
            return None
        self._drop(trace_id)
        return f"trace dropped: {reason}"

    def _drop(self, trace_id: str) -> None:
        entry = self._open.pop(trace_id, None)
        if entry is not None:
            self._bytes -= entry.n_bytes
            self.dropped_spans += len(entry.parts)
        self._dropped[trace_id] = self.clock()
        while len(self._dropped) > self.limits.max_open_traces:  # remembered ids are bounded too
            self._dropped.popitem(last=False)

    def put_back(self, traces: list[tuple[str, bytes, bool]]) -> None:
        """Buffer again traces that could not be written (within the limits, like new spans)."""
        for _, line, _ in traces:
            self.add(orjson.loads(line))

    def take_complete(self, *, everything: bool = False, limit: int | None = None) -> list[tuple[str, bytes, bool]]:
        """Remove and return ``(trace id, OTLP/JSON line, has root)`` of complete traces, at most ``limit`` (all
        buffered traces when ``everything``, at shutdown).

        Complete: the root span arrived (or the trace is stored already) and nothing came for ``settle_s``. A trace
        whose root has not arrived waits: past ``trace_timeout_s`` of silence it is *waiting*, and it is taken (to
        be stored marked partial, completed when the rest arrives) only after ``root_wait_s``, or, oldest first,
        when the waiting traces hold more than ``max_waiting_bytes``."""
        now = self.clock()
        out: list[tuple[str, bytes, bool]] = []
        limits = self.limits
        with self._lock:
            while self._dropped and now - next(iter(self._dropped.values())) >= limits.trace_timeout_s:
                self._dropped.popitem(last=False)
            waiting: list[tuple[float, str]] = []
            waiting_bytes = 0
            chosen: list[str] = []
            for trace_id, entry in self._open.items():
                idle = now - entry.last_seen
                if everything or ((entry.has_root or entry.stored) and idle >= limits.settle_s):
                    chosen.append(trace_id)
                elif not (entry.has_root or entry.stored) and idle >= limits.trace_timeout_s:
                    if idle >= limits.root_wait_s:
                        chosen.append(trace_id)
                    else:
                        waiting.append((entry.last_seen, trace_id))
                        waiting_bytes += entry.n_bytes
            if waiting_bytes > limits.max_waiting_bytes:
                for _, trace_id in sorted(waiting):  # the oldest first, until the rest fits
                    chosen.append(trace_id)
                    waiting_bytes -= self._open[trace_id].n_bytes
                    if waiting_bytes <= limits.max_waiting_bytes:
                        break
            for trace_id in chosen[:limit]:
                entry = self._open.pop(trace_id)
                self._bytes -= entry.n_bytes
                out.append((trace_id, _as_line(entry.parts), entry.has_root))
        return out

    @property
    def n_waiting_bytes(self) -> int:
        """Bytes buffered in traces without a root span (read without the lock: a figure for the log)."""
        return sum(e.n_bytes for e in list(self._open.values()) if not (e.has_root or e.stored))


Part = tuple[bytes, bytes, bytes]  # one span's resource, scope and span, each as compact OTLP/JSON
Prepared = tuple[str, str, bool, Part]  # (trace id, span id, is a root, part)


def prepare(doc: dict[str, Any]) -> list[Prepared]:
    """A canonical request's spans as compact JSON, ready to buffer (a resource or scope is serialised once)."""
    out: list[Prepared] = []
    for rs in doc.get("resourceSpans") or []:
        resource = _compact(rs.get("resource") or {})
        for ss in rs.get("scopeSpans") or []:
            scope = _compact(ss.get("scope") or {})
            for span in ss.get("spans") or []:
                part = (resource, scope, _compact(span))
                out.append((span["traceId"], span.get("spanId", ""), not span.get("parentSpanId"), part))
    return out


def _compact(obj: Any) -> bytes:
    """Compact JSON, copied to an exact-size object: orjson's own result keeps its larger working buffer's
    allocation (100,000 spans took 385 MB that way, against none extra copied)."""
    return bytes(memoryview(orjson.dumps(obj)))


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


EXAMPLES = 3  # trace ids named per reason in a log line or a partialSuccess message


def _count(counts: dict[str, list[Any]], reason: str, trace_id: str) -> None:
    """Count one rejected span of ``trace_id`` under ``reason`` (constant time)."""
    entry = counts.setdefault(reason, [0, set(), []])
    entry[0] += 1
    if trace_id not in entry[1]:
        entry[1].add(trace_id)
        if len(entry[2]) < EXAMPLES:
            entry[2].append(trace_id)


def _summaries(counts: dict[str, list[Any]]) -> list[str]:
    """One line per reason: ``N span(s) of M trace(s): reason (e.g. trace a, b)``."""
    out = []
    for reason, (spans, traces, examples) in counts.items():
        more = ", ..." if len(traces) > len(examples) else ""
        out.append(f"{spans:,} span(s) of {len(traces):,} trace(s): {reason} (trace {', '.join(examples)}{more})")
    return out


def _as_line(parts: list[Part]) -> bytes:
    """One OTLP/JSON request line holding a trace's spans, one resourceSpans entry per span (simple, valid)."""
    entries = [b'{"resource":%s,"scopeSpans":[{"scope":%s,"spans":[%s]}]}' % part for part in parts]
    return b'{"resourceSpans":[' + b",".join(entries) + b"]}"


# ---------------------------------------------------------------------------------------------
# Payloads
# ---------------------------------------------------------------------------------------------


def decode_payload(body: bytes, content_type: str, content_encoding: str, *, max_bytes: int) -> dict[str, Any]:
    """An OTLP/HTTP request body as a validated OTLP/JSON object with canonical keys and hex ids.

    Raises:
        BadSpan: the body is not a well-formed trace request (the reason is sent back with HTTP 400).
    """
    if content_encoding.strip().lower() == "gzip":
        try:
            body = _gunzip(body, max_bytes)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadSpan("-", f"bad gzip body: {exc}") from None
    elif content_encoding.strip().lower() not in ("", "identity"):
        raise BadSpan("-", f"unsupported Content-Encoding {content_encoding!r} (gzip or none)")
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


def _gunzip(body: bytes, max_bytes: int) -> bytes:
    """Decompress at most ``max_bytes`` (a gzip bomb is refused, not inflated)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(body, max_bytes + 1)
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise BadSpan("-", f"body inflates beyond {max_bytes:,} bytes")
    if not inflater.eof:
        raise EOFError("truncated gzip body")
    return out


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


# ---------------------------------------------------------------------------------------------
# Writing batches
# ---------------------------------------------------------------------------------------------


@dataclass
class BatchResult:
    """What one flush did."""

    written: int = 0
    rejected: dict[str, str] = field(default_factory=dict)  # trace id -> why
    already: int = 0  # traces whose every span was stored already (a resent request)
    merged: int = 0  # traces stored earlier, stored again with the spans that came since
    unmergeable: dict[str, str] = field(default_factory=dict)  # trace id -> why its late spans were not kept
    partial: int = 0  # attempts written without their trace's root span (marked trace_partial)
    unscored: int = 0  # attempts written without a score (awaiting python -m ingest scores)
    written_ids: list[str] = field(default_factory=list)


@dataclass
class _Stored:
    """The attempts a trace already has in the store, and its spans as stored (None: not kept)."""

    attempt_ids: list[int]
    keys: set[tuple[str, str, int]]
    spans_hash: str | None
    line: bytes | None = None
    late_score: dict[str, Any] | None = None  # a score given after the run (extra.late_score): kept on a rebuild


def _stored_traces(con: Any, trace_ids: list[str]) -> dict[str, _Stored]:
    """Trace id -> its stored attempts, of ``trace_ids`` already stored (with the OTLP/JSON of their spans when
    the receiver kept it: ``extra.otlp_spans``, a key into ``texts``)."""
    if not trace_ids:
        return {}
    rows = con.execute(
        "SELECT json_extract_string(extra, '$.trace_id'), attempt_id, run_id, task_id, sample, "
        "json_extract_string(extra, '$.otlp_spans'), json_extract_string(extra, '$.late_score') FROM attempts "
        "WHERE json_extract_string(extra, '$.trace_id') IN (SELECT unnest(?::VARCHAR[])) ORDER BY attempt_id",
        [trace_ids],
    ).fetchall()
    out: dict[str, _Stored] = {}
    for trace_id, attempt_id, run_id, task_id, sample, spans_hash, late in rows:
        entry = out.setdefault(trace_id, _Stored([], set(), spans_hash))
        entry.late_score = orjson.loads(late) if late and not entry.attempt_ids else None  # one attempt only
        entry.attempt_ids.append(int(attempt_id))
        entry.keys.add((run_id, task_id, int(sample)))
        entry.spans_hash = entry.spans_hash or spans_hash
    hashes = [e.spans_hash for e in out.values() if e.spans_hash]
    if hashes:
        texts = dict(
            con.execute(
                "SELECT text_hash, any_value(text) FROM texts WHERE text_hash IN (SELECT unnest(?::VARCHAR[])) "
                "GROUP BY text_hash",
                [hashes],
            ).fetchall()
        )
        for entry in out.values():
            if entry.spans_hash in texts:
                entry.line = texts[entry.spans_hash].encode()
    return out


def _merged(old: bytes, new: bytes) -> tuple[bytes, int]:
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
    return _as_line(parts), added


def _adjusted(
    records: Iterable[tuple[str, dict[str, Any]]],
    known: Known,
    spans: dict[str, tuple[str, str]],
    late: dict[str, dict[str, Any]] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Records of a batch made to fit what is stored: definitions already stored are kept as stored (the first
    trace of a run defines it), a sample number already taken becomes the next free one, each attempt names the
    stored text of its trace's spans (``otlp_spans``: what a later merge starts from), and an attempt rebuilt from
    a trace that was scored after the run keeps that score (``late``: trace id -> ``extra.late_score``)."""
    out = []
    taken: set[tuple[str, str, int]] = set()
    for loc, rec in records:
        kind = rec.get("record")
        if kind == "benchmark" and ("benchmark", rec["benchmark"]) in known.definitions:
            continue
        if kind == "task" and ("task", f"{rec['benchmark']}/{rec['task_id']}") in known.definitions:
            continue
        if kind == "run" and ("run", rec["run_id"]) in known.definitions:
            continue
        if kind == "attempt":
            sample = int(rec.get("sample") or 0)
            while (rec["run_id"], rec["task_id"], sample) in taken or known.existing_attempt(
                (rec["run_id"], rec["task_id"], sample)
            ) is not None:
                sample += 1
            taken.add((rec["run_id"], rec["task_id"], sample))
            rec = {**rec, "sample": sample}
            if rec.get("trace_id") in spans:
                rec["otlp_spans"] = spans[rec["trace_id"]][0]
            given = (late or {}).get(rec.get("trace_id", ""))
            if given is not None:
                rec.pop("is_scored", None)
                rec.update({k: given.get(k) for k in ("score", "raw_score", "passed")}, late_score=given)
                rec["metrics"] = {**(rec.get("metrics") or {}), **(given.get("metrics") or {})}
        out.append((loc, rec))
    return out


def _validate(
    path: Path,
    data: bytes,
    known: Known,
    options: dict[str, Any],
    spans: dict[str, tuple[str, str]],
    late: dict[str, dict[str, Any]] | None = None,
) -> tuple[Any, ProblemCollector, list[dict[str, Any]]]:
    problems = ProblemCollector()
    records = _adjusted(parse_otlp(path, data, problems, **options), known, spans, late)
    bundle = Normaliser(known.copy(), problems).feed(records)
    attempts = [rec for _, rec in records if rec.get("record") == "attempt"]
    return bundle, problems, attempts


def _batch_file(traces: list[tuple[str, bytes]]) -> tuple[Path, bytes]:
    """The OTLP/JSON lines of a batch and the name it is logged under (``ingest_log``)."""
    data = b"\n".join(line for _, line in traces) + b"\n"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return Path(f"otlp-http/{stamp}-{hashlib.sha256(data).hexdigest()[:12]}.jsonl"), data


def _forgetting(known: Known, freed: set[tuple[str, str, int]]) -> None:
    """Make ``known`` (and its copies) see the attempts about to be replaced as gone: their keys are free."""
    loader = known.attempt_loader
    if loader is None or not freed:
        return

    def without(run_id: str) -> dict[tuple[str, int], int]:
        return {k: v for k, v in loader(run_id).items() if (run_id, *k) not in freed}

    known.attempt_loader = without
    known.attempts = {k: v for k, v in known.attempts.items() if k not in freed}


def write_batch(db: Location, traces: list[tuple[str, bytes, bool]], options: dict[str, Any]) -> BatchResult:
    """Write complete traces in one transaction through the writer (which publishes the read snapshot).

    A trace already stored is merged: its stored spans and the new ones are read again as one trace, and the
    attempt(s) it gives replace the stored ones in the same transaction (steps in tree order, tokens summed, a
    partial attempt completed). A resent request (no new span) writes nothing. When the batch fails validation,
    each trace is validated on its own; those at fault are left out (and reported), the others are written.
    """
    result = BatchResult()
    with writer(db, short_session=True) as con:  # a small batch: may share one publish with queued writers
        known = load_known(con)
        stored = _stored_traces(con, [t for t, _, _ in traces])
        fresh: list[tuple[str, bytes]] = []
        replaced: dict[str, _Stored] = {}
        for trace_id, line, _ in traces:
            before = stored.get(trace_id)
            if before is None:
                fresh.append((trace_id, line))
                continue
            if before.line is None:
                result.unmergeable[trace_id] = (
                    "stored by a file ingest or an older receiver, without its spans: the late spans cannot be "
                    "merged and are not kept"
                )
                continue
            merged, added = _merged(before.line, line)
            if not added:
                result.already += 1
                continue
            fresh.append((trace_id, merged))
            replaced[trace_id] = before
        if not fresh:
            return result
        _forgetting(known, {key for r in replaced.values() for key in r.keys})
        spans = {t: (hashlib.sha256(line).hexdigest(), line.decode()) for t, line in fresh}
        late = {t: r.late_score for t, r in replaced.items() if r.late_score is not None and len(r.attempt_ids) == 1}
        path, data = _batch_file(fresh)
        bundle, problems, attempts = _validate(path, data, known, options, spans, late)
        if problems:
            fresh = _isolate(fresh, known, options, spans, result, late)
            if not fresh:
                return result
            path, data = _batch_file(fresh)
            bundle, problems, attempts = _validate(path, data, known, options, spans, late)
            problems.raise_if_any()  # each trace passed alone; together they cannot fail (guarded all the same)
        for trace_id, _ in fresh:
            digest, text = spans[trace_id]
            bundle.texts.setdefault(digest, text)  # the spans, kept for a later merge (extra.otlp_spans)
        bundle.freeze()
        old_ids = [i for t, _ in fresh if t in replaced for i in replaced[t].attempt_ids]
        merged_ids = [t for t, _ in fresh if t in replaced]

        def before_commit(con: Any, file_id: int) -> None:
            successors: dict[int, int] = {}
            if merged_ids:  # a trace with one attempt before and after: its reviews follow it
                new_ids: dict[str, list[int]] = {}
                for trace_id, attempt_id in con.execute(
                    "SELECT json_extract_string(extra, '$.trace_id'), attempt_id FROM attempts WHERE file_id = ?",
                    [file_id],
                ).fetchall():
                    new_ids.setdefault(trace_id, []).append(int(attempt_id))
                for trace_id in merged_ids:
                    before, after = replaced[trace_id].attempt_ids, new_ids.get(trace_id, [])
                    if len(before) == 1 and len(after) == 1:
                        successors[before[0]] = after[0]
            replace_attempts(
                con,
                old_ids,
                reason="otlp late spans",
                detail={"trace_ids": merged_ids, "file_id": file_id},
                successors=successors,
            )
            from ingest.rules import label_file_attempts  # pandas: loaded when a batch is first written

            label_file_attempts(con, file_id=file_id, own_transaction=False)

        write_bundle(
            con,
            bundle,
            path=str(path),
            content_hash=hashlib.sha256(data).hexdigest(),
            fmt="otlp",
            is_demo=False,
            started_at=_utcnow(),
            seconds=0.0,
            before_commit=before_commit,
        )
        result.written = len(fresh) - len(merged_ids)
        result.merged = len(merged_ids)
        result.written_ids = [t for t, _ in fresh]
        result.partial = sum(1 for a in attempts if "trace_partial" in a)
        result.unscored = sum(1 for a in attempts if a.get("is_scored") is False)
    return result


def _isolate(
    traces: list[tuple[str, bytes]],
    known: Known,
    options: dict[str, Any],
    spans: dict[str, tuple[str, str]],
    result: BatchResult,
    late: dict[str, dict[str, Any]],
) -> list[tuple[str, bytes]]:
    """The traces that pass validation on their own; the others go to ``result.rejected`` with their reasons."""
    good = []
    for trace_id, line in traces:
        _, problems, _ = _validate(Path(f"otlp-http/{trace_id}"), line, known, options, spans, late)
        if problems:
            result.rejected[trace_id] = "; ".join(str(p) for p in problems.problems[:3])
        else:
            good.append((trace_id, line))
    return good


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Flusher:
    """Writes complete traces every ``flush_interval_s`` in a thread of its own; ``stop`` flushes everything."""

    def __init__(self, db: Location, buffer: TraceBuffer, options: dict[str, Any]) -> None:
        self.db = db
        self.buffer = buffer
        self.options = options
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runlens-otlp-flusher", daemon=True)
        self.written = 0

    def start(self) -> None:
        """Start the background flushes."""
        self._thread.start()

    def stop(self) -> None:
        """Stop flushing on a timer, then write every trace still buffered (complete or not)."""
        self._stop.set()
        self._thread.join()
        self.flush(everything=True)

    def _run(self) -> None:
        while not self._stop.wait(self.buffer.limits.flush_interval_s):
            while self.flush() and not self._stop.is_set():
                pass  # a full batch: more traces may be complete

    def flush(self, *, everything: bool = False) -> bool:
        """Write what is complete now, at most ``max_batch_traces`` per transaction (everything at shutdown);
        errors are logged, the receiver keeps running. True when a full batch was taken (more may wait)."""
        size = self.buffer.limits.max_batch_traces
        while True:
            traces = self.buffer.take_complete(everything=everything, limit=size)
            if not traces:
                return False
            self._write(traces, everything=everything)
            if not everything:
                return len(traces) >= size

    def _write(self, traces: list[tuple[str, bytes, bool]], *, everything: bool) -> None:
        rootless = [t for t, _, has_root in traces if not has_root]
        if rootless:
            why = (
                "at shutdown"
                if everything
                else f"after waiting {self.buffer.limits.root_wait_s:g} s or past --max-waiting-mb"
            )
            log.warning(
                "%d trace(s) without their root span taken %s (%s): stored marked partial, completed if the rest "
                "arrives",
                len(rootless),
                why,
                _examples([(t, b"", False) for t in rootless]),
            )
        try:
            result = write_batch(self.db, traces, self.options)
        except IngestError as exc:  # cannot happen (each trace was validated alone); never retried
            log.error("could not write %d trace(s): %s", len(traces), exc)
            return
        except (RunlensError, OSError, duckdb.Error) as exc:  # the database is busy or unwritable: retry later
            if everything:
                log.error("could not write %d trace(s) at shutdown; they are lost: %s", len(traces), exc)
                return
            log.error("could not write %d trace(s), will retry: %s", len(traces), exc)
            self.buffer.put_back(traces)
            return
        except Exception:  # a fault in reading a trace must not stop the flushes: said, with the traces' ids
            log.exception("could not read %d trace(s) (%s): not written", len(traces), _examples(traces))
            return
        self.buffer.mark_stored(result.written_ids)
        self.written += result.written
        for trace_id, why in result.rejected.items():
            log.warning("trace %s not written: %s", trace_id, why)
        for trace_id, why in result.unmergeable.items():
            log.warning("trace %s already stored; spans that came later: %s", trace_id, why)
        if result.written or result.merged:
            notes = [
                f"{n} {what}"
                for n, what in (
                    (result.merged, "merged with the spans stored earlier (the attempt replaced)"),
                    (result.partial, "partial: no root span yet (extra.trace_partial)"),
                    (result.unscored, "without a score: score empty until python -m ingest scores"),
                )
                if n
            ]
            log.info(
                "wrote %d new trace(s) in one transaction%s (%d open)",
                result.written,
                f"; {'; '.join(notes)}" if notes else "",
                self.buffer.n_open,
            )
        if result.already:
            log.info("%d trace(s) already stored with every span (a resent request): not written again", result.already)


def _examples(traces: list[tuple[str, bytes, bool]]) -> str:
    ids = [t for t, _, _ in traces[:EXAMPLES]]
    return ", ".join(ids) + (", ..." if len(traces) > EXAMPLES else "")


# ---------------------------------------------------------------------------------------------
# The HTTP app
# ---------------------------------------------------------------------------------------------


def _status_body(message: str, code: int, protobuf: bool) -> bytes:
    """A google.rpc.Status (OTLP/HTTP's error body) as protobuf or JSON."""
    if protobuf:
        from google.rpc.status_pb2 import Status

        return Status(code=code, message=message).SerializeToString()
    return json.dumps({"code": code, "message": message}).encode()


def make_app(
    buffer: TraceBuffer,
    flusher: Flusher | None,
    *,
    token: str | None,
    db: Location = None,
    grpc_server: Callable[[], Any] | None = None,
    pool: DecodePool | None = None,
) -> Any:
    """The Starlette app: ``POST /v1/traces``, ``POST /v1/scores`` (scores after the run, only with a token) and
    ``GET /health``; the flusher is started and stopped (flushing) with the app.

    No request can stall the others: the body is counted while it is read (chunked bodies too) and refused past
    the limit; decoding and buffering run in worker threads, at most ``decode_workers`` at once, and at most
    ``max_requests`` trace requests are held at once (more get 503, which exporters retry); the event loop itself
    only reads bodies and answers ``/health``, which takes no lock."""
    import contextlib

    import anyio
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    limits = buffer.limits
    decoders = anyio.CapacityLimiter(limits.decode_workers)
    held = [0]  # trace requests being read or decoded (the event loop is one thread: no lock needed)
    pool = pool or DecodePool(limits.decode_workers)

    def error(message: str, code: int, status: int, protobuf: bool) -> Response:
        media = PROTOBUF if protobuf else "application/json"
        return Response(_status_body(message, code, protobuf), status, media_type=media)

    async def read_body(request: Request) -> bytes | None:
        """The body, or None once it passes the limit (counted as it arrives, whatever Content-Length said);
        ClientGone when the client went away before sending it all."""
        chunks, n = [], 0
        try:
            async for chunk in request.stream():
                n += len(chunk)
                if n > limits.max_body_bytes:
                    return None
                chunks.append(chunk)
        except ClientDisconnect:
            log.info("a client went away before sending its whole body (%d bytes read)", n)
            raise ClientGone from None
        return b"".join(chunks)

    def work(body: bytes, ctype: str, encoding: str) -> tuple[int, list[str]]:
        return buffer.add(pool.prepare(body, ctype, encoding, limits.max_body_bytes))

    async def traces(request: Request) -> Response:
        ctype = request.headers.get("content-type", "")
        protobuf = ctype.split(";")[0].strip().lower() == PROTOBUF
        if token and not hmac.compare_digest(
            request.headers.get("authorization", "").encode(), f"Bearer {token}".encode()
        ):
            return error("missing or wrong bearer token", 16, 401, protobuf)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limits.max_body_bytes:  # refused before reading it
            return error(f"request body larger than {limits.max_body_bytes:,} bytes", 3, 413, protobuf)
        if held[0] >= limits.max_requests:
            log.warning("HTTP 503: %d requests are being read or decoded", held[0])
            return error(f"busy: {held[0]} requests in progress, retry later", 14, 503, protobuf)
        held[0] += 1
        try:
            try:
                body = await read_body(request)
            except ClientGone:
                return Response(status_code=400)  # nobody is there to read it
            if body is None:
                log.warning("HTTP 413: body larger than %d bytes (counted while read)", limits.max_body_bytes)
                return error(f"request body larger than {limits.max_body_bytes:,} bytes", 3, 413, protobuf)
            encoding = request.headers.get("content-encoding", "")
            try:
                rejected, reasons = await anyio.to_thread.run_sync(work, body, ctype, encoding, limiter=decoders)
            except BusyError as busy:
                return error(str(busy), 14, 503, protobuf)
            except BadSpan as bad:
                reason = bad.reason if bad.field == "-" else f"{bad.field}: {bad.reason}"
                log.warning("HTTP 400: %s", reason)
                return error(reason, 3, 400, protobuf)
        finally:
            held[0] -= 1
        media = PROTOBUF if protobuf else "application/json"
        return Response(_success_body(rejected, reasons, protobuf), 200, media_type=media)

    async def scores(request: Request) -> Response:
        """Scores after the run (``ingest.scores``): a CSV body (``text/csv``) or JSON (``{"scores": [{...}]}``,
        the CSV's columns as keys); all rows or none. Only with a token: it changes stored attempts."""
        if not token:
            return JSONResponse({"message": "scores need a receiver started with RUNLENS_OTLP_TOKEN"}, 403)
        if not hmac.compare_digest(request.headers.get("authorization", "").encode(), f"Bearer {token}".encode()):
            return JSONResponse({"message": "missing or wrong bearer token"}, 401)
        try:
            body = await read_body(request)
        except ClientGone:
            return Response(status_code=400)
        if body is None:
            return JSONResponse({"message": f"request body larger than {limits.max_body_bytes:,} bytes"}, 413)
        try:
            text = _scores_csv(body, request.headers.get("content-type", ""))
            done = await anyio.to_thread.run_sync(
                lambda: apply_scores(db, "request", text, source="POST /v1/scores"), limiter=decoders
            )
        except ValueError as exc:
            return JSONResponse({"message": str(exc)}, 400)
        except IngestError as exc:
            listed = [str(p) for p in exc.problems[:20]]
            more = len(exc.problems) - len(listed)
            log.warning("POST /v1/scores refused: %s", listed[0])
            return JSONResponse({"message": "nothing written", "problems": listed, "more_problems": more}, 400)
        log.info("POST /v1/scores: %d row(s), %d attempt(s) scored", done.rows, done.attempts)
        return JSONResponse({"rows": done.rows, "attempts": done.attempts})

    async def health(request: Request) -> Response:
        """Liveness: answered by the event loop at once, without the buffer's lock (its counts are read as is)."""
        return JSONResponse({"status": "ok", "open_traces": buffer.n_open})

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        if flusher is not None:
            flusher.start()
        grpc = grpc_server() if grpc_server is not None else None  # OTLP/gRPC beside (ingest.otlp_grpc)
        pool.start()
        try:
            yield
        finally:
            pool.stop()
            if grpc is not None:
                grpc.stop(grace=5).wait()  # no new spans, then the last flush
            if flusher is not None:
                flusher.stop()
                log.info("stopped: %d trace(s) written in all", flusher.written)

    return Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/v1/scores", scores, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


class DecodePool:
    """Worker processes that decode request bodies (``prepare_payload``): a 26 MB JSON body's parse holds the
    interpreter lock for its whole length, which in a thread would keep ``/health`` waiting. A worker that dies
    (out of memory) is replaced; its request gets 503."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: Any = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the workers (spawned: the receiver has threads, which a fork would copy mid-flight)."""
        import concurrent.futures
        import multiprocessing

        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    self.workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
                )
                for _ in range(self.workers):  # imported now, not at the first request
                    self._pool.submit(_warm)

    def stop(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None

    def prepare(self, body: bytes, ctype: str, encoding: str, max_bytes: int) -> list[Prepared]:
        """``prepare_payload`` in a worker (raises its BadSpan); BusyError when the worker died."""
        from concurrent.futures.process import BrokenProcessPool

        self.start()
        try:
            return self._pool.submit(prepare_payload, body, ctype, encoding, max_bytes).result()  # type: ignore[no-any-return]
        except BrokenProcessPool:
            log.error("a decoding worker died (out of memory?): restarting the workers")
            with self._lock:
                self._pool = None
            raise BusyError("the request could not be decoded (a worker died): retry later") from None


class ClientGone(Exception):
    """The client closed the connection before its body was read whole."""


class BusyError(RunlensError):
    """The receiver cannot take the request now (HTTP 503, gRPC UNAVAILABLE): exporters retry."""


def _exit_with_parent(parent: int) -> None:
    """A decoding worker's initializer: it ends when the receiver is gone (killed with SIGKILL, the pool cannot tell
    its workers), instead of living on as an orphan holding its memory."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _warm() -> None:
    """Nothing: a worker's first task, so that it has imported this module before a request comes."""


def _scores_csv(body: bytes, content_type: str) -> str:
    """A scores request body as CSV text (JSON rows are written as CSV with the union of their keys)."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the body is not UTF-8: {exc}") from None
    if content_type.split(";")[0].strip().lower() != "application/json":
        return text
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    rows = doc.get("scores") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError('expected {"scores": [{"trace_id": ..., "score": ...}, ...]}')
    columns = list(dict.fromkeys(str(k) for r in rows for k in r))
    out = io.StringIO()
    table = csv.writer(out)
    table.writerow(columns)
    for r in rows:
        table.writerow(
            ["" if r.get(c) is None else json.dumps(r[c]) if isinstance(r[c], bool) else r[c] for c in columns]
        )
    return out.getvalue()


def _success_body(rejected: int, reasons: list[str], protobuf: bool) -> bytes:
    """ExportTraceServiceResponse, with partialSuccess when spans were dropped."""
    if protobuf:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = "; ".join(reasons)
        return response.SerializeToString()
    doc: dict[str, Any] = {}
    if rejected:
        doc["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": "; ".join(reasons)}
    return json.dumps(doc).encode()


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """``python -m ingest serve-otlp`` options."""
    parser = argparse.ArgumentParser(
        prog="python -m ingest serve-otlp",
        description="Receive OTLP/HTTP traces and write complete traces as attempts.",
    )
    parser.add_argument(
        "--db", help="database path or ducklake: location (default: $RUNLENS_DB or the local lake data/runlens.lake)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1 only)")
    parser.add_argument("--port", type=int, default=4318, help="port (default: 4318, OTLP/HTTP's)")
    parser.add_argument(
        "--grpc-port",
        type=int,
        metavar="PORT",
        help="also serve OTLP/gRPC on this port (OTLP's is 4317); off by default",
    )
    parser.add_argument("--mapping", help="OTLP mapping: a shipped name, a YAML file, or field=attribute,...")
    parser.add_argument("--benchmark", help="benchmark name for every trace (else from attributes)")
    parser.add_argument("--token", help="require 'Authorization: Bearer TOKEN' (default: $RUNLENS_OTLP_TOKEN)")
    parser.add_argument("--flush-interval", type=float, default=Limits.flush_interval_s, metavar="S")
    parser.add_argument("--settle", type=float, default=Limits.settle_s, metavar="S", help="wait after a root span")
    parser.add_argument("--trace-timeout", type=float, default=Limits.trace_timeout_s, metavar="S")
    parser.add_argument(
        "--root-wait",
        type=float,
        default=Limits.root_wait_s,
        metavar="S",
        help="how long spans wait for their trace's root span before being stored marked partial",
    )
    parser.add_argument(
        "--max-waiting-mb",
        type=float,
        default=Limits.max_waiting_bytes / 2**20,
        metavar="MB",
        help="spans of traces past --trace-timeout without a root: beyond, the oldest are stored marked partial",
    )
    parser.add_argument("--max-open-traces", type=int, default=Limits.max_open_traces, metavar="N")
    parser.add_argument("--max-buffered-mb", type=float, default=Limits.max_buffered_bytes / 2**20, metavar="MB")
    parser.add_argument(
        "--max-body-mb", type=float, default=Limits.max_body_bytes / 2**20, metavar="MB", help="per request"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def main(argv: list[str] | None = None) -> int:
    """Run the receiver until SIGTERM/SIGINT; buffered traces are written before it exits."""
    import uvicorn

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:  # loaded once, not per batch; a bad mapping stops the receiver before it listens
        options: dict[str, Any] = {"mapping": load_trace_mapping(args.mapping)}
    except IngestError as exc:
        print(f"python -m ingest serve-otlp: {exc}", flush=True)
        return 2
    if args.benchmark:
        options["benchmark"] = args.benchmark
    limits = Limits(
        settle_s=args.settle,
        trace_timeout_s=args.trace_timeout,
        flush_interval_s=args.flush_interval,
        max_open_traces=args.max_open_traces,
        max_buffered_bytes=int(args.max_buffered_mb * 2**20),
        max_body_bytes=int(args.max_body_mb * 2**20),
        root_wait_s=args.root_wait,
        max_waiting_bytes=int(args.max_waiting_mb * 2**20),
    )
    token = args.token or os.environ.get("RUNLENS_OTLP_TOKEN")
    if not token and not is_loopback(args.host):
        print(
            f"python -m ingest serve-otlp: --host {args.host} listens beyond this machine: set RUNLENS_OTLP_TOKEN "
            "(or --token) so that only exporters with the token can write",
            flush=True,
        )
        return 2
    db = resolve_db_path(args.db)
    buffer = TraceBuffer(limits)
    pool = DecodePool(limits.decode_workers)
    grpc_server = None
    if args.grpc_port:
        from ingest.otlp_grpc import start_grpc_server

        def grpc_server() -> Any:
            return start_grpc_server(buffer, pool, host=args.host, port=args.grpc_port, token=token)

    app = make_app(buffer, Flusher(db, buffer, options), token=token, db=db, grpc_server=grpc_server, pool=pool)
    log.info("receiving OTLP/HTTP traces on http://%s:%d/v1/traces -> %s", args.host, args.port, db)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0

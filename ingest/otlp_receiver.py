"""``python -m ingest serve-otlp``: a live OTLP/HTTP trace receiver that writes complete traces as attempts.

Any OpenTelemetry exporter can point at it (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces``).
``POST /v1/traces`` takes an ``ExportTraceServiceRequest`` as protobuf (``application/x-protobuf``) or OTLP/JSON
(``application/json``), optionally gzip-compressed. Spans are buffered per trace until the trace is complete: its
root span has arrived and no span came for ``settle_s`` (late children of other services), or no span came for
``trace_timeout_s`` (a trace whose root never arrives is written as it is). Every ``flush_interval_s`` the complete
traces are written in one transaction through the one writer, which then publishes the read snapshot: the
dashboard shows an evaluation while it runs, one batch at a time. Traces go through the ``otlp`` reader and the
usual validation; a trace that fails validation is logged and left out, the others of its batch are written.

Memory is bounded: at most ``max_open_traces`` traces and ``max_buffered_bytes`` of spans wait; spans beyond are
dropped with a warning (and reported to the exporter as rejected spans). SIGTERM / SIGINT stop accepting, flush
every buffered trace, then exit. Docs: docs/formats.md, "Live OTLP receiver".
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import hashlib
import hmac
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

from ingest.errors import IngestError, ProblemCollector
from ingest.known import load_known
from ingest.otlp import MAX_SPANS_PER_TRACE, group_traces, load_trace_mapping, parse_otlp
from ingest.otlp_decode import BadSpan, decode_proto_request, spans_of_request
from ingest.pipeline import Prepared, commit_prepared
from ingest.records import Known, Normaliser
from store import Location, RunlensError, resolve_db_path, writer

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


@dataclass
class _Open:
    """The spans received so far of one trace, as ``(resource, scope, span)`` OTLP/JSON objects."""

    parts: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    n_bytes: int = 0
    has_root: bool = False
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
        self.dropped_spans = 0

    @property
    def n_open(self) -> int:
        """Traces waiting."""
        return len(self._open)

    def add(self, request: dict[str, Any]) -> tuple[int, list[str]]:
        """Buffer the spans of a (validated) OTLP/JSON request; return (spans rejected, reasons)."""
        rejected, reasons = 0, []
        now = self.clock()
        with self._lock:
            for resource, scope, span in _iter_spans(request):
                held = self._open.get(span["traceId"])
                if held is not None and span.get("spanId") in held.span_ids:
                    # an exporter's retry of a request that did arrive: the span is buffered already
                    held.last_seen = now
                    continue
                size = len(json.dumps(span, separators=(",", ":")))
                reason = self._admit(span["traceId"], size)
                if reason is not None:
                    rejected += 1
                    reasons.append(reason)
                    continue
                entry = self._open.setdefault(span["traceId"], _Open())
                entry.parts.append((resource, scope, span))
                entry.span_ids.add(span.get("spanId", ""))
                entry.n_bytes += size
                entry.has_root = entry.has_root or not span.get("parentSpanId")
                entry.last_seen = now
                self._bytes += size
        if rejected:
            self.dropped_spans += rejected
            for reason in dict.fromkeys(reasons):
                log.warning("dropped %d span(s): %s", reasons.count(reason), reason)
        return rejected, list(dict.fromkeys(reasons))

    def _admit(self, trace_id: str, size: int) -> str | None:
        """None when a span of ``size`` bytes of ``trace_id`` fits, else why not. A trace that does not fit is
        dropped whole (its buffered spans too, and its later spans for a while): only complete traces are
        written."""
        if trace_id in self._dropped:
            return f"trace {trace_id} was dropped earlier"
        entry = self._open.get(trace_id)
        reason = None
        if entry is None and len(self._open) >= self.limits.max_open_traces:
            reason = f"{self.limits.max_open_traces:,} traces are open (--max-open-traces)"
        elif self._bytes + size > self.limits.max_buffered_bytes:
            reason = f"{self.limits.max_buffered_bytes:,} bytes of spans are buffered (--max-buffered-mb)"
        elif entry is not None and len(entry.parts) >= MAX_SPANS_PER_TRACE:
            reason = f"more than {MAX_SPANS_PER_TRACE:,} spans (RUNLENS_OTLP_MAX_SPANS)"
        if reason is None:
            return None
        self._drop(trace_id)
        return f"trace {trace_id} dropped: {reason}"

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
            self.add(json.loads(line))

    def take_complete(self, *, everything: bool = False) -> list[tuple[str, bytes, bool]]:
        """Remove and return ``(trace id, OTLP/JSON line, has root)`` of every complete trace (all when
        ``everything``, at shutdown)."""
        now = self.clock()
        out = []
        with self._lock:
            while self._dropped and now - next(iter(self._dropped.values())) >= self.limits.trace_timeout_s:
                self._dropped.popitem(last=False)
            for trace_id, entry in list(self._open.items()):
                idle = now - entry.last_seen
                if (
                    everything
                    or idle >= self.limits.trace_timeout_s
                    or (entry.has_root and idle >= self.limits.settle_s)
                ):
                    del self._open[trace_id]
                    self._bytes -= entry.n_bytes
                    out.append((trace_id, _as_line(entry.parts), entry.has_root))
        return out


def _iter_spans(request: dict[str, Any]) -> Iterable[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    for rs in request.get("resourceSpans") or []:
        resource = rs.get("resource") or {}
        for ss in rs.get("scopeSpans") or []:
            scope = ss.get("scope") or {}
            for span in ss.get("spans") or []:
                yield resource, scope, span


def _as_line(parts: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]) -> bytes:
    """One OTLP/JSON request line holding a trace's spans, one resourceSpans entry per span (simple, valid)."""
    request = {
        "resourceSpans": [{"resource": r, "scopeSpans": [{"scope": s, "spans": [span]}]} for r, s, span in parts]
    }
    return json.dumps(request, separators=(",", ":")).encode()


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
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError) as exc:
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
    already: int = 0


def _stored_traces(con: Any, trace_ids: list[str]) -> set[str]:
    """Trace ids of ``trace_ids`` already stored (an exporter retrying a request must not add attempts)."""
    if not trace_ids:
        return set()
    found = con.execute(
        "SELECT DISTINCT json_extract_string(extra, '$.trace_id') FROM attempts "
        "WHERE json_extract_string(extra, '$.trace_id') IN (SELECT unnest(?::VARCHAR[]))",
        [trace_ids],
    ).fetchall()
    return {row[0] for row in found}


def _adjusted(records: Iterable[tuple[str, dict[str, Any]]], known: Known) -> list[tuple[str, dict[str, Any]]]:
    """Records of a batch made to fit what is stored: definitions already stored are kept as stored (the first
    trace of a run defines it), and a sample number already taken becomes the next free one."""
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
        out.append((loc, rec))
    return out


def _validate(path: Path, data: bytes, known: Known, options: dict[str, Any]) -> tuple[Any, ProblemCollector]:
    problems = ProblemCollector()
    records = list(parse_otlp(path, data, problems, **options))
    bundle = Normaliser(known.copy(), problems).feed(_adjusted(records, known))
    return bundle, problems


def _batch_file(traces: list[tuple[str, bytes]]) -> tuple[Path, bytes]:
    """The OTLP/JSON lines of a batch and the name it is logged under (``ingest_log``)."""
    data = b"\n".join(line for _, line in traces) + b"\n"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return Path(f"otlp-http/{stamp}-{hashlib.sha256(data).hexdigest()[:12]}.jsonl"), data


def write_batch(db: Location, traces: list[tuple[str, bytes, bool]], options: dict[str, Any]) -> BatchResult:
    """Write complete traces in one transaction through the writer (which publishes the read snapshot).

    Traces already stored are skipped. When the batch fails validation, each trace is validated on its own; those
    at fault are left out (and reported), the others are written.
    """
    result = BatchResult()
    with writer(db, short_session=True) as con:  # a small batch: may share one publish with queued writers
        known = load_known(con)
        stored = _stored_traces(con, [t for t, _, _ in traces])
        fresh = [(t, line) for t, line, _ in traces if t not in stored]
        result.already = len(traces) - len(fresh)
        if not fresh:
            return result
        path, data = _batch_file(fresh)
        bundle, problems = _validate(path, data, known, options)
        if problems:
            fresh = _isolate(fresh, known, options, result)
            if not fresh:
                return result
            path, data = _batch_file(fresh)
            bundle, problems = _validate(path, data, known, options)
            problems.raise_if_any()  # each trace passed alone; together they cannot fail (guarded all the same)
        bundle.freeze()
        prepared = Prepared(str(path), "otlp", _utcnow(), hashlib.sha256(data).hexdigest(), bundle)
        if commit_prepared(con, prepared, known) is None:
            raise RunlensError(f"{path}: batch inconsistent with the database it was validated against")
        result.written = len(fresh)
    return result


def _isolate(
    traces: list[tuple[str, bytes]], known: Known, options: dict[str, Any], result: BatchResult
) -> list[tuple[str, bytes]]:
    """The traces that pass validation on their own; the others go to ``result.rejected`` with their reasons."""
    good = []
    for trace_id, line in traces:
        _, problems = _validate(Path(f"otlp-http/{trace_id}"), line, known, options)
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
            self.flush()

    def flush(self, *, everything: bool = False) -> None:
        """Write what is complete now (everything at shutdown); errors are logged, the receiver keeps running."""
        traces = self.buffer.take_complete(everything=everything)
        if not traces:
            return
        partial = [t for t, _, has_root in traces if not has_root]
        if partial:
            log.warning("%d trace(s) written without their root span (timed out or at shutdown)", len(partial))
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
        self.written += result.written
        for trace_id, why in result.rejected.items():
            log.warning("trace %s not written: %s", trace_id, why)
        if result.written:
            log.info("wrote %d trace(s) in one transaction (%d open)", result.written, self.buffer.n_open)
        if result.already:
            log.info(
                "%d trace(s) already stored (a resent request, or spans that came after their trace was written): "
                "not written again",
                result.already,
            )


# ---------------------------------------------------------------------------------------------
# The HTTP app
# ---------------------------------------------------------------------------------------------


def _status_body(message: str, code: int, protobuf: bool) -> bytes:
    """A google.rpc.Status (OTLP/HTTP's error body) as protobuf or JSON."""
    if protobuf:
        from google.rpc.status_pb2 import Status

        return Status(code=code, message=message).SerializeToString()
    return json.dumps({"code": code, "message": message}).encode()


def make_app(buffer: TraceBuffer, flusher: Flusher | None, *, token: str | None) -> Any:
    """The Starlette app: ``POST /v1/traces``; the flusher is started and stopped (flushing) with the app."""
    import contextlib

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def traces(request: Request) -> Response:
        ctype = request.headers.get("content-type", "")
        protobuf = ctype.split(";")[0].strip().lower() == PROTOBUF
        media = PROTOBUF if protobuf else "application/json"
        if token and not hmac.compare_digest(
            request.headers.get("authorization", "").encode(), f"Bearer {token}".encode()
        ):
            return Response(_status_body("missing or wrong bearer token", 16, protobuf), 401, media_type=media)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > buffer.limits.max_body_bytes:  # refused before reading it
            return Response(_status_body("request body too large", 3, protobuf), 413, media_type=media)
        body = await request.body()
        if len(body) > buffer.limits.max_body_bytes:
            return Response(_status_body("request body too large", 3, protobuf), 413, media_type=media)
        try:
            doc = decode_payload(
                body, ctype, request.headers.get("content-encoding", ""), max_bytes=buffer.limits.max_body_bytes
            )
        except BadSpan as bad:
            reason = bad.reason if bad.field == "-" else f"{bad.field}: {bad.reason}"
            log.warning("HTTP 400: %s", reason)
            return Response(_status_body(reason, 3, protobuf), 400, media_type=media)
        rejected, reasons = buffer.add(doc)
        return Response(_success_body(rejected, reasons, protobuf), 200, media_type=media)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        if flusher is not None:
            flusher.start()
        try:
            yield
        finally:
            if flusher is not None:
                flusher.stop()
                log.info("stopped: %d trace(s) written in all", flusher.written)

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])], lifespan=lifespan)


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
    parser.add_argument("--mapping", help="OTLP mapping: a shipped name, a YAML file, or field=attribute,...")
    parser.add_argument("--benchmark", help="benchmark name for every trace (else from attributes)")
    parser.add_argument("--token", help="require 'Authorization: Bearer TOKEN' (default: $RUNLENS_OTLP_TOKEN)")
    parser.add_argument("--flush-interval", type=float, default=Limits.flush_interval_s, metavar="S")
    parser.add_argument("--settle", type=float, default=Limits.settle_s, metavar="S", help="wait after a root span")
    parser.add_argument("--trace-timeout", type=float, default=Limits.trace_timeout_s, metavar="S")
    parser.add_argument("--max-open-traces", type=int, default=Limits.max_open_traces, metavar="N")
    parser.add_argument("--max-buffered-mb", type=float, default=Limits.max_buffered_bytes / 2**20, metavar="MB")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


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
    )
    db = resolve_db_path(args.db)
    buffer = TraceBuffer(limits)
    app = make_app(buffer, Flusher(db, buffer, options), token=args.token or os.environ.get("RUNLENS_OTLP_TOKEN"))
    log.info("receiving OTLP/HTTP traces on http://%s:%d/v1/traces -> %s", args.host, args.port, db)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0

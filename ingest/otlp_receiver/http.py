"""The OTLP/HTTP front: the Starlette app (``POST /v1/traces``, ``POST /v1/scores``, ``GET /health``) and its
response bodies."""

from __future__ import annotations

import csv
import hmac
import io
import json
import logging
from collections.abc import Callable
from typing import Any

from ingest.errors import IngestError
from ingest.otlp_decode import BadSpan
from ingest.otlp_receiver.buffer import TraceBuffer
from ingest.otlp_receiver.decode_pool import BusyError, DecodePool
from ingest.otlp_receiver.flusher import Flusher
from ingest.otlp_receiver.payload import PROTOBUF
from ingest.scores import apply_scores
from store import Location

log = logging.getLogger("runlens.otlp")


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


class ClientGone(Exception):
    """The client closed the connection before its body was read whole."""


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

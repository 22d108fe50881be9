"""OTLP/gRPC beside OTLP/HTTP: ``python -m ingest serve-otlp --grpc-port 4317``.

The ``TraceService/Export`` call of ``opentelemetry-proto`` (the generated service in
``opentelemetry.proto.collector.trace.v1``), served by ``grpcio``. A request goes the way of an OTLP/HTTP protobuf
body (decoded in the receiver's worker processes, ``otlp_receiver.DecodePool``, then the same ``TraceBuffer``): the same checks, limits, late-span merging
and ``partial_success`` answer. The token is the ``authorization: Bearer TOKEN`` metadata. At most
``decode_workers`` calls run at once and ``max_requests`` wait (more get ``RESOURCE_EXHAUSTED``, which exporters
retry); a message larger than ``max_body_bytes`` is refused by grpc itself (``RESOURCE_EXHAUSTED``).
"""

from __future__ import annotations

import hmac
import logging
from concurrent import futures
from typing import TYPE_CHECKING, Any

from ingest.otlp_decode import BadSpan

if TYPE_CHECKING:
    from ingest.otlp_receiver import DecodePool, TraceBuffer

log = logging.getLogger("runlens.otlp")


def start_grpc_server(buffer: TraceBuffer, pool: DecodePool, *, host: str, port: int, token: str | None) -> Any:
    """Start serving ``TraceService/Export`` on ``host:port``; return the started ``grpc.Server`` (``stop`` it)."""
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    from ingest.otlp_receiver import PROTOBUF, BusyError

    limits = buffer.limits

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - the generated service's name
            if token:
                metadata = dict(context.invocation_metadata() or ())
                given = str(metadata.get("authorization", ""))
                if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
            try:  # decoded in a worker process, as an OTLP/HTTP protobuf body is
                spans = pool.prepare(request.SerializeToString(), PROTOBUF, "", limits.max_body_bytes)
            except BusyError as busy:
                context.abort(grpc.StatusCode.UNAVAILABLE, str(busy))
            except BadSpan as bad:
                reason = bad.reason if bad.field == "-" else f"{bad.field}: {bad.reason}"
                log.warning("gRPC INVALID_ARGUMENT: %s", reason)
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, reason)
            rejected, reasons = buffer.add(spans)
            response = ExportTraceServiceResponse()
            if rejected:
                response.partial_success.rejected_spans = rejected
                response.partial_success.error_message = "; ".join(reasons)
            return response

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=limits.decode_workers, thread_name_prefix="runlens-otlp-grpc"),
        maximum_concurrent_rpcs=limits.max_requests,
        options=[
            ("grpc.max_receive_message_length", limits.max_body_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
        ],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if server.add_insecure_port(address) == 0:
        raise OSError(f"cannot listen for OTLP/gRPC on {address}")
    server.start()
    log.info("receiving OTLP/gRPC traces on %s", address)
    return server

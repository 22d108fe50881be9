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

By role: ``buffer`` (spans per trace until complete, the limits), ``payload`` (request bodies decoded and checked),
``decode_pool`` (the worker processes that decode them), ``batches`` (complete traces written, late spans merged),
``flusher`` (the thread that writes them), ``http`` (the OTLP/HTTP app; OTLP/gRPC is ``ingest.otlp_grpc``). The
command that runs it, ``python -m ingest serve-otlp``, is ``cli/serve_otlp.py``.
"""

from ingest.otlp_receiver.batches import BatchResult, write_batch
from ingest.otlp_receiver.buffer import EXAMPLES, Limits, Part, Prepared, TraceBuffer, prepare
from ingest.otlp_receiver.decode_pool import BusyError, DecodePool
from ingest.otlp_receiver.flusher import Flusher
from ingest.otlp_receiver.http import ClientGone, make_app
from ingest.otlp_receiver.payload import PROTOBUF, decode_payload, prepare_payload

__all__ = [
    "EXAMPLES",
    "PROTOBUF",
    "BatchResult",
    "BusyError",
    "ClientGone",
    "DecodePool",
    "Flusher",
    "Limits",
    "Part",
    "Prepared",
    "TraceBuffer",
    "decode_payload",
    "make_app",
    "prepare",
    "prepare_payload",
    "write_batch",
]

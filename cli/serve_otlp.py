"""``python -m ingest serve-otlp``: its options, and the receiver started with them until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
from typing import Any

from ingest.errors import IngestError
from ingest.otlp import load_trace_mapping
from ingest.otlp_receiver.buffer import Limits, TraceBuffer
from ingest.otlp_receiver.decode_pool import DecodePool
from ingest.otlp_receiver.flusher import Flusher
from ingest.otlp_receiver.http import make_app
from jobs.search_index import IndexKeeper
from store import resolve_db_path

log = logging.getLogger("runlens.otlp")


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

    # the store's search index, when it has one, kept up with the traces written (a refresh at most every 30 s)
    index = IndexKeeper(str(db), interval_s=float(os.environ.get("RUNLENS_OTLP_INDEX_INTERVAL_S", "30")))
    flusher = Flusher(db, buffer, options, index=index)
    app = make_app(buffer, flusher, token=token, db=db, grpc_server=grpc_server, pool=pool)
    log.info("receiving OTLP/HTTP traces on http://%s:%d/v1/traces -> %s", args.host, args.port, db)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0

"""OTLP/gRPC beside OTLP/HTTP (``serve-otlp --grpc-port``), fed by the SDK's own gRPC exporter."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.otlp_producer import expected_by_trace, make_spans
from tests.test_otlp_receiver import TOKEN, TRACE_IDS_SQL, Receiver, _free_port, _snapshot, _wait_for


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    folder = tmp_path_factory.mktemp("grpc")
    grpc_port = _free_port()
    running = Receiver(folder / "g.duckdb", _free_port(), folder / "g.log", "--grpc-port", str(grpc_port))
    running.grpc = f"127.0.0.1:{grpc_port}"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while "receiving OTLP/gRPC" not in running.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    yield running
    running.proc.kill()
    running.proc.wait()


def test_the_sdk_grpc_exporter_writes_traces(receiver: Receiver) -> None:
    address = receiver.grpc  # type: ignore[attr-defined]
    spans = make_spans(
        lambda: OTLPSpanExporter(endpoint=address, insecure=True, headers=(("authorization", f"Bearer {TOKEN}"),))
    )
    expected = expected_by_trace(spans)
    _wait_for(receiver.db, TRACE_IDS_SQL, [list(expected)], len(expected), receiver)
    got = _snapshot(receiver.db, "SELECT run_id, task_id, score FROM attempts ORDER BY run_id, sample")
    assert got == [
        ("support-agent@1.2", "weather-paris", 1.0),
        ("support-agent@1.2", "weather-paris", 0.0),
        ("travel-agent@0.3", "flight-nyc", 0.5),
    ]


def test_grpc_needs_the_token(receiver: Receiver) -> None:
    spans = make_spans()
    exporter = OTLPSpanExporter(
        endpoint=receiver.grpc,  # type: ignore[attr-defined]
        insecure=True,
        headers=(("authorization", "Bearer wrong"),),
        timeout=5,
    )
    assert exporter.export(spans) == SpanExportResult.FAILURE  # UNAUTHENTICATED is not retried
    exporter.shutdown()

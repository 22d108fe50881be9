"""The live OTLP/HTTP receiver (``python -m ingest serve-otlp``), fed by the real OTLP exporter of the SDK.

One receiver process serves the whole module (it is started once, on a free localhost port, with a bearer token);
the last test stops it with SIGTERM and checks that the traces it still buffered were written.
"""

from __future__ import annotations

import gzip
import json
import logging
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan

from ingest.otlp_receiver import Limits, TraceBuffer
from store import reader
from tests.otlp_producer import T0, expected_by_trace, make_spans, otlp_json_lines

TOKEN = "s3cret-token"
ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Receiver:
    """A running ``serve-otlp`` process."""

    def __init__(self, db: Path, port: int, log: Path, *extra: str, timeout: str = "30") -> None:
        self.db, self.port, self.log_path = db, port, log
        self.url = f"http://127.0.0.1:{port}/v1/traces"
        args = ["--db", str(db), "--port", str(port), "--token", TOKEN, "--flush-interval", "0.2", "--settle", "0.3"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ingest", "serve-otlp", *args, "--trace-timeout", timeout, *extra],
            cwd=ROOT,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, log.read_text()
                time.sleep(0.1)
        raise AssertionError(f"receiver did not start: {log.read_text()}")

    def log(self) -> str:
        return self.log_path.read_text()

    def post(self, body: bytes, *, token: str | None = TOKEN, **headers: str) -> requests.Response:
        headers = {"Content-Type": "application/json", **headers}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return requests.post(self.url, data=body, headers=headers, timeout=10)


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    folder = tmp_path_factory.mktemp("receiver")
    running = Receiver(folder / "live.duckdb", _free_port(), folder / "receiver.log")
    yield running
    if running.proc.poll() is None:
        running.proc.kill()
        running.proc.wait()


def _snapshot(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows from the read snapshot the writer publishes (what the dashboard reads); empty before the first batch."""
    if not Path(f"{db}.read").exists():
        return []
    with reader(db) as con:
        return con.execute(sql, params or []).fetchall()


def _wait_for(db: Path, sql: str, params: list[Any], want: int, log: Receiver) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = _snapshot(db, sql, params)
        if found and found[0][0] >= want:
            return
        time.sleep(0.2)
    raise AssertionError(f"{want} rows never appeared for {sql}: {log.log()}")


TRACE_IDS_SQL = (
    "SELECT count(*) FROM attempts WHERE json_extract_string(extra, '$.trace_id') IN (SELECT unnest(?::VARCHAR[]))"
)


def test_sdk_exporter_traces_appear_while_the_receiver_runs(receiver: Receiver) -> None:
    def exporter() -> OTLPSpanExporter:
        return OTLPSpanExporter(
            endpoint=receiver.url, headers={"Authorization": f"Bearer {TOKEN}"}, compression=Compression.Gzip
        )

    spans: list[ReadableSpan] = make_spans(exporter)  # protobuf + gzip, one request per span as each ends
    expected = expected_by_trace(spans)
    _wait_for(receiver.db, TRACE_IDS_SQL, [list(expected)], len(expected), receiver)
    got = _snapshot(
        receiver.db,
        "SELECT json_extract_string(extra, '$.trace_id'), run_id, task_id, sample, score, input_tokens, "
        "output_tokens, latency_s, n_steps, n_tool_calls FROM attempts ORDER BY run_id, sample",
    )
    assert [(r[1], r[2], r[3], r[4]) for r in got] == [
        ("support-agent@1.2", "weather-paris", 0, 1.0),
        ("support-agent@1.2", "weather-paris", 1, 0.0),
        ("travel-agent@0.3", "flight-nyc", 0, 0.5),
    ]
    for trace_id, *_, tok_in, tok_out, latency, n_steps, n_tools in got:
        want = expected[trace_id]
        assert (tok_in, tok_out, n_steps, n_tools) == (*want["tokens"], want["n_steps"], len(want["tools"]))
        assert latency == pytest.approx(want["latency_s"])
    tools = _snapshot(receiver.db, "SELECT tool FROM steps WHERE tool IS NOT NULL ORDER BY attempt_id, step")
    assert [t for (t,) in tools] == [t for tid, *_ in got for t in expected[tid]["tools"]]
    assert _snapshot(receiver.db, "SELECT DISTINCT format FROM ingest_log") == [("otlp",)]


def test_json_payload_and_a_resent_trace_are_stored_once(receiver: Receiver) -> None:
    spans = make_spans()
    ids = list(expected_by_trace(spans))
    body = otlp_json_lines(spans).splitlines()[2]  # the travel-agent trace, as one OTLP/JSON request
    assert receiver.post(body).status_code == 200
    _wait_for(receiver.db, TRACE_IDS_SQL, [ids], 1, receiver)
    assert receiver.post(gzip.compress(body), **{"Content-Encoding": "gzip"}).status_code == 200  # a retry
    deadline = time.monotonic() + 30
    while "1 trace(s) already stored" not in receiver.log() and time.monotonic() < deadline:
        time.sleep(0.1)  # settle + flush: the retry is seen as already stored
    assert "1 trace(s) already stored" in receiver.log()
    assert _snapshot(receiver.db, TRACE_IDS_SQL, [ids]) == [(1,)]
    # a new trace of the same run and task becomes the next sample
    samples = _snapshot(receiver.db, "SELECT sample FROM attempts WHERE task_id = 'flight-nyc' ORDER BY sample")
    assert samples == [(0,), (1,)]


def _request(*spans: dict[str, Any]) -> bytes:
    rs = {"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}
    return json.dumps({"resourceSpans": [rs]}).encode()


def _span(trace: str, span: str, parent: str = "", score: float | None = 1.0) -> dict[str, Any]:
    attrs = [] if score is None else [{"key": "eval.score", "value": {"doubleValue": score}}]
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": "step",
        "startTimeUnixNano": str(T0),
        "endTimeUnixNano": str(T0 + 5_000_000),
        "attributes": attrs,
    }


TRACE = "0af7651916cd43dd8448eb211c80319c"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"resourceSpans": [', "invalid JSON"),
        (_request(_span("", "b7ad6b7169203331")), "traceId: missing"),
        (
            _request(
                _span(TRACE, "000000000000000a", "000000000000000b"),
                _span(TRACE, "000000000000000b", "000000000000000a"),
            ),
            "parentSpanId: cycle in the parent ids",
        ),
        (
            _request(*(_span(TRACE, format(i + 1, "016x"), "0000000000000001" if i else "") for i in range(10_000))),
            "spans: trace",
        ),
        (b"\x0a\xff\xff", "not an OTLP protobuf"),
    ],
    ids=["bad-json", "no-trace-id", "cycle", "10k-spans", "bad-protobuf"],
)
def test_malformed_payload_is_a_400_with_the_reason_and_writes_nothing(
    receiver: Receiver, body: bytes, reason: str
) -> None:
    before = _snapshot(receiver.db, "SELECT count(*) FROM attempts")
    headers = {"Content-Type": "application/x-protobuf"} if body.startswith(b"\x0a") else {}
    response = receiver.post(body, **headers)
    assert response.status_code == 400
    if not headers:
        assert reason in response.json()["message"]
    else:
        from google.rpc.status_pb2 import Status

        assert reason in Status.FromString(response.content).message
    time.sleep(0.5)
    assert _snapshot(receiver.db, "SELECT count(*) FROM attempts") == before


def test_bearer_token_is_required(receiver: Receiver) -> None:
    body = _request(_span("1bf7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"))
    assert receiver.post(body, token=None).status_code == 401
    assert receiver.post(body, token="wrong").status_code == 401


def test_sigterm_flushes_buffered_traces(receiver: Receiver) -> None:
    """A trace whose root never came is still buffered (trace timeout 30 s) when SIGTERM arrives: it is written."""
    trace = "2cf7651916cd43dd8448eb211c80319c"
    child = _span(trace, "00000000000000c1", parent="00000000000000f0", score=0.75)
    assert receiver.post(_request(child)).status_code == 200
    time.sleep(0.6)
    assert _snapshot(receiver.db, TRACE_IDS_SQL, [[trace]]) == [(0,)]
    receiver.proc.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught: the exit is "killed by SIGTERM"
    assert receiver.proc.wait(timeout=60) in (0, -signal.SIGTERM), receiver.log()
    assert "Application shutdown complete" in receiver.log()
    assert _snapshot(
        receiver.db, "SELECT score FROM attempts WHERE json_extract_string(extra, '$.trace_id') = ?", [trace]
    ) == [(0.75,)]
    assert "written without their root span" in receiver.log()


# ---------------------------------------------------------------------------------------------
# The buffer's rules, with a fake clock
# ---------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _doc(trace: str, span: str, parent: str = "") -> dict[str, Any]:
    return json.loads(_request(_span(trace, span, parent)))


def test_a_trace_is_complete_when_its_root_has_settled_or_it_timed_out() -> None:
    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=2, trace_timeout_s=10), clock)
    t1, t2 = "1" * 32, "2" * 32
    buffer.add(_doc(t1, "00000000000000a1", parent="00000000000000a0"))
    buffer.add(_doc(t2, "00000000000000b1", parent="00000000000000b0"))
    buffer.add(_doc(t1, "00000000000000a0"))  # t1's root
    clock.now = 1.9
    assert buffer.take_complete() == []
    clock.now = 2.0
    assert [t for t, _, _ in buffer.take_complete()] == [t1]
    clock.now = 9.9
    assert buffer.take_complete() == []
    clock.now = 10.0
    assert [(t, root) for t, _, root in buffer.take_complete()] == [(t2, False)]
    assert buffer.n_open == 0


def test_a_request_resent_before_its_trace_settled_is_buffered_once() -> None:
    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=2, trace_timeout_s=10), clock)
    t1 = "1" * 32
    request = {
        "resourceSpans": [
            *_doc(t1, "00000000000000a0")["resourceSpans"],
            *_doc(t1, "00000000000000a1", parent="00000000000000a0")["resourceSpans"],
        ]
    }
    buffer.add(request)
    buffer.add(request)  # the exporter timed out waiting for our 200 and sent the same request again
    clock.now = 2.0
    ((trace_id, line, has_root),) = buffer.take_complete()
    spans = [span for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
    assert (trace_id, has_root, sorted(s["spanId"] for s in spans)) == (
        t1,
        True,
        ["00000000000000a0", "00000000000000a1"],
    )


def test_limits_drop_whole_traces_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    buffer = TraceBuffer(Limits(max_open_traces=2, max_buffered_bytes=10_000, trace_timeout_s=60), clock)
    t1, t2, t3 = "1" * 32, "2" * 32, "3" * 32
    with caplog.at_level(logging.WARNING, logger="runlens.otlp"):
        assert buffer.add(_doc(t1, "00000000000000a1"))[0] == 0
        assert buffer.add(_doc(t2, "00000000000000b1"))[0] == 0
        rejected, reasons = buffer.add(_doc(t3, "00000000000000c1"))
        assert rejected == 1 and reasons == [
            f"1 span(s) of 1 trace(s): trace dropped: 2 traces are open (--max-open-traces) (trace {t3})"
        ]
        big = _doc(t1, "00000000000000a2")
        big["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] = "x" * 20_000
        assert buffer.add(big)[0] == 1  # over the byte budget: all of t1 goes, not just this span
        assert buffer.n_open == 1
        assert buffer.add(_doc(t1, "00000000000000a0"))[1] == [
            f"1 span(s) of 1 trace(s): their trace was dropped earlier (trace {t1})"
        ]
    assert (
        f"dropped 1 span(s): 1 span(s) of 1 trace(s): trace dropped: 2 traces are open (--max-open-traces) (trace {t3})"
        in caplog.text
    )
    assert "bytes of spans are buffered (--max-buffered-mb)" in caplog.text
    assert buffer.dropped_spans == 4  # t3's span, t1's big span, t1's buffered span, t1's late root
    clock.now = 61.0  # a dropped trace is forgotten after the trace timeout
    assert [t for t, _, _ in buffer.take_complete()] == [t2]
    assert buffer.add(_doc(t1, "00000000000000a3"))[0] == 0


def test_a_batch_that_cannot_be_written_is_retried(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from ingest.otlp_receiver import Flusher

    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=1), clock)
    trace = "4df7651916cd43dd8448eb211c80319c"
    buffer.add(json.loads(_request(_span(trace, "00000000000000d0", score=0.25))))
    unwritable = tmp_path / "a-folder"
    unwritable.mkdir()
    flusher = Flusher(unwritable, buffer, {})  # a folder is no database: the write fails
    clock.now = 1.0
    with caplog.at_level(logging.ERROR, logger="runlens.otlp"):
        flusher.flush()
    assert "could not write 1 trace(s), will retry" in caplog.text
    assert buffer.n_open == 1
    flusher.db = tmp_path / "db.duckdb"
    clock.now = 2.0
    flusher.flush()
    assert flusher.written == 1
    assert _snapshot(flusher.db, "SELECT score FROM attempts") == [(0.25,)]


def test_a_bad_trace_is_left_out_and_the_rest_of_its_batch_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from ingest.otlp_receiver import Flusher

    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=1), clock)
    good, bad = "5ef7651916cd43dd8448eb211c80319c", "6af7651916cd43dd8448eb211c80319c"
    buffer.add(
        json.loads(_request(_span(good, "00000000000000e0", score=1.0), _span(bad, "00000000000000e1", score=None)))
    )
    flusher = Flusher(tmp_path / "db.duckdb", buffer, {})
    clock.now = 1.0
    with caplog.at_level(logging.WARNING, logger="runlens.otlp"):
        flusher.flush()
    assert flusher.written == 1
    assert f"trace {bad} not written" in caplog.text and "has no score" in caplog.text
    got = _snapshot(flusher.db, "SELECT json_extract_string(extra, '$.trace_id'), score FROM attempts")
    assert got == [(good, 1.0)]

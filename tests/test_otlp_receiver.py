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
from scripts.servers import die_with_parent
from store import query_rows, reader
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
            preexec_fn=die_with_parent(),  # a killed test process leaves no receiver running
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
    # nothing of it stored yet: no row, or no snapshot at all when this test runs first (nothing written before it)
    assert _snapshot(receiver.db, TRACE_IDS_SQL, [[trace]]) in ([], [(0,)])
    receiver.proc.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught: the exit is "killed by SIGTERM"
    assert receiver.proc.wait(timeout=60) in (0, -signal.SIGTERM), receiver.log()
    assert "Application shutdown complete" in receiver.log()
    assert _snapshot(
        receiver.db, "SELECT score FROM attempts WHERE json_extract_string(extra, '$.trace_id') = ?", [trace]
    ) == [(0.75,)]
    assert "1 trace(s) without their root span taken at shutdown" in receiver.log()
    assert "stored marked partial" in receiver.log()
    partial = _snapshot(
        receiver.db,
        "SELECT json_extract_string(extra, '$.trace_partial.missing') FROM attempts "
        "WHERE json_extract_string(extra, '$.trace_id') = ?",
        [trace],
    )
    assert partial == [("root span",)]


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


def test_a_trace_is_complete_when_its_root_has_settled_and_a_rootless_one_waits() -> None:
    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=2, trace_timeout_s=10, root_wait_s=100), clock)
    t1, t2 = "1" * 32, "2" * 32
    buffer.add(_doc(t1, "00000000000000a1", parent="00000000000000a0"))
    buffer.add(_doc(t2, "00000000000000b1", parent="00000000000000b0"))
    buffer.add(_doc(t1, "00000000000000a0"))  # t1's root
    clock.now = 1.9
    assert buffer.take_complete() == []
    clock.now = 2.0
    assert [t for t, _, _ in buffer.take_complete()] == [t1]
    clock.now = 10.0  # past the trace timeout, t2's root has not come: it waits (a step slower than the timeout)
    assert buffer.take_complete() == []
    clock.now = 99.9
    assert buffer.take_complete() == []
    clock.now = 100.0  # the root wait is over: taken, to be stored marked partial
    assert [(t, root) for t, _, root in buffer.take_complete()] == [(t2, False)]
    assert buffer.n_open == 0


def test_rootless_traces_past_the_waiting_bytes_are_taken_oldest_first() -> None:
    clock = FakeClock()
    one = len(
        json.dumps(
            _doc("1" * 32, "00000000000000a1", "00000000000000a0")["resourceSpans"][0]["scopeSpans"][0]["spans"][0],
            separators=(",", ":"),
        )
    )
    buffer = TraceBuffer(Limits(trace_timeout_s=10, root_wait_s=1000, max_waiting_bytes=2 * one), clock)
    ids = ["1" * 32, "2" * 32, "3" * 32]
    for i, trace in enumerate(ids):
        clock.now = float(i)
        buffer.add(_doc(trace, "00000000000000a1", parent="00000000000000a0"))
    clock.now = 9.5
    assert buffer.take_complete() == []  # not past the timeout yet: not waiting
    clock.now = 12.5  # all three wait; three spans' bytes > two: the oldest goes
    assert [t for t, _, _ in buffer.take_complete()] == [ids[0]]
    assert buffer.take_complete() == []
    assert buffer.n_open == 2


def test_late_spans_of_a_stored_trace_settle_like_a_rooted_one() -> None:
    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=2, trace_timeout_s=10), clock)
    trace = "4" * 32
    buffer.mark_stored([trace])
    buffer.add(_doc(trace, "00000000000000c2", parent="00000000000000c0"))
    clock.now = 2.0
    assert [(t, root) for t, _, root in buffer.take_complete()] == [(trace, False)]


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
    flusher.db = db = tmp_path / "db.duckdb"
    clock.now = 2.0
    flusher.flush()
    assert flusher.written == 1
    assert _snapshot(db, "SELECT score FROM attempts") == [(0.25,)]


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
    flusher = Flusher(tmp_path / "db.duckdb", buffer, {"mapping": "missing_score=error"})
    clock.now = 1.0
    with caplog.at_level(logging.WARNING, logger="runlens.otlp"):
        flusher.flush()
    assert flusher.written == 1
    assert f"trace {bad} not written" in caplog.text and "has no score" in caplog.text
    got = _snapshot(flusher.db, "SELECT json_extract_string(extra, '$.trace_id'), score FROM attempts")
    assert got == [(good, 1.0)]


def test_the_flushers_writes_keep_the_search_index_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Once the store has a search index, each batch the flusher writes is added to it by a refresh in the
    background (``jobs.search_index.IndexKeeper``: one at a time, the commits made meanwhile by the next); what it
    did is logged."""
    from analytics import search as sr
    from ingest.otlp_receiver import Flusher
    from jobs.search_index import IndexKeeper, refresh
    from store import ALL_RUNS

    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=1), clock)
    db = tmp_path / "db.duckdb"
    keeper = IndexKeeper(str(db), interval_s=0.0)
    flusher = Flusher(db, buffer, {}, index=keeper)

    def write(trace: str, span: str) -> None:
        buffer.add(json.loads(_request(_span(trace, span, score=0.5))))
        clock.now += 2.0
        flusher.flush()

    write("7af7651916cd43dd8448eb211c80319c", "00000000000000f0")
    flusher.keep_index()
    assert not keeper.running  # no index yet: nothing to keep
    refresh(db)
    write("8bf7651916cd43dd8448eb211c80319c", "00000000000000f1")
    write("9cf7651916cd43dd8448eb211c80319c", "00000000000000f2")
    with caplog.at_level(logging.INFO, logger="runlens.otlp"):
        deadline = time.monotonic() + 120
        flusher.keep_index()
        assert keeper.running
        while "search index" not in caplog.text:
            assert time.monotonic() < deadline
            time.sleep(0.2)
            flusher.keep_index()
    assert "search index: 2 attempts added" in caplog.text
    with reader(db) as con:
        assert (sr.index_coverage(con, ALL_RUNS) or ())[1:] == (0, None)


# ---------------------------------------------------------------------------------------------
# Late spans: merged into the stored attempt; a rootless fragment stored partial, then completed
# ---------------------------------------------------------------------------------------------


def _attr(key: str, value: Any) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) else "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def _oi_span(trace: str, span: str, parent: str, kind: str, at_ms: int, **attrs: Any) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": f"{kind.lower()}.{span[-2:]}",
        "startTimeUnixNano": str(T0 + at_ms * 1_000_000),
        "endTimeUnixNano": str(T0 + (at_ms + 5) * 1_000_000),
        "attributes": [_attr("openinference.span.kind", kind), *(_attr(k, v) for k, v in attrs.items())],
    }


def _attempt_rows(db: Path, trace: str) -> list[tuple[Any, ...]]:
    return _snapshot(
        db,
        "SELECT task_id, score, input_tokens, output_tokens, n_steps, "
        "json_extract_string(extra, '$.trace_partial.missing') FROM attempts "
        "WHERE json_extract_string(extra, '$.trace_id') = ?",
        [trace],
    )


def _doctor_ok(db: Path) -> None:
    from analytics.doctor import check

    with reader(db) as con:
        report = check(con, str(db), rehash_sources=False)
    assert report.ok, report.problems


def test_a_span_that_comes_after_its_trace_was_stored_is_merged(tmp_path: Path) -> None:
    from ingest.otlp_receiver import Flusher

    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=1, trace_timeout_s=5), clock)
    trace, root = "7af7651916cd43dd8448eb211c80319c", "00000000000000f0"
    first = _request(
        _oi_span(trace, root, "", "AGENT", 0, **{"session.id": "t1", "eval.score": 1.0}),
        _oi_span(trace, "00000000000000f1", root, "LLM", 1, **{"llm.token_count.prompt": 10}),
    )
    buffer.add(json.loads(first))
    db = tmp_path / "db.duckdb"
    flusher = Flusher(db, buffer, {})
    clock.now = 1.0
    flusher.flush()
    assert _attempt_rows(db, trace) == [("t1", 1.0, 10, None, 1, None)]
    import datetime as dt

    from store import writer
    from store.derived import insert_review

    with writer(db) as con:  # a reviewer's verdict on the attempt as first stored
        (first_id,) = con.execute("SELECT attempt_id FROM attempts").fetchall()[0]
        insert_review(
            con,
            attempt_id=first_id,
            reviewer="ana",
            verdict="correct",
            codes=[],
            note="ok",
            created_at=dt.datetime(2026, 1, 2),
        )
    late = _request(
        _oi_span(trace, "00000000000000f2", root, "TOOL", 8, **{"tool.name": "search"}),
        _oi_span(
            trace,
            "00000000000000f3",
            root,
            "LLM",
            20,
            **{"llm.token_count.prompt": 30, "llm.token_count.completion": 4},
        ),
    )
    buffer.add(json.loads(late))  # after the trace was stored: no root comes with it
    clock.now = 2.5
    flusher.flush()
    assert _attempt_rows(db, trace) == [("t1", 1.0, 40, 4, 3, None)]  # one attempt: steps and tokens added
    steps = _snapshot(
        db,
        "SELECT kind, tool FROM steps JOIN attempts USING (attempt_id) "
        "WHERE json_extract_string(attempts.extra, '$.trace_id') = ? ORDER BY step",
        [trace],
    )
    assert steps == [("model", None), ("tool_call", "search"), ("final", None)]
    reviews = _snapshot(db, "SELECT r.reviewer, r.attempt_id = a.attempt_id FROM reviews r, attempts a")
    assert reviews == [("ana", True)]  # the review follows the rebuilt attempt
    buffer.add(json.loads(late))  # the same late request resent: nothing new
    clock.now = 4.0
    flusher.flush()
    assert _attempt_rows(db, trace) == [("t1", 1.0, 40, 4, 3, None)]
    assert _snapshot(db, "SELECT count(*) FROM audit_log WHERE action = 'attempts_replaced'") == [(1,)]
    _doctor_ok(db)


def test_a_rootless_fragment_is_stored_partial_and_completed_when_the_root_comes(tmp_path: Path) -> None:
    from ingest.otlp_receiver import Flusher

    clock = FakeClock()
    buffer = TraceBuffer(Limits(settle_s=1, trace_timeout_s=5, root_wait_s=20), clock)
    trace, root = "8bf7651916cd43dd8448eb211c80319c", "00000000000000e0"
    child = _oi_span(trace, "00000000000000e1", root, "LLM", 1, **{"llm.token_count.prompt": 66})
    buffer.add(json.loads(_request(child)))
    db = tmp_path / "db.duckdb"
    flusher = Flusher(db, buffer, {})
    clock.now = 6.0  # past the trace timeout: the fragment waits for its root
    flusher.flush()
    assert _attempt_rows(db, trace) == []
    clock.now = 21.0  # past the root wait: stored, marked partial and unscored (never "complete" with score 0)
    flusher.flush()
    assert _attempt_rows(db, trace) == [(trace, None, 66, None, 1, "root span")]
    assert _partial_health(db) == [(1, False)]  # the run counts it and is not complete
    buffer.add(json.loads(_request(_oi_span(trace, root, "", "AGENT", 0, **{"session.id": "t9", "eval.score": 0.5}))))
    clock.now = 22.5
    flusher.flush()
    assert _attempt_rows(db, trace) == [("t9", 0.5, 66, None, 1, None)]  # completed, under its own task
    assert _partial_health(db) == [(0, True)]
    _doctor_ok(db)


def _partial_health(db: Path) -> list[tuple[int, bool]]:
    """Each run's partial traces and completeness as the leaderboard's run health gives them."""
    from analytics import runs

    with reader(db) as con:
        benches = [b for (b,) in query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1")]
        healths = [runs.run_health(con, benchmark=b) for b in benches]
    return [(int(n), bool(c)) for h in healths for n, c in zip(h["n_partial"], h["is_complete"], strict=True)]


def test_every_content_encoding_an_exporter_sends_is_read(tmp_path: Path) -> None:
    """The SDK exporter's own requests with ``Compression.Deflate`` and ``Gzip`` (captured as sent), and the zstd the
    Collector's otlphttp exporter may send, decode to the uncompressed request's spans; a deflate bomb is refused."""
    import threading
    import zlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import zstandard

    from ingest.otlp_decode import BadSpan
    from ingest.otlp_receiver.payload import PROTOBUF, decode_payload

    sent: list[tuple[str, bytes]] = []

    class Capture(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            sent.append((self.headers.get("Content-Encoding", ""), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        for compression in (Compression.Deflate, Compression.Gzip, Compression.NoCompression):
            make_spans(lambda c=compression: OTLPSpanExporter(endpoint=url, compression=c))
    finally:
        server.shutdown()
        server.server_close()
    assert {enc for enc, _ in sent} == {"deflate", "gzip", ""}
    plain = [body for enc, body in sent if enc == ""]
    want = [decode_payload(body, PROTOBUF, "", max_bytes=1 << 24) for body in plain]
    for enc, inflate in (("deflate", zlib.decompress), ("gzip", gzip.decompress)):
        bodies = [body for e, body in sent if e == enc]
        assert len(bodies) == len(plain) > 0
        for body in bodies:  # each request as the exporter sent it reads as its bytes uncompressed
            got = decode_payload(body, PROTOBUF, enc, max_bytes=1 << 24)
            assert got == decode_payload(inflate(body), PROTOBUF, "", max_bytes=1 << 24), enc
            assert got["resourceSpans"][0]["scopeSpans"][0]["spans"], enc
    zstd = zstandard.ZstdCompressor()
    assert [decode_payload(zstd.compress(b), PROTOBUF, "zstd", max_bytes=1 << 24) for b in plain] == want
    for enc, bomb in (("deflate", zlib.compress(b"\0" * 10_000_000)), ("zstd", zstd.compress(b"\0" * 10_000_000))):
        with pytest.raises(BadSpan, match="body inflates beyond 1,000,000 bytes"):
            decode_payload(bomb, PROTOBUF, enc, max_bytes=1_000_000)

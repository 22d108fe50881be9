"""The receiver under the attacks of docs/security.md ("OTLP receiver"): no request stalls it, a probe is answered
within a second throughout, bodies are counted while read, numbers are validated, and it refuses to listen beyond
loopback without a token. Sizes are bounded (the figures in docs/security.md come from bench/bench_otlp_receiver.py
at the full sizes); everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from cli.serve_otlp import main as serve_main
from tests.otlp_producer import T0
from tests.test_otlp_receiver import TOKEN, Receiver, _free_port


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    """A receiver with few open traces allowed, so that a flood is mostly dropped and the write stays small."""
    folder = tmp_path_factory.mktemp("attacks")
    running = Receiver(folder / "a.duckdb", _free_port(), folder / "a.log", "--max-open-traces", "500")
    yield running
    running.proc.kill()
    running.proc.wait()


def flood(n: int) -> bytes:
    """``n`` root spans, each its own trace, in one OTLP/JSON request (100,000: 26 MB, the issue's attack)."""
    spans = [
        {
            "traceId": format(i + 1, "032x"),
            "spanId": format(i + 1, "016x"),
            "name": "root",
            "startTimeUnixNano": str(T0),
            "endTimeUnixNano": str(T0 + 1000),
            "attributes": [{"key": "eval.score", "value": {"doubleValue": 1.0}}],
        }
        for i in range(n)
    ]
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}).encode()


class Prober:
    """``GET /health`` every 0.1 s in a thread while an attack runs; records each answer's time."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/health"
        self.times: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                ok = requests.get(self.url, timeout=5).json()["status"] == "ok"
                self.times.append(time.monotonic() - start)
                if not ok:
                    self.failures.append("not ok")
            except (requests.RequestException, ValueError) as exc:
                self.failures.append(repr(exc))
            self._stop.wait(0.1)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_a_flood_of_single_span_traces_is_answered_with_one_summary(small: Receiver) -> None:
    body = flood(100_000)
    with Prober(small.port) as probe:
        start = time.monotonic()
        response = requests.post(
            small.url,
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
            timeout=120,
        )
        elapsed = time.monotonic() - start
        time.sleep(1.0)  # the flush of the 500 kept traces, while probing
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 99_500
    assert partial["errorMessage"].startswith("99,500 span(s) of 99,500 trace(s): trace dropped: 500 traces are open")
    assert len(partial["errorMessage"]) < 500  # three example ids, not 99,500
    assert elapsed < 30, elapsed  # was > 5 minutes
    assert not probe.failures and probe.times and max(probe.times) < 1.0, (probe.failures, max(probe.times))
    dropped_lines = [line for line in small.log().splitlines() if "dropped" in line]
    assert len(dropped_lines) == 1, dropped_lines  # one summary line per request, not one per trace


def test_a_timestamp_of_5000_digits_is_a_400_not_a_500(small: Receiver) -> None:
    span = {"traceId": "7" * 32, "spanId": "7" * 16, "name": "x", "startTimeUnixNano": "9" * 5000}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    response = small.post(body)
    assert response.status_code == 400
    assert response.json()["message"] == "startTimeUnixNano: 5,000-digit integer is outside the 64-bit range"
    span["startTimeUnixNano"] = str(2**64)  # in digits, but beyond fixed64
    response = small.post(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode())
    assert response.status_code == 400 and "outside the range" in response.json()["message"]
    assert requests.get(f"http://127.0.0.1:{small.port}/health", timeout=5).status_code == 200


def _vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _chunked_post(port: int, total: int, chunk: int = 1 << 20) -> bytes:
    """POST ``total`` bytes with Transfer-Encoding: chunked (no Content-Length); the server's answer, read after
    it stops reading (a refused body ends the connection early)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = (
        "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sock.sendall(head.encode())
    piece = f"{chunk:x}\r\n".encode() + b" " * chunk + b"\r\n"
    sent = 0
    try:
        while sent < total:
            sock.sendall(piece)
            sent += chunk
        sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered 413 and closed: it stopped reading
    answer = b""
    try:
        while chunk_in := sock.recv(65536):
            answer += chunk_in
            head_end = answer.find(b"\r\n\r\n")
            if head_end >= 0:
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in answer[:head_end].split(b"\r\n")
                        if h.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                if len(answer) >= head_end + 4 + length:
                    break
    except OSError:
        pass
    sock.close()
    return answer


def test_a_chunked_body_is_counted_while_read(small: Receiver) -> None:
    before = _vm_hwm_mb(small.proc.pid)
    answer = _chunked_post(small.port, 200 << 20)  # 200 MB, 6 times the 32 MB limit, no Content-Length
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"request body larger than 33,554,432 bytes" in answer
    grown = _vm_hwm_mb(small.proc.pid) - before
    assert grown < 120, f"peak RSS grew {grown:.0f} MB for a 200 MB chunked body"  # the 32 MB read, not 200 MB
    assert requests.get(f"http://127.0.0.1:{small.port}/health", timeout=5).status_code == 200


def test_listening_beyond_loopback_needs_a_token(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.delenv("RUNLENS_OTLP_TOKEN", raising=False)
    assert serve_main(["--host", "0.0.0.0", "--port", "1"]) == 2
    assert "set RUNLENS_OTLP_TOKEN" in capsys.readouterr().out


def test_requests_held_at_once_are_bounded_and_the_probe_still_answers(small: Receiver) -> None:
    """Eight clients that send their bodies slowly hold the eight request slots: a ninth request gets 503 (OTLP
    exporters retry it), the probe is answered, and the slots free up when the slow clients go."""
    slow = []
    for _ in range(8):
        sock = socket.create_connection(("127.0.0.1", small.port), timeout=10)
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + b"1\r\n{\r\n"  # one byte of the body, then nothing
        )
        slow.append(sock)
    time.sleep(0.5)
    busy = small.post(b'{"resourceSpans": []}')
    assert busy.status_code == 503 and "busy" in busy.json()["message"]
    start = time.monotonic()
    assert requests.get(f"http://127.0.0.1:{small.port}/health", timeout=5).status_code == 200
    assert time.monotonic() - start < 1.0
    for sock in slow:
        sock.close()
    deadline = time.monotonic() + 10
    while small.post(b'{"resourceSpans": []}').status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert small.post(b'{"resourceSpans": []}').status_code == 200


def test_the_attack_bench_runs_at_a_tiny_size() -> None:
    """bench/bench_otlp_receiver.py (the figures of docs/security.md) at a tiny size, so it cannot rot."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "bench/bench_otlp_receiver.py", "--traces", "2000", "--chunked-mb", "40"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["flood"]["status"] == 200 and out["flood"]["kept_written"] == 2000
    assert out["chunked"]["status"] == "HTTP/1.1 413" and out["digits"]["status"] == 400

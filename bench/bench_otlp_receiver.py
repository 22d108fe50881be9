"""The OTLP receiver under the attacks of docs/security.md, at full size, on a throwaway database.

    PYTHONPATH=. python bench/bench_otlp_receiver.py [--traces 100000] [--chunked-mb 600]

Starts ``python -m ingest serve-otlp`` on a free 127.0.0.1 port with the default limits and a token, then:
one request of N single-span traces (each its own trace: 25 MB at 100,000), a chunked body of M MB without
Content-Length, a span whose timestamp has 5,000 digits. A separate process probes ``GET /health`` every 0.1 s
throughout, also while the flood's kept traces are written. Prints one JSON object: per attack, the HTTP status,
the seconds to answer, the slowest probe, the receiver's peak RSS (VmHWM) before and after, and its decoding
workers' peak RSS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from store import reader
from tests.test_otlp_receiver import TOKEN, Receiver, _free_port
from tests.test_otlp_receiver_attacks import _chunked_post, _vm_hwm_mb, flood

PROBE = """
import json, sys, time, urllib.request
url, stop = sys.argv[1], sys.argv[2]
times, failures = [], 0
while True:
    start = time.monotonic()
    try:
        urllib.request.urlopen(url, timeout=10).read()
        times.append(time.monotonic() - start)
    except OSError:
        failures += 1
    try:
        open(stop).close()
        break
    except OSError:
        time.sleep(0.1)
print(json.dumps({"slowest_probe_s": round(max(times), 3), "probes": len(times), "probe_failures": failures}))
"""


class ProbeProcess:
    """``GET /health`` every 0.1 s from another process until the block ends."""

    def __init__(self, port: int, folder: Path) -> None:
        self.stop = folder / f"stop-{time.monotonic_ns()}"
        url = f"http://127.0.0.1:{port}/health"
        self.proc = subprocess.Popen([sys.executable, "-c", PROBE, url, str(self.stop)], stdout=subprocess.PIPE)
        self.result: dict[str, Any] = {}

    def __enter__(self) -> ProbeProcess:
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.touch()
        out, _ = self.proc.communicate(timeout=60)
        self.result = json.loads(out)


def _workers_mb(pid: int, field: str = "VmHWM:") -> list[int]:
    """Peak (VmHWM) or current (VmRSS) RSS of the receiver's child processes: its decoding workers (and the
    multiprocessing resource tracker)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                lines = Path(f"/proc/{child}/status").read_text().splitlines()
            except OSError:
                continue
            out += [round(int(line.split()[1]) / 1024) for line in lines if line.startswith(field)]
    return sorted(out)


def _stored(db: Path) -> int:
    if not Path(f"{db}.read").exists():
        return 0
    with reader(db) as con:
        return int(con.execute("SELECT count(*) FROM attempts").fetchall()[0][0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--chunked-mb", type=int, default=600)
    args = parser.parse_args()
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        rx = Receiver(folder / "b.duckdb", _free_port(), folder / "b.log")
        try:
            pid = rx.proc.pid
            body = flood(args.traces)
            with ProbeProcess(rx.port, folder) as probe:
                rss0 = _vm_hwm_mb(pid)
                start = time.monotonic()
                response = requests.post(
                    rx.url,
                    data=body,
                    headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
                    timeout=600,
                )
                partial = response.json().get("partialSuccess", {})
                flood_out = {
                    "traces": args.traces,
                    "body_mb": round(len(body) / 1e6, 1),
                    "status": response.status_code,
                    "seconds": round(time.monotonic() - start, 2),
                    "rejected_spans": partial.get("rejectedSpans"),
                    "error_message_chars": len(partial.get("errorMessage", "")),
                }
                kept = args.traces - int(partial.get("rejectedSpans") or 0)
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline and _stored(rx.db) < kept:
                    time.sleep(0.5)  # the kept traces are written 500 per transaction, probed meanwhile
                flood_out["kept_written"] = _stored(rx.db)
                flood_out["kept_written_s"] = round(time.monotonic() - start, 1)
                flood_out["peak_rss_mb"] = [round(rss0), round(_vm_hwm_mb(pid))]
                flood_out["worker_peak_rss_mb"] = _workers_mb(pid)
                flood_out["worker_rss_after_mb"] = _workers_mb(pid, "VmRSS:")
            out["flood"] = {**flood_out, **probe.result}
            with ProbeProcess(rx.port, folder) as probe:
                rss0 = _vm_hwm_mb(pid)
                start = time.monotonic()
                answer = _chunked_post(rx.port, args.chunked_mb << 20)
                chunked = {
                    "mb": args.chunked_mb,
                    "status": answer[:12].decode(errors="replace"),
                    "seconds": round(time.monotonic() - start, 2),
                    "peak_rss_mb": [round(rss0), round(_vm_hwm_mb(pid))],
                }
            out["chunked"] = {**chunked, **probe.result}
            span = {"traceId": "7" * 32, "spanId": "7" * 16, "name": "x", "startTimeUnixNano": "9" * 5000}
            start = time.monotonic()
            response = rx.post(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode())
            out["digits"] = {"status": response.status_code, "seconds": round(time.monotonic() - start, 3)}
        finally:
            rx.proc.kill()
            rx.proc.wait()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

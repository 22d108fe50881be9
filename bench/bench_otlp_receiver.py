"""The OTLP receiver under the attacks of docs/security.md, at full size, on a throwaway database.

    PYTHONPATH=. python bench/bench_otlp_receiver.py [--traces 100000] [--chunked-mb 600]

Starts ``python -m ingest serve-otlp`` on a free 127.0.0.1 port with the default limits and a token, then:
one request of N single-span traces (each its own trace: 26 MB at 100,000), a chunked body of M MB without
Content-Length, a span whose timestamp has 5,000 digits. A thread probes ``GET /health`` every 0.1 s throughout,
also while the flood's kept traces are written. Prints one JSON object: per attack, the HTTP status, the seconds
to answer, the slowest probe, and the receiver's peak RSS (VmHWM) before and after.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import requests

from store import reader
from tests.test_otlp_receiver import TOKEN, Receiver, _free_port
from tests.test_otlp_receiver_attacks import Prober, _chunked_post, _vm_hwm_mb, flood


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
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as folder:
        rx = Receiver(Path(folder) / "b.duckdb", _free_port(), Path(folder) / "b.log")
        try:
            pid = rx.proc.pid
            body = flood(args.traces)
            with Prober(rx.port) as probe:
                rss0 = _vm_hwm_mb(pid)
                start = time.monotonic()
                response = requests.post(
                    rx.url,
                    data=body,
                    headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
                    timeout=600,
                )
                out["flood"] = {
                    "traces": args.traces,
                    "body_mb": round(len(body) / 1e6, 1),
                    "status": response.status_code,
                    "seconds": round(time.monotonic() - start, 2),
                    "rejected_spans": response.json().get("partialSuccess", {}).get("rejectedSpans"),
                    "error_message_chars": len(response.json().get("partialSuccess", {}).get("errorMessage", "")),
                }
                kept = args.traces - int(out["flood"]["rejected_spans"] or 0)  # type: ignore[index]
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline and _stored(rx.db) < kept:
                    time.sleep(0.5)  # the kept traces are written 500 per transaction, probed meanwhile
                out["flood"]["kept_written_s"] = round(time.monotonic() - start, 1)  # type: ignore[index]
                out["flood"]["kept_written"] = _stored(rx.db)  # type: ignore[index]
                out["flood"]["slowest_probe_s"] = round(max(probe.times), 3)  # type: ignore[index]
                out["flood"]["probe_failures"] = len(probe.failures)  # type: ignore[index]
                out["flood"]["peak_rss_mb"] = [round(rss0), round(_vm_hwm_mb(pid))]  # type: ignore[index]
            with Prober(rx.port) as probe:
                rss0 = _vm_hwm_mb(pid)
                start = time.monotonic()
                answer = _chunked_post(rx.port, args.chunked_mb << 20)
                out["chunked"] = {
                    "mb": args.chunked_mb,
                    "status": answer[:12].decode(errors="replace"),
                    "seconds": round(time.monotonic() - start, 2),
                    "peak_rss_mb": [round(rss0), round(_vm_hwm_mb(pid))],
                    "slowest_probe_s": round(max(probe.times), 3) if probe.times else None,
                }
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

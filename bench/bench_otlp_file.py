"""What an OTLP file ingest costs: CPU seconds and bytes of the store, for a file the real SDK exported.

    PYTHONPATH=. python bench/bench_otlp_file.py [--traces 1000] [--repeat 3] [--split]

Makes N agent traces with the OpenTelemetry SDK (``tests/otlp_producer.py``: OpenInference traces of 5 spans and
GenAI traces of 6, alternately), exported as the SDK's batch processor sends them (requests of at most 512 spans,
in the order spans end) and written as the Collector's file exporter does (OTLP/JSON lines, and protobuf). Each
repeat ingests the file into a new DuckDB store in this process; CPU is ``time.process_time`` around the ingest
(the imports are loaded first). Prints one JSON object: spans, file bytes, per encoding the median CPU seconds
and the store's bytes after a CHECKPOINT (and what its ``texts`` hold). ``--split``: the same traces, each one's
root span in a second file, ingested after the first (the second merges every trace).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ingest.pipeline import ingest_paths
from tests.otlp_producer import T0, Clock, _hex_ids, genai_trace, oi_trace

BATCH = 512  # the SDK's BatchSpanProcessor max_export_batch_size


def make_spans(n_traces: int) -> list[ReadableSpan]:
    """N traces, spans in the order they ended (as a batch processor exports them)."""
    out: list[ReadableSpan] = []
    clock = Clock(T0)
    for service, version in (("support-agent", "1.2"), ("travel-agent", "0.3")):
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": version}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracer = provider.get_tracer("bench")
        for i in range(n_traces // 2):
            if service == "support-agent":
                oi_trace(tracer, clock, session=f"s{i}", question=f"Weather in city {i}?", score=i % 2, extra={})
            else:
                genai_trace(tracer, clock, conversation=f"c{i}", score=(i % 5) / 4)
        provider.force_flush()
        out.extend(memory.get_finished_spans())
        provider.shutdown()
    return out


def write_json(spans: list[ReadableSpan], path: Path) -> None:
    from google.protobuf.json_format import MessageToDict

    lines = [
        json.dumps(_hex_ids(MessageToDict(encode_spans(spans[i : i + BATCH])))) for i in range(0, len(spans), BATCH)
    ]
    path.write_text("\n".join(lines) + "\n")


def write_proto(spans: list[ReadableSpan], path: Path) -> None:
    out = bytearray()
    for i in range(0, len(spans), BATCH):
        message = encode_spans(spans[i : i + BATCH]).SerializeToString()
        out += len(message).to_bytes(4, "big") + message
    path.write_bytes(bytes(out))


def ingest_cpu(paths: list[Path], db: Path) -> tuple[float, list[Any]]:
    start = time.process_time()
    results = [r for p in paths for r in ingest_paths([p], db=db, jobs=1)]
    return time.process_time() - start, results


def store_bytes(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db))
    con.execute("CHECKPOINT")
    texts, text_bytes = con.execute("SELECT count(*), coalesce(sum(strlen(text)), 0) FROM texts").fetchall()[0]
    attempts = con.execute("SELECT count(*) FROM attempts").fetchall()[0][0]
    con.close()
    return {"file_bytes": db.stat().st_size, "attempts": attempts, "texts": texts, "text_bytes": int(text_bytes)}


def measure(name: str, files: list[Path], folder: Path, repeat: int) -> dict[str, Any]:
    cpus: list[float] = []
    size: dict[str, int] = {}
    for r in range(repeat):
        db = folder / f"{name}-{r}.duckdb"
        cpu, results = ingest_cpu(files, db)
        bad = [res.error for res in results if res.outcome != "ingested"]
        if bad:
            raise SystemExit(f"{name}: {bad}")
        cpus.append(cpu)
        size = store_bytes(db)
        db.unlink()
    return {"cpu_s_median": round(statistics.median(cpus), 3), "cpu_s": [round(c, 3) for c in cpus], **size}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    spans = make_spans(args.traces)
    out: dict[str, Any] = {"traces": args.traces, "spans": len(spans)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ingest_cpu([], folder / "warm.duckdb")  # imports loaded before measuring
        write_json(spans, folder / "traces.jsonl")
        write_proto(spans, folder / "traces.pb")
        out["jsonl_bytes"] = (folder / "traces.jsonl").stat().st_size
        out["pb_bytes"] = (folder / "traces.pb").stat().st_size
        out["jsonl"] = measure("jsonl", [folder / "traces.jsonl"], folder, args.repeat)
        out["pb"] = measure("pb", [folder / "traces.pb"], folder, args.repeat)
        if args.split:
            roots = [s for s in spans if s.parent is None]
            write_json([s for s in spans if s.parent is not None], folder / "a-children.jsonl")
            write_json(roots, folder / "b-roots.jsonl")
            out["split_jsonl"] = measure("split", [folder / "a-children.jsonl", folder / "b-roots.jsonl"], folder, 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

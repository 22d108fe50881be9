"""The ``otlp`` format: detection, the idempotency fingerprint, and the reader that yields benchmark, task, run
and attempt records for a trace file."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ingest.errors import IngestError, ProblemCollector
from ingest.otlp.attempts import Attempt, build_attempt
from ingest.otlp.lines import spans_text
from ingest.otlp.mapping import TraceMapping, load_trace_mapping
from ingest.otlp.scores import read_scores
from ingest.otlp.traces import attempt_roots, group_traces
from ingest.otlp_decode import is_json, proto_messages, read_spans
from ingest.records.bundle import KeptSpans

Records = Iterator[tuple[str, Any]]  # (location, a record dict, or KeptSpans)


def detect_otlp(path: Path, head: bytes) -> bool:
    """OTLP/JSON (``"resourceSpans"`` near the start of a JSON object) or an OTLP protobuf file (``.pb``,
    ``.binpb``, ``.otlp``) whose first message parses as a trace request."""
    from ingest.otlp_zstd import head_of, layout

    compressed = layout(head)
    if compressed is not None:  # the Collector file exporter's compression: zstd (ingest.otlp_zstd)
        head = head_of(head)
    if is_json(head):
        start = head.lstrip()[:4096]
        return b'"resourceSpans"' in start or b'"resource_spans"' in start
    from ingest.otlp_decode import BadSpan, decode_proto_request, varint_messages

    if compressed == "framed":
        try:  # the first export, whole or cut at the head's end
            return bool(decode_proto_request(head).get("resourceSpans"))
        except BadSpan:
            return path.name.lower().endswith((".pb", ".binpb", ".otlp", ".zst"))
    if not path.name.lower().endswith((".pb", ".binpb", ".otlp", ".zst")):
        return False

    if len(head) >= 65536:
        return True  # the head may cut a message short: trust the suffix, the parser reports problems
    for messages in (proto_messages(head), varint_messages(head) or []):
        try:
            if messages and decode_proto_request(messages[0]).get("resourceSpans"):
                return True
        except BadSpan:
            continue
    return False


def fingerprint_otlp(path: Path, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The resolved mapping and the scores CSV's bytes enter the idempotency hash."""
    mapping = load_trace_mapping(options.get("mapping"), where=f"{path}:1")
    out: dict[str, Any] = {"mapping": repr(replace(mapping, source=""))}
    scores = options.get("scores")
    if scores:
        other = Path(str(scores))
        out["_scores"] = hashlib.sha256(other.read_bytes()).hexdigest() if other.is_file() else None
    return out


def parse_otlp(path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any) -> Records:
    """Yield benchmark, task, run and attempt records for an OTLP trace file.

    Args:
        path: the file.
        data: its bytes (OTLP/JSON lines or protobuf).
        problems: where problems are reported.
        progress: optional tqdm-like bar.
        **options: ``mapping`` (name, YAML file or ``field=attribute,...``), ``scores`` (a CSV joined by
            trace id), ``agent``, ``benchmark``, ``run_id`` (constants that win over attributes).
    """
    try:
        mapping = load_trace_mapping(options.get("mapping"), where=f"{path}:1")
    except IngestError as exc:
        for problem in exc.problems:
            problems.add(problem.location, problem.field, problem.reason)
        return
    spans = read_spans(path, data, problems, keep_parts=True)
    traces = group_traces(path, spans, problems)
    scores = read_scores(str(options["scores"]), problems) if options.get("scores") else {}
    attempts = []
    texts: dict[str, tuple[str, str]] = {}
    for trace in traces:
        texts[trace.trace_id] = spans_text(trace.spans)  # kept: spans that come later are merged with them
        for root, members in attempt_roots(trace, mapping):
            att = build_attempt(path, trace, root, members, mapping, options)
            att.record["otlp_spans"] = texts[trace.trace_id][0]
            attempts.append(att)
    if progress is not None:
        progress.update(len(data))
    if problems:
        return
    yield from _records(attempts, scores, mapping, problems, texts)


def _records(
    attempts: list[Attempt],
    scores: dict[str, tuple[str, dict[str, Any]]],
    mapping: TraceMapping,
    problems: ProblemCollector,
    texts: dict[str, tuple[str, str]],
) -> Records:
    kept = []
    for att in attempts:
        joined = scores.get(att.trace_id)
        if joined is not None:
            att.record.pop("score", None)
            att.record.pop("raw_score", None)
            att.record = {
                **att.record,
                **joined[1],
                "metrics": {**att.record.get("metrics", {}), **joined[1].get("metrics", {})},
            }
        if not {"score", "raw_score", "passed"} & set(att.record):  # one rule, whatever the trace's status
            if mapping.missing_score == "keep":  # stored unscored (score empty, never 0) until a late score
                att.record["is_scored"] = False
            elif mapping.missing_score == "skip":
                continue
            else:
                problems.add(
                    att.loc,
                    "score",
                    f"trace {att.trace_id} has no score: no score attribute, evaluation or annotation, and no row "
                    "in --scores (missing_score: error; keep stores it unscored, skip leaves it out)",
                )
                continue
        kept.append(att)
    for att in kept:  # each trace's spans once, in texts (ingest.otlp.merge reads them back)
        if att.trace_id in texts:
            digest, text = texts.pop(att.trace_id)
            yield att.loc, KeptSpans(att.trace_id, digest, text)
    yield from _definitions(kept, mapping)
    samples: dict[tuple[str, str], int] = defaultdict(int)
    for att in sorted(kept, key=lambda a: (a.start_ns, a.trace_id)):
        key = (att.run_id, att.task_id)
        sample = att.sample if att.sample is not None else samples[key]
        samples[key] = max(samples[key], sample + 1)
        yield att.loc, {**att.record, "run_id": att.run_id, "task_id": att.task_id, "sample": sample}


def _definitions(attempts: list[Attempt], mapping: TraceMapping) -> Records:
    """One benchmark, task and run record each, from the first attempt naming it (a run's date: its earliest)."""
    seen: set[tuple[str, ...]] = set()
    first_date: dict[str, str] = {}
    for att in attempts:
        date = att.run["eval_date"]
        if date and (att.run_id not in first_date or date < first_date[att.run_id]):
            first_date[att.run_id] = date
    for att in attempts:
        if ("b", att.benchmark) not in seen:
            seen.add(("b", att.benchmark))
            yield att.loc, {"record": "benchmark", "benchmark": att.benchmark, "scoring": mapping.scoring}
        if ("t", att.benchmark, att.task_id) not in seen:
            seen.add(("t", att.benchmark, att.task_id))
            yield att.loc, {"record": "task", "benchmark": att.benchmark, "task_id": att.task_id, **att.task}
        if ("r", att.run_id) not in seen:
            seen.add(("r", att.run_id))
            run = {**att.run, "eval_date": first_date.get(att.run_id)}
            yield (
                att.loc,
                {"record": "run", "run_id": att.run_id, "benchmark": att.benchmark, "kind": mapping.kind, **run},
            )

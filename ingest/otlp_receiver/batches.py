"""Writing complete traces: one transaction per batch through the one writer; a trace already stored is merged
with its late spans and its attempt replaced; a batch that fails validation is written without the traces at
fault."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ingest.errors import ProblemCollector
from ingest.known import load_known
from ingest.otlp import parse_otlp
from ingest.otlp_receiver.buffer import _as_line, prepare
from ingest.records import Known, Normaliser
from store import Location, writer
from store.attempt_update import replace_attempts
from store.ingest_writer import write_bundle


@dataclass
class BatchResult:
    """What one flush did."""

    written: int = 0
    rejected: dict[str, str] = field(default_factory=dict)  # trace id -> why
    already: int = 0  # traces whose every span was stored already (a resent request)
    merged: int = 0  # traces stored earlier, stored again with the spans that came since
    unmergeable: dict[str, str] = field(default_factory=dict)  # trace id -> why its late spans were not kept
    partial: int = 0  # attempts written without their trace's root span (marked trace_partial)
    unscored: int = 0  # attempts written without a score (awaiting python -m ingest scores)
    written_ids: list[str] = field(default_factory=list)


@dataclass
class _Stored:
    """The attempts a trace already has in the store, and its spans as stored (None: not kept)."""

    attempt_ids: list[int]
    keys: set[tuple[str, str, int]]
    spans_hash: str | None
    line: bytes | None = None
    late_score: dict[str, Any] | None = None  # a score given after the run (extra.late_score): kept on a rebuild


def _stored_traces(con: Any, trace_ids: list[str]) -> dict[str, _Stored]:
    """Trace id -> its stored attempts, of ``trace_ids`` already stored (with the OTLP/JSON of their spans when
    the receiver kept it: ``extra.otlp_spans``, a key into ``texts``)."""
    if not trace_ids:
        return {}
    rows = con.execute(
        "SELECT json_extract_string(extra, '$.trace_id'), attempt_id, run_id, task_id, sample, "
        "json_extract_string(extra, '$.otlp_spans'), json_extract_string(extra, '$.late_score') FROM attempts "
        "WHERE json_extract_string(extra, '$.trace_id') IN (SELECT unnest(?::VARCHAR[])) ORDER BY attempt_id",
        [trace_ids],
    ).fetchall()
    out: dict[str, _Stored] = {}
    for trace_id, attempt_id, run_id, task_id, sample, spans_hash, late in rows:
        entry = out.setdefault(trace_id, _Stored([], set(), spans_hash))
        entry.late_score = orjson.loads(late) if late and not entry.attempt_ids else None  # one attempt only
        entry.attempt_ids.append(int(attempt_id))
        entry.keys.add((run_id, task_id, int(sample)))
        entry.spans_hash = entry.spans_hash or spans_hash
    hashes = [e.spans_hash for e in out.values() if e.spans_hash]
    if hashes:
        texts = dict(
            con.execute(
                "SELECT text_hash, any_value(text) FROM texts WHERE text_hash IN (SELECT unnest(?::VARCHAR[])) "
                "GROUP BY text_hash",
                [hashes],
            ).fetchall()
        )
        for entry in out.values():
            if entry.spans_hash in texts:
                entry.line = texts[entry.spans_hash].encode()
    return out


def _merged(old: bytes, new: bytes) -> tuple[bytes, int]:
    """The spans stored and the spans that came since, as one trace line (each span once, by span id); and how
    many spans are new."""
    old_spans = prepare(orjson.loads(old))
    parts = [part for _, _, _, part in old_spans]
    seen = {span_id for _, span_id, _, _ in old_spans}
    added = 0
    for _, span_id, _, part in prepare(orjson.loads(new)):
        if span_id not in seen:
            seen.add(span_id)
            parts.append(part)
            added += 1
    return _as_line(parts), added


def _adjusted(
    records: Iterable[tuple[str, dict[str, Any]]],
    known: Known,
    spans: dict[str, tuple[str, str]],
    late: dict[str, dict[str, Any]] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Records of a batch made to fit what is stored: definitions already stored are kept as stored (the first
    trace of a run defines it), a sample number already taken becomes the next free one, each attempt names the
    stored text of its trace's spans (``otlp_spans``: what a later merge starts from), and an attempt rebuilt from
    a trace that was scored after the run keeps that score (``late``: trace id -> ``extra.late_score``)."""
    out = []
    taken: set[tuple[str, str, int]] = set()
    for loc, rec in records:
        kind = rec.get("record")
        if kind == "benchmark" and ("benchmark", rec["benchmark"]) in known.definitions:
            continue
        if kind == "task":
            known.ensure_tasks(str(rec["benchmark"]))
            if ("task", f"{rec['benchmark']}/{rec['task_id']}") in known.definitions:
                continue
        if kind == "run" and ("run", rec["run_id"]) in known.definitions:
            continue
        if kind == "attempt":
            sample = int(rec.get("sample") or 0)
            while (rec["run_id"], rec["task_id"], sample) in taken or known.existing_attempt(
                (rec["run_id"], rec["task_id"], sample)
            ) is not None:
                sample += 1
            taken.add((rec["run_id"], rec["task_id"], sample))
            rec = {**rec, "sample": sample}
            if rec.get("trace_id") in spans:
                rec["otlp_spans"] = spans[rec["trace_id"]][0]
            given = (late or {}).get(rec.get("trace_id", ""))
            if given is not None:
                rec.pop("is_scored", None)
                rec.update({k: given.get(k) for k in ("score", "raw_score", "passed")}, late_score=given)
                rec["metrics"] = {**(rec.get("metrics") or {}), **(given.get("metrics") or {})}
        out.append((loc, rec))
    return out


def _validate(
    path: Path,
    data: bytes,
    known: Known,
    options: dict[str, Any],
    spans: dict[str, tuple[str, str]],
    late: dict[str, dict[str, Any]] | None = None,
) -> tuple[Any, ProblemCollector, list[dict[str, Any]]]:
    problems = ProblemCollector()
    records = _adjusted(parse_otlp(path, data, problems, **options), known, spans, late)
    bundle = Normaliser(known.copy(), problems).feed(records)
    attempts = [rec for _, rec in records if rec.get("record") == "attempt"]
    return bundle, problems, attempts


def _batch_file(traces: list[tuple[str, bytes]]) -> tuple[Path, bytes]:
    """The OTLP/JSON lines of a batch and the name it is logged under (``ingest_log``)."""
    data = b"\n".join(line for _, line in traces) + b"\n"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return Path(f"otlp-http/{stamp}-{hashlib.sha256(data).hexdigest()[:12]}.jsonl"), data


def _forgetting(known: Known, freed: set[tuple[str, str, int]]) -> None:
    """Make ``known`` (and its copies) see the attempts about to be replaced as gone: their keys are free."""
    loader = known.attempt_loader
    if loader is None or not freed:
        return

    def without(run_id: str) -> dict[tuple[str, int], int]:
        return {k: v for k, v in loader(run_id).items() if (run_id, *k) not in freed}

    known.attempt_loader = without
    known.attempts = {k: v for k, v in known.attempts.items() if k not in freed}


def write_batch(db: Location, traces: list[tuple[str, bytes, bool]], options: dict[str, Any]) -> BatchResult:
    """Write complete traces in one transaction through the writer (which publishes the read snapshot).

    A trace already stored is merged: its stored spans and the new ones are read again as one trace, and the
    attempt(s) it gives replace the stored ones in the same transaction (steps in tree order, tokens summed, a
    partial attempt completed). A resent request (no new span) writes nothing. When the batch fails validation,
    each trace is validated on its own; those at fault are left out (and reported), the others are written.
    """
    result = BatchResult()
    with writer(db, short_session=True) as con:  # a small batch: may share one publish with queued writers
        known = load_known(con)
        stored = _stored_traces(con, [t for t, _, _ in traces])
        fresh: list[tuple[str, bytes]] = []
        replaced: dict[str, _Stored] = {}
        for trace_id, line, _ in traces:
            before = stored.get(trace_id)
            if before is None:
                fresh.append((trace_id, line))
                continue
            if before.line is None:
                result.unmergeable[trace_id] = (
                    "stored by a file ingest or an older receiver, without its spans: the late spans cannot be "
                    "merged and are not kept"
                )
                continue
            merged, added = _merged(before.line, line)
            if not added:
                result.already += 1
                continue
            fresh.append((trace_id, merged))
            replaced[trace_id] = before
        if not fresh:
            return result
        _forgetting(known, {key for r in replaced.values() for key in r.keys})
        spans = {t: (hashlib.sha256(line).hexdigest(), line.decode()) for t, line in fresh}
        late = {t: r.late_score for t, r in replaced.items() if r.late_score is not None and len(r.attempt_ids) == 1}
        path, data = _batch_file(fresh)
        bundle, problems, attempts = _validate(path, data, known, options, spans, late)
        if problems:
            fresh = _isolate(fresh, known, options, spans, result, late)
            if not fresh:
                return result
            path, data = _batch_file(fresh)
            bundle, problems, attempts = _validate(path, data, known, options, spans, late)
            problems.raise_if_any()  # each trace passed alone; together they cannot fail (guarded all the same)
        for trace_id, _ in fresh:
            digest, text = spans[trace_id]
            bundle.texts.setdefault(digest, text)  # the spans, kept for a later merge (extra.otlp_spans)
        bundle.freeze()
        old_ids = [i for t, _ in fresh if t in replaced for i in replaced[t].attempt_ids]
        merged_ids = [t for t, _ in fresh if t in replaced]

        def before_commit(con: Any, file_id: int) -> None:
            successors: dict[int, int] = {}
            if merged_ids:  # a trace with one attempt before and after: its reviews follow it
                new_ids: dict[str, list[int]] = {}
                for trace_id, attempt_id in con.execute(
                    "SELECT json_extract_string(extra, '$.trace_id'), attempt_id FROM attempts WHERE file_id = ?",
                    [file_id],
                ).fetchall():
                    new_ids.setdefault(trace_id, []).append(int(attempt_id))
                for trace_id in merged_ids:
                    before, after = replaced[trace_id].attempt_ids, new_ids.get(trace_id, [])
                    if len(before) == 1 and len(after) == 1:
                        successors[before[0]] = after[0]
            replace_attempts(
                con,
                old_ids,
                reason="otlp late spans",
                detail={"trace_ids": merged_ids, "file_id": file_id},
                successors=successors,
            )
            from ingest.rules import label_file_attempts  # pandas: loaded when a batch is first written

            label_file_attempts(con, file_id=file_id, own_transaction=False)

        write_bundle(
            con,
            bundle,
            path=str(path),
            content_hash=hashlib.sha256(data).hexdigest(),
            fmt="otlp",
            is_demo=False,
            started_at=_utcnow(),
            seconds=0.0,
            before_commit=before_commit,
        )
        result.written = len(fresh) - len(merged_ids)
        result.merged = len(merged_ids)
        result.written_ids = [t for t, _ in fresh]
        result.partial = sum(1 for a in attempts if "trace_partial" in a)
        result.unscored = sum(1 for a in attempts if a.get("is_scored") is False)
    return result


def _isolate(
    traces: list[tuple[str, bytes]],
    known: Known,
    options: dict[str, Any],
    spans: dict[str, tuple[str, str]],
    result: BatchResult,
    late: dict[str, dict[str, Any]],
) -> list[tuple[str, bytes]]:
    """The traces that pass validation on their own; the others go to ``result.rejected`` with their reasons."""
    good = []
    for trace_id, line in traces:
        _, problems, _ = _validate(Path(f"otlp-http/{trace_id}"), line, known, options, spans, late)
        if problems:
            result.rejected[trace_id] = "; ".join(str(p) for p in problems.problems[:3])
        else:
            good.append((trace_id, line))
    return good


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)

"""Writing complete traces: one transaction per batch through the one writer; a trace already stored is merged
with its late spans and its attempt replaced (``ingest.otlp.merge``, shared with file ingest); a batch that fails
validation is written without the traces at fault."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.known import load_known
from ingest.otlp import parse_otlp
from ingest.otlp.merge import Plan, adjusted, forgetting, plan, replace_merged, stored_traces
from ingest.records import Known, Normaliser
from store import Location, writer
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


def _validate(
    path: Path, data: bytes, known: Known, options: dict[str, Any], merging: Plan
) -> tuple[Any, ProblemCollector, list[dict[str, Any]]]:
    problems = ProblemCollector()
    records = adjusted(parse_otlp(path, data, problems, **options), known, merging)
    bundle = Normaliser(known.copy(), problems).feed(records)
    attempts = [rec for _, rec in records if isinstance(rec, dict) and rec.get("record") == "attempt"]
    return bundle, problems, attempts


def _batch_file(traces: list[tuple[str, bytes]]) -> tuple[Path, bytes]:
    """The OTLP/JSON lines of a batch and the name it is logged under (``ingest_log``)."""
    data = b"\n".join(line for _, line in traces) + b"\n"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return Path(f"otlp-http/{stamp}-{hashlib.sha256(data).hexdigest()[:12]}.jsonl"), data


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
        merging = plan([(t, line) for t, line, _ in traces], stored_traces(con, [t for t, _, _ in traces]))
        for trace_id, before in merging.unmergeable.items():
            result.unmergeable[trace_id] = (
                f"stored (run {sorted(before.keys)[0][0]!r}) by an older version, without its spans: the late spans "
                "cannot be merged and are not kept"
            )
        result.already = len(merging.already)
        fresh = merging.lines
        if not fresh:
            return result
        forgetting(known, {key for r in merging.replaced.values() for key in r.keys})
        path, data = _batch_file(fresh)
        bundle, problems, attempts = _validate(path, data, known, options, merging)
        if problems:
            fresh = _isolate(fresh, known, options, merging, result)
            if not fresh:
                return result
            path, data = _batch_file(fresh)
            bundle, problems, attempts = _validate(path, data, known, options, merging)
            problems.raise_if_any()  # each trace passed alone; together they cannot fail (guarded all the same)
        bundle.freeze()
        written = {t for t, _ in fresh}
        merging.replaced = {t: r for t, r in merging.replaced.items() if t in written}
        merged_ids = sorted(merging.replaced)

        def before_commit(con: Any, file_id: int) -> None:
            replace_merged(con, file_id, merging, reason="otlp late spans")
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
    traces: list[tuple[str, bytes]], known: Known, options: dict[str, Any], merging: Plan, result: BatchResult
) -> list[tuple[str, bytes]]:
    """The traces that pass validation on their own; the others go to ``result.rejected`` with their reasons."""
    good = []
    for trace_id, line in traces:
        _, problems, _ = _validate(Path(f"otlp-http/{trace_id}"), line, known, options, merging)
        if problems:
            result.rejected[trace_id] = "; ".join(str(p) for p in problems.problems[:3])
        else:
            good.append((trace_id, line))
    return good


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)

"""An OTLP file holding spans of traces already stored: merged with the stored spans, as the live receiver merges
late spans (``ingest.otlp.merge``, the one code path of both).

An exporter writing files splits a trace across files (the Collector's file exporter rotating, an SDK's batch
processor flushing finished children before the root ends). Each file stays all or nothing: its new traces, and
its traces already stored merged with their stored spans and read again as one trace, are written in one
transaction, in which the attempts they replace are deleted (``replace_merged``); a problem anywhere refuses the
whole file (``file:line: reason``) and writes nothing. The file is idempotent by its content hash as any file; a
file whose every span is stored already changes nothing. A trace stored without its spans (by an older version)
cannot be merged: the file is refused, naming the trace and what to do. An archive's member is merged the same way
from its bytes (``ingest.archives`` hands them over: an OTLP member is read whole), each member a file of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.errors import IngestError, Problem, ProblemCollector
from ingest.otlp.lines import as_line
from ingest.otlp.merge import Plan, Stored, adjusted, forgetting, plan, replace_merged, stored_traces
from ingest.otlp.reader import parse_otlp
from ingest.otlp.traces import group_traces
from ingest.otlp_decode import read_spans
from ingest.records import Bundle, Known, Normaliser

if TYPE_CHECKING:
    from ingest.pipeline import FileResult, Prepared


def _trace_ids(prepared: Prepared, data: bytes | None) -> set[str]:
    """The traces a prepared OTLP file names: from its bundle, else (a file refused) read again from ``data`` or
    from disk."""
    if prepared.bundle is not None:
        return set(prepared.bundle.traces)
    try:
        data = Path(prepared.path).read_bytes() if data is None else data
    except OSError:
        return set()  # (an archive's member without its bytes: nothing to read again)
    return {s.trace_id for s in read_spans(Path(prepared.path), data, ProblemCollector())}


def names_stored_traces(con: Any, prepared: Prepared, known: Known, data: bytes | None = None) -> bool:
    """True when a prepared OTLP file (validated or refused) holds spans of a trace already stored: it is then
    read again and merged (``merge_file``), not written as validated. ``data``: an archive member's bytes.

    Raises:
        IngestError: such a file is an archive's member whose bytes were not given (nothing to merge from).
    """
    if prepared.duplicate_of is not None or (prepared.content_hash and prepared.content_hash in known.hashes):
        return False
    stored = stored_traces(con, _trace_ids(prepared, data))
    if stored and data is None and not Path(prepared.path).is_file():
        raise IngestError.single(
            f"{prepared.path}:1",
            "traceId",
            f"trace {min(stored)} is stored already, and this archive member's spans were not kept to merge with it; "
            "ingest the archive again (python -m ingest ARCHIVE merges them)",
        )
    return bool(stored)


@dataclass
class Merged:
    """An OTLP file read merged with the stored spans of its traces, validated, not written."""

    path: Path
    content_hash: str
    merging: Plan
    bundle: Bundle | None  # None: every span of the file is stored already (nothing to write)


def merge_file(
    con: Any, prepared: Prepared, known: Known, *, is_demo: bool, options: dict[str, Any], data: bytes | None = None
) -> FileResult | None:
    """Write an OTLP file holding spans of traces already stored, merged with them (one transaction); None when it
    names no stored trace (the file is written the usual way). ``data``: the bytes of an archive's member.

    Raises:
        IngestError: the file is invalid (read alone or merged), or a trace it names was stored without its spans.
    """
    started = time.perf_counter()
    merged = read_merged(con, prepared, known, options, data)
    if merged is None:
        return None
    return _write(con, merged, known, prepared, started, is_demo)


def read_merged(
    con: Any, prepared: Prepared, known: Known, options: dict[str, Any], data: bytes | None = None
) -> Merged | None:
    """A prepared OTLP file read again merged with the stored spans of its traces and validated (what
    ``merge_file`` writes; the Upload page's preview shows it); None when it names no stored trace.

    Raises:
        IngestError: the file is invalid (read alone or merged), or a trace it names was stored without its spans.
    """
    if not names_stored_traces(con, prepared, known, data):
        return None
    if prepared.bundle is not None:
        prepared.bundle.release()
    from ingest.formats import FORMATS
    from ingest.pipeline import _content_hash, read_input

    path = Path(prepared.path)
    data = read_input(path) if data is None else data
    fmt = FORMATS["otlp"]
    extra = fmt.fingerprint(path, data, options) if fmt.fingerprint is not None else {}
    content_hash = _content_hash(path, data, fmt, {**options, **extra})
    problems = ProblemCollector()
    traces = group_traces(path, read_spans(path, data, problems, keep_parts=True), problems)
    problems.raise_if_any()
    first_line = {t.trace_id: min(s.line for s in t.spans) for t in traces}
    lines = [(t.trace_id, as_line([s.part for s in t.spans if s.part is not None])) for t in traces]
    merging = plan(lines, stored_traces(con, first_line))
    if merging.unmergeable:
        raise IngestError([_unmergeable(path, first_line[t], t, r) for t, r in merging.unmergeable.items()])
    if not merging.lines:  # every span stored already: nothing changes
        return Merged(path, content_hash, merging, None)
    ours = known.copy()
    forgetting(ours, {key for r in merging.replaced.values() for key in r.keys})
    merged = b"\n".join(line for _, line in merging.lines) + b"\n"
    records = adjusted(parse_otlp(path, merged, problems, **options), ours, merging)
    bundle = Normaliser(ours, problems).feed(records)
    if problems:  # locations in the file: the first line of each trace's spans
        where = {f"{path}:{i}": f"{path}:{first_line[t]}" for i, (t, _) in enumerate(merging.lines, start=1)}
        raise IngestError([Problem(where.get(p.location, p.location), p.field, p.reason) for p in problems.problems])
    bundle.freeze()
    return Merged(path, content_hash, merging, bundle)


def merge_note(n_merged: int, n_already: int) -> str:
    """What a file's merges did, in words (the CLI line and the Upload page say it)."""
    note = f"{n_merged} trace(s) merged with the spans stored earlier (their attempts replaced)"
    return note + (f", {n_already} stored whole already" if n_already else "")


def _unmergeable(path: Path, line: int, trace_id: str, stored: Stored) -> Problem:
    runs = ", ".join(sorted({repr(k[0]) for k in stored.keys}))
    return Problem(
        f"{path}:{line}",
        "traceId",
        f"trace {trace_id} is stored already (run {runs}) without its spans (ingested by an older version), so "
        "the spans of this file cannot be merged with it: delete that run (Upload page) and ingest all of its "
        "trace files again",
    )


def _write(con: Any, merged: Merged, known: Known, prepared: Prepared, started: float, is_demo: bool) -> FileResult:
    from ingest.pipeline import FileResult, _new_definitions
    from ingest.rule_labels import label_rules as _label_rules
    from store.ingest_writer import write_bundle

    path, merging, bundle = merged.path, merged.merging, merged.bundle
    if bundle is None:
        return FileResult(
            str(path), "otlp", "duplicate", n_already=len(merging.already), seconds=time.perf_counter() - started
        )
    new_rows = _new_definitions(bundle, known) or []
    labels = _label_rules(bundle, known)

    def before_commit(con: Any, file_id: int) -> None:
        replace_merged(con, file_id, merging, reason="otlp spans merged from a file")
        if labels is not None:
            labels(con, file_id)

    _, retries = write_bundle(
        con,
        bundle,
        path=str(path),
        content_hash=merged.content_hash,
        fmt="otlp",
        is_demo=is_demo,
        started_at=prepared.started_at,
        seconds=time.perf_counter() - started,
        before_commit=before_commit,
    )
    for kind, row in new_rows:
        known.add(kind, row)
    known.hashes[merged.content_hash] = str(path)
    return FileResult(
        str(path),
        "otlp",
        "ingested",
        len(bundle.runs["run_id"]),
        len(bundle.tasks["task_id"]),
        bundle.n_attempts,
        bundle.n_steps,
        time.perf_counter() - started,
        warnings=(f"the commit conflicted with another one and was retried {retries} time(s)",) if retries else (),
        n_partial=bundle.n_partial,
        n_merged=len(merging.replaced),
        n_already=len(merging.already),
    )

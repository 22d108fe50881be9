"""Spans of a trace already stored, merged with the stored ones: the one code path of the live receiver
(``ingest.otlp_receiver.batches``) and of file ingest (``ingest.otlp.filemerge``).

Every OTLP attempt keeps its trace's spans (OTLP/JSON in ``texts``, named by ``extra.otlp_spans``). Spans of a
trace already stored are merged with those (``plan``), the merged trace is read again as one trace, and the
attempts it gives replace the stored ones in the same transaction (``replace_merged``: reviews moved, derived rows
dropped, ``ingest_log`` facts recomputed, an ``audit_log`` row). Records of the merged read are made to fit the
store (``adjusted``): definitions already stored are kept, a sample number already taken becomes the next free one
(a rebuilt attempt keeps its own), and a score given after the run (``extra.late_score``) is kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingest.otlp.lines import kept_line, merged_line
from ingest.records import Known
from ingest.records.bundle import KeptSpans
from store.attempt_update import replace_attempts


@dataclass
class Stored:
    """The attempts a trace already has in the store, and its spans as stored (None: not kept)."""

    attempt_ids: list[int]
    keys: set[tuple[str, str, int]]
    spans_hash: str | None
    line: bytes | None = None
    late_score: dict[str, Any] | None = None  # a score given after the run (extra.late_score): kept on a rebuild


def _otlp_files(con: Any) -> list[int]:
    """The file ids of OTLP ingests (files and receiver batches): only their attempts can hold a trace."""
    return [int(r[0]) for r in con.execute("SELECT file_id FROM ingest_log WHERE format = 'otlp'").fetchall()]


def stored_traces(con: Any, trace_ids: Iterable[str]) -> dict[str, Stored]:
    """Trace id -> its stored attempts, of ``trace_ids`` already stored (with the OTLP/JSON of their spans when
    kept: ``extra.otlp_spans``, a key into ``texts``). Only attempts of OTLP ingests are read: a store without any
    costs one look-up in ``ingest_log``, and attempts are pruned by ``file_id`` (written in file order)."""
    ids = sorted(set(trace_ids))
    files = _otlp_files(con) if ids else []
    if not files:
        return {}
    rows = con.execute(
        "SELECT json_extract_string(extra, '$.trace_id') AS t, attempt_id, run_id, task_id, sample, "
        "json_extract_string(extra, '$.otlp_spans'), json_extract_string(extra, '$.late_score') FROM attempts "
        "WHERE file_id BETWEEN ? AND ? AND file_id IN (SELECT unnest(?::BIGINT[])) "
        "AND t IN (SELECT unnest(?::VARCHAR[])) ORDER BY attempt_id",
        [min(files), max(files), files, ids],
    ).fetchall()
    out: dict[str, Stored] = {}
    for trace_id, attempt_id, run_id, task_id, sample, spans_hash, late in rows:
        entry = out.setdefault(trace_id, Stored([], set(), spans_hash))
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
                entry.line = kept_line(texts[entry.spans_hash])
    return out


@dataclass
class Plan:
    """What to write of some traces given what is stored."""

    lines: list[tuple[str, bytes]] = field(default_factory=list)  # (trace id, line) to read: new or merged
    replaced: dict[str, Stored] = field(default_factory=dict)  # merged traces: the attempts they replace
    already: list[str] = field(default_factory=list)  # traces whose every span is stored already
    unmergeable: dict[str, Stored] = field(default_factory=dict)  # stored without their spans (an older version)

    @property
    def late(self) -> dict[str, dict[str, Any]]:
        """Trace id -> the score given after the run to its one stored attempt (kept by the rebuilt one)."""
        return {
            t: r.late_score for t, r in self.replaced.items() if r.late_score is not None and len(r.attempt_ids) == 1
        }


def plan(traces: Iterable[tuple[str, bytes]], stored: dict[str, Stored]) -> Plan:
    """New traces as they are; a trace already stored merged with its stored spans (each span once), or left out
    when it brings no new span (``already``) or its spans were not kept (``unmergeable``)."""
    out = Plan()
    for trace_id, line in traces:
        before = stored.get(trace_id)
        if before is None:
            out.lines.append((trace_id, line))
        elif before.line is None:
            out.unmergeable[trace_id] = before
        else:
            merged, added = merged_line(before.line, line)
            if not added:
                out.already.append(trace_id)
            else:
                out.lines.append((trace_id, merged))
                out.replaced[trace_id] = before
    return out


def forgetting(known: Known, freed: set[tuple[str, str, int]]) -> None:
    """Make ``known`` (and its copies) see the attempts about to be replaced as gone: their keys are free."""
    loader = known.attempt_loader
    if loader is None or not freed:
        return

    def without(run_id: str) -> dict[tuple[str, int], int]:
        return {k: v for k, v in loader(run_id).items() if (run_id, *k) not in freed}

    known.attempt_loader = without
    known.attempts = {k: v for k, v in known.attempts.items() if k not in freed}


def adjusted(records: Iterable[tuple[str, Any]], known: Known, merging: Plan) -> list[tuple[str, Any]]:
    """Records read from traces (some merged) made to fit what is stored: definitions already stored are kept as
    stored (the first trace of a run defines it), an attempt rebuilt from a merged trace keeps its sample number
    when its run and task are unchanged, a sample number already taken becomes the next free one, and an attempt
    rebuilt from a trace that was scored after the run keeps that score."""
    out: list[tuple[str, Any]] = []
    taken: set[tuple[str, str, int]] = set()
    late = merging.late
    for loc, rec in records:
        if rec.__class__ is KeptSpans:
            out.append((loc, rec))
            continue
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
            trace_id = rec.get("trace_id", "")
            sample = int(rec.get("sample") or 0)
            before = merging.replaced.get(trace_id)
            own = sorted(s for r, t, s in (before.keys if before else ()) if (r, t) == (rec["run_id"], rec["task_id"]))
            if own and (rec["run_id"], rec["task_id"], own[0]) not in taken:
                sample = own[0]  # its stored key is free (``forgetting``): the rebuilt attempt keeps it
            while (rec["run_id"], rec["task_id"], sample) in taken or known.existing_attempt(
                (rec["run_id"], rec["task_id"], sample)
            ) is not None:
                sample += 1
            taken.add((rec["run_id"], rec["task_id"], sample))
            rec = {**rec, "sample": sample}
            given = late.get(trace_id)
            if given is not None:
                rec.pop("is_scored", None)
                rec.update({k: given.get(k) for k in ("score", "raw_score", "passed")}, late_score=given)
                rec["metrics"] = {**(rec.get("metrics") or {}), **(given.get("metrics") or {})}
        out.append((loc, rec))
    return out


def replace_merged(con: Any, file_id: int, merging: Plan, *, reason: str) -> None:
    """Inside the transaction that wrote ``file_id``: delete the attempts the merged traces replace; a trace with
    one attempt before and after has its reviews follow it (``store.attempt_update.replace_attempts``)."""
    if not merging.replaced:
        return
    new_ids: dict[str, list[int]] = {}
    for trace_id, attempt_id in con.execute(
        "SELECT json_extract_string(extra, '$.trace_id'), attempt_id FROM attempts WHERE file_id = ?", [file_id]
    ).fetchall():
        new_ids.setdefault(trace_id, []).append(int(attempt_id))
    successors: dict[int, int] = {}
    for trace_id, before in merging.replaced.items():
        after = new_ids.get(trace_id, [])
        if len(before.attempt_ids) == 1 and len(after) == 1:
            successors[before.attempt_ids[0]] = after[0]
    replace_attempts(
        con,
        [i for r in merging.replaced.values() for i in r.attempt_ids],
        reason=reason,
        detail={"trace_ids": sorted(merging.replaced), "file_id": file_id},
        successors=successors,
    )

"""The normaliser: reads a file's records one by one, each by the handler of its kind, collecting problems and
filling a Bundle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ingest.fastpath import FastLine, TaskLine
from ingest.jsonline import load_record
from ingest.records.attempt import _FastFields
from ingest.records.bundle import Bundle, KeptSpans
from ingest.records.definitions import DefinitionRecords
from ingest.records.fields import RECORD_KINDS, _Bad, _Fallback, _type_name
from ingest.records.rating import RatingRecords


class Normaliser(DefinitionRecords, RatingRecords):
    """Validates records one by one, collecting problems and filling a Bundle."""

    def feed(self, records: Iterable[tuple[str, Any]]) -> Bundle:
        """Validate and normalise every record of a file; problems go to the collector.

        A record is a decoded JSON value, or a :class:`~ingest.fastpath.FastLine` (an attempt line the native
        reader decoded with the fast path); a fast line any check would refuse is re-read and normalised by the
        general path, which reports the problem exactly as for any other line.
        """
        self.feed_part(records)
        return self.finish()

    def feed_part(self, records: Iterable[tuple[str, Any]]) -> None:
        """Validate and normalise the records of part of a file (``feed`` is every part, then ``finish``)."""
        handlers = {
            "benchmark": self._benchmark,
            "task": self._task,
            "run": self._run,
            "attempt": self._attempt,
            "rating": self._rating,
        }
        for loc, rec in records:
            task_line = None
            if rec.__class__ is FastLine:
                n_steps = len(self.bundle.steps)
                try:
                    self._add_attempt(_FastFields(rec.attempt))
                    continue
                except (_Bad, _Fallback):
                    del self.bundle.steps[n_steps:]  # the steps of the attempt appended before the check failed
                rec, reason = load_record(bytes(rec.raw))  # (a view of the line, from the native reader)
                if reason is not None:
                    self.problems.add(loc, "-", reason)
                    continue
            elif rec.__class__ is TaskLine:
                try:
                    if self._repeated_task(loc, rec.raw):
                        continue
                except _Bad as bad:
                    self.problems.add(loc, bad.field, bad.reason)
                    continue
                task_line = rec.raw
                rec, reason = load_record(task_line)
                if reason is not None:
                    self.problems.add(loc, "-", reason)
                    continue
            if not isinstance(rec, dict):
                if rec.__class__ is KeptSpans:  # (off the hot path: only records that are not objects get here)
                    self.bundle.texts.setdefault(rec.digest, rec.text)
                    self.bundle.traces[rec.trace_id] = rec.digest
                    continue
                self.problems.add(loc, "-", f"expected a JSON object, got {_type_name(rec)}")
                continue
            kind = rec.get("record")
            if not isinstance(kind, str) or kind not in handlers:  # a list or object here is unhashable
                what = "missing" if kind is None else f"{kind!r} is not one of {', '.join(RECORD_KINDS)}"
                self.problems.add(loc, "record", what)
                continue
            self._task_line = task_line  # (for ``_task``: the row of a TaskLine is kept for a repeat of its bytes)
            try:
                handlers[kind](loc, rec)
            except _Bad as bad:
                self.problems.add(loc, bad.field, bad.reason)
            finally:
                self._task_line = None

    def finish(self) -> Bundle:
        """The checks that need the whole file, once every part is fed; the bundle."""
        new_runs = {key[0] for key in self._file_attempts}
        for run_id, loc in self._revision_locs.items():
            if run_id not in self._revision_scored and run_id not in new_runs:
                # an unscored log of a stored eval that adds no attempt either (the original met after its
                # `inspect score`): it would only empty the stored scores; revisions follow the order of ingest
                self.problems.add(
                    loc,
                    "run_id",
                    f"run {run_id!r} is stored already and this log of the same eval has no scores to revise it "
                    "with (an unscored original after its re-scored log adds nothing)",
                )
        return self.bundle

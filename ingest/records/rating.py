"""Rating records: a rater's value on one dimension of an attempt of this file or of the database."""

from __future__ import annotations

from typing import Any

from ingest.records.attempt import AttemptRecords
from ingest.records.bundle import _append
from ingest.records.fields import RATER_KINDS, RATING_FIELDS, _Bad, _enum, _extra, _ident, _number


class RatingRecords(AttemptRecords):
    """The handler of rating records."""

    def _rating(self, loc: str, rec: dict[str, Any]) -> None:
        _, run_id, task_id, sample = self._attempt_key(rec)
        key = (run_id, task_id, sample)
        row = {
            "attempt_ix": self._file_attempts.get(key),
            "attempt_id": self.known.existing_attempt(key),
            "rater": _ident(rec, "rater"),
            "rater_kind": _enum(rec, "rater_kind", RATER_KINDS, "llm"),
            "dimension": _ident(rec, "dimension"),
            "value": _number(rec, "value"),
            "extra": _extra(rec, RATING_FIELDS),
        }
        if row["value"] is None:
            raise _Bad("value", "missing required field")
        if row["attempt_ix"] is None and row["attempt_id"] is None:
            raise _Bad("sample", f"no attempt (run {run_id!r}, task {task_id!r}, sample {sample}) to rate")
        _append(self.bundle.ratings, row)

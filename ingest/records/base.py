"""The state a file's normaliser keeps while it reads records, shared by the handlers of each record kind."""

from __future__ import annotations

from typing import Any

from ingest.errors import ProblemCollector
from ingest.records.bundle import Bundle, _append
from ingest.records.fields import _Bad
from ingest.records.known import Known


class NormaliserState:
    """What a file's records build up: the bundle, the problems, what is known, the attempts seen so far."""

    def __init__(self, known: Known, problems: ProblemCollector, *, revises_scores: bool = False) -> None:
        """``revises_scores``: the format can re-score a run already stored (an Inspect log after ``inspect score``:
        the same eval, new scores); its run then replaces the stored run's status and extra, and its stored
        attempts get new scores (a revision) instead of being refused as duplicates."""
        self.known = known
        self.problems = problems
        self.bundle = Bundle()
        self._file_attempts: dict[tuple[str, str, int], int] = {}
        self.revises_scores = revises_scores
        self._rescored: set[tuple[str, str, int]] = set()
        self._revision_locs: dict[str, str] = {}  # revised run -> location of its run record
        self._revision_scored: set[str] = set()  # revised runs of which this file scores at least one attempt
        self._task_line: bytes | None = None  # the bytes of the task line being read (a TaskLine), else None

    def _define(self, loc: str, key: tuple[str, ...], row: dict[str, Any], cols: dict[str, list[Any]]) -> bool:
        """Record a definition; identical repeats are skipped, conflicting ones are errors."""
        if key[0] == "task":
            self.known.ensure_tasks(str(row["benchmark"]))
        seen = self.known.definitions.get(key)
        if seen is not None:
            if seen != row:
                diff = sorted(k for k in row if row.get(k) != seen.get(k))
                raise _Bad(key[0], f"{key[1]!r} is already defined with different {', '.join(diff)}")
            return False
        self.known.add(key[0], row)
        _append(cols, row)
        return True

"""Human reviews go into ``reviews`` through the one writer: validated, appended (never overwriting the log's own
labels or an earlier review), with the reviewer and the time (UTC). The review form (``ui/review.py``) takes its
vocabulary from here: the verdicts, the limits on names and notes, the shape of an error code."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import NamedTuple

from store import Location, RunlensError, derived, transaction, writer

VERDICTS = ("correct", "incorrect")
MAX_NOTE_CHARS = 4000
MAX_REVIEWER_CHARS = 80
CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,31}$")


class ReviewError(RunlensError):
    """A review the store refuses (no reviewer, an unknown verdict or attempt, a malformed code)."""


def clean_review(reviewer: str, verdict: str, codes: Sequence[str], note: str | None) -> tuple[str, list[str], str]:
    """The reviewer's name and the codes and note as stored; raises ReviewError on bad input."""
    name = " ".join((reviewer or "").split())
    if not name:
        raise ReviewError("type your name as reviewer first")
    if len(name) > MAX_REVIEWER_CHARS:
        raise ReviewError(f"the reviewer name is longer than {MAX_REVIEWER_CHARS} characters")
    if verdict not in VERDICTS:
        raise ReviewError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    clean = sorted({c.strip().upper() for c in codes if c and c.strip()})
    bad = [c for c in clean if not CODE_RE.match(c)]
    if bad:
        raise ReviewError(f"error codes are letters, digits and _ (like PE or NO_TOOL): {', '.join(bad)}")
    text = (note or "").strip()
    if len(text) > MAX_NOTE_CHARS:
        raise ReviewError(f"the note is longer than {MAX_NOTE_CHARS} characters")
    return name, clean, text


class Review(NamedTuple):
    """One human review to record: the attempt, who reviewed it, the verdict, error codes and a note."""

    attempt_id: int
    reviewer: str
    verdict: str
    codes: Sequence[str] = ()
    note: str | None = None


def record_review(
    db: Location,
    *,
    attempt_id: int,
    reviewer: str,
    verdict: str,
    codes: Sequence[str] = (),
    note: str | None = None,
    now: dt.datetime | None = None,
) -> int:
    """Append one human review of an attempt and publish it; return its ``review_id``.

    Raises:
        ReviewError: bad input, or no attempt with that id.
    """
    (review_id,) = record_reviews(db, [Review(attempt_id, reviewer, verdict, codes, note)], now=now)
    return review_id


def record_reviews(db: Location, reviews: Sequence[Review], *, now: dt.datetime | None = None) -> list[int]:
    """Append several human reviews in one writer session and one transaction, published once (not once a
    review); their ``review_id`` in order. A bad review, or one of an attempt the store does not hold, refuses them
    all: none is written.

    Raises:
        ReviewError: bad input, or no attempt with one of the ids.
    """
    cleaned = [clean_review(r.reviewer, r.verdict, r.codes, r.note) for r in reviews]
    at = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(tzinfo=None)
    if not reviews:
        return []
    ids = []
    with writer(db) as con, transaction(con):
        for r, (name, clean, text) in zip(reviews, cleaned, strict=True):
            review_id = derived.insert_review(
                con,
                attempt_id=int(r.attempt_id),
                reviewer=name,
                verdict=r.verdict,
                codes=clean,
                note=text or None,
                created_at=at,
                own=False,
            )
            if review_id is None:  # the transaction is rolled back: none of the batch is written
                raise ReviewError(f"no attempt with id {r.attempt_id}")
            ids.append(review_id)
    return ids

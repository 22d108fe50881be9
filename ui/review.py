"""The human-review widgets shared by the drilldown and the Review page: the reviewer's name (typed once, kept for
the session), the review form, and an attempt's reviews. Reviews are stored through the one writer
(jobs/reviews.py); notes and codes typed by people are shown as plain text like every log text."""

from __future__ import annotations

import streamlit as st

from analytics import errors as err
from analytics import review as rv
from jobs.reviews import MAX_NOTE_CHARS, MAX_REVIEWER_CHARS, VERDICTS, ReviewError, record_review
from ui.common import cached, db_path, plain
from ui.tables import Col, show_table

REVIEW_COLS = [
    Col("reviewer", "Reviewer"),
    Col("verdict", "Verdict"),
    Col("codes", "Codes"),
    Col("note", "Note"),
    Col("created_at", "When (UTC)", "datetime"),
    Col("source", "Source", is_default=False),
    Col("is_current", "Current", "flag", help="the reviewer's newest review of this attempt (the one that counts)"),
]

NAME_KEY = "reviewer_name"  # not a widget key: Streamlit drops a widget's state on pages that do not draw it


def reviewer() -> str:
    """The reviewer's name kept for this session ('' until typed)."""
    return str(st.session_state.get(NAME_KEY) or "")


def _keep_name(key: str) -> None:
    st.session_state[NAME_KEY] = " ".join(str(st.session_state.get(key) or "").split())


def name_input(*, key: str) -> str:
    """The reviewer's name field, prefilled from the session; returns the name."""
    st.session_state[key] = reviewer()
    st.text_input(
        "Reviewer (your name, kept for this session)",
        key=key,
        max_chars=MAX_REVIEWER_CHARS,
        on_change=_keep_name,
        args=(key,),
    )
    return reviewer()


def review_form(attempt_id: int, *, key: str) -> None:
    """Verdict, error codes and a note for one attempt, saved as a review with the reviewer and the time (UTC)."""
    flash = st.session_state.pop(f"{key}_flash", None)
    if flash:
        st.success(plain(flash))
    name_input(key=f"{key}_name")
    with st.form(key=f"{key}_form", clear_on_submit=True):
        verdict = st.radio("Verdict", VERDICTS, index=None, horizontal=True, key=f"{key}_verdict")
        codes = st.multiselect(
            "Error codes",
            err.KNOWN_CODES,
            key=f"{key}_codes",
            accept_new_options=True,
            help=", ".join(f"{c}: {n}" for c, n in err.CODE_NAMES.items()),
        )
        note = st.text_area("Note", key=f"{key}_note", max_chars=MAX_NOTE_CHARS, height=80)
        saved = st.form_submit_button("Save review", key=f"{key}_save", type="primary")
    if saved:
        try:
            rid = record_review(
                db_path(), attempt_id=attempt_id, reviewer=reviewer(), verdict=verdict or "", codes=codes, note=note
            )
        except ReviewError as exc:
            st.error(plain(str(exc)))
        else:  # rerun so the reviews table and the queue drawn above show the new review
            st.session_state[f"{key}_flash"] = f"Review #{rid} saved as {reviewer()}: {verdict}."
            st.rerun()


def reviews_table(attempt_id: int, *, key: str) -> None:
    """An attempt's human reviews, newest first (or a caption when there are none)."""
    reviews = cached(rv.reviews_of, attempt_id=attempt_id)
    if reviews.empty:
        st.caption("No human review yet.")
        return
    show_table(reviews, REVIEW_COLS, key=key, name=f"reviews-{attempt_id}")

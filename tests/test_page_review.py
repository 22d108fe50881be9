# ruff: noqa: F811  (pytest fixtures imported from the analytics tests are redefined as arguments)
"""The Review page and the drilldown's review panel (AppTest): agreement before the queue, a review saved with the
reviewer typed once, and a bad review refused with a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.plaintext import md_plain
from store import reader
from tests.apptest import open_page
from tests.test_review import _copy, review_db  # noqa: F401  (the fixture)


def _reviews(db: Path) -> list[tuple]:
    with reader(db) as con:
        return con.execute("SELECT reviewer, verdict, codes, note FROM reviews WHERE reviewer = 'Zoe'").fetchall()


def test_review_page_shows_agreement_and_saves(
    review_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _copy(review_db, tmp_path)
    at = open_page("views/review.py", db, monkeypatch, benchmark="rb", queue="failed")
    assert any(md_plain("log judge judge-x: kappa") in i.value for i in at.info)  # log text shown escaped
    verdicts = next(d.value for d in at.dataframe if "Rater" in d.value.columns)
    assert {"log score", "log judge judge-x"} <= set(verdicts["Rater"])
    assert not verdicts.astype(str).isin(["None", "nan", "nan to nan"]).any().any()
    corrected = at.dataframe[0].value  # the judge's figures corrected by the reviews come first
    assert corrected["Figure"].iloc[0] == "judged pass rate" and "nan" not in corrected.to_string()
    assert any("Fleiss" in c.value for c in at.caption)
    queue = next(d.value for d in at.dataframe if "Reviewed by you" in d.value.columns)
    assert set(queue["Passed"]) == {"✗"} and queue["Open"].str.startswith("drilldown?run=run-1").all()
    assert "None" not in queue.to_string() and "nan" not in queue.to_string()
    at.text_input(key="rv_form_name").input("Zoe").run()
    at.radio(key="rv_form_verdict").set_value("incorrect")
    at.multiselect(key="rv_form_codes").set_value(["PE"])
    at.text_area(key="rv_form_note").input("wrong account id")
    at.button(key="rv_form_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("saved as Zoe" in s.value for s in at.success)
    assert _reviews(db) == [("Zoe", "incorrect", ["PE"], "wrong account id")]
    # the name is kept for the session: the next review needs no typing
    at.radio(key="rv_form_verdict").set_value("correct")
    at.button(key="rv_form_save").click().run()
    assert len(_reviews(db)) == 2


def test_drilldown_review_panel_refuses_without_a_verdict(
    review_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = _copy(review_db, tmp_path)
    at = open_page("views/drilldown.py", db, monkeypatch, run="run-1", task="T00", sample="0")
    assert "Human reviews" in [e.label for e in at.expander]
    assert not any("Reviewer" in d.value.columns for d in at.dataframe)  # read when the panel is opened
    at.session_state["dd_reviews_open"] = True
    at.run()
    reviews = next(d.value for d in at.dataframe if "Reviewer" in d.value.columns)
    assert set(reviews["Reviewer"]) == {"A", "B"}
    at.text_input(key="dd_review_name").input("Zoe").run()
    at.button(key="dd_review_save").click().run()
    assert any("verdict must be one of" in e.value for e in at.error)
    at.radio(key="dd_review_verdict").set_value("correct")
    at.button(key="dd_review_save").click().run()
    assert [r[:2] for r in _reviews(db)] == [("Zoe", "correct")]
    shown = next(d.value for d in at.dataframe if "Reviewer" in d.value.columns)
    assert "Zoe" in set(shown["Reviewer"])  # the table above the form shows the new review at once


def test_errors_page_says_how_far_the_judge_is_trusted(review_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/errors.py", review_db, monkeypatch, benchmark="rb")
    trust = [i.value for i in at.info if "Judge agreement with human reviewers" in i.value]
    assert len(trust) == 1 and md_plain("log judge judge-x: kappa") in trust[0]


def test_an_unknown_queue_in_the_link_gives_a_notice(
    review_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_page("views/review.py", _copy(review_db, tmp_path), monkeypatch, benchmark="rb", queue="bogus")
    assert any("queue 'bogus' is not one of" in i.value.replace("\\", "") for i in at.info)
    assert at.session_state["rv_queue"] == "failed"

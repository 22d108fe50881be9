# ruff: noqa: F811  (pytest fixtures imported from the analytics tests are redefined as arguments)
"""The Search page (AppTest): a deep-linked query lists its hits with the match marked, a bad regex is an error
message, and a hit's link opens the drilldown with that step marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apptest import open_page
from tests.test_search import search_db  # noqa: F401  (the fixture)


def test_search_page_lists_hits(search_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/search.py", search_db, monkeypatch, benchmark="sb", q="rate limit")
    assert [m.value for m in at.metric][:2] == ["2", "2"]
    table = at.dataframe[0].value
    assert set(table["Run"]) == {"r-a", "r-b"}
    assert any("⟦Rate Limit⟧" in m for m in table["Match"])
    assert all(u.startswith("drilldown?run=") and "&step=0" in u for u in table["Open"])
    assert at.selectbox(key="se_pick").options


def test_search_page_words_mode_and_bad_regex(search_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/search.py", search_db, monkeypatch, benchmark="sb", q="limit rate", mode="words")
    assert at.metric[0].value == "2" and at.metric[1].value == "3"
    at.segmented_control(key="se_mode").set_value("regex")
    at.text_input(key="se_q").set_value("(a").run()
    assert not at.exception
    assert any("invalid regular expression" in e.value for e in at.error)


def test_search_page_without_query_explains(search_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/search.py", search_db, monkeypatch, benchmark="sb")
    assert any("Type a phrase" in i.value for i in at.info)


def test_drilldown_marks_the_hit_step(search_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/drilldown.py", search_db, monkeypatch, run="r-a", task="T1", sample="0", step="2")
    values = [m.value for m in at.markdown]
    marks = [i for i, v in enumerate(values) if "search hit" in v]
    assert len(marks) == 1 and values[marks[0] - 1] == "**Step 2**"  # the badge sits in step 2's header
    texts = [t.value for t in at.text]
    assert any("hello (world)" in t for t in texts)


def test_search_page_back_restores_the_earlier_query(search_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/search.py", search_db, monkeypatch, benchmark="sb", q="rate limit")
    at.text_input(key="se_q").set_value("quota").run()
    assert at.query_params["q"] in ("quota", ["quota"]) and "mode" not in at.query_params  # the default is left out
    at.query_params["q"] = "rate limit"  # Back
    at.run()
    assert at.text_input(key="se_q").value == "rate limit" and [m.value for m in at.metric][:2] == ["2", "2"]
    at = open_page("views/search.py", search_db, monkeypatch, benchmark="sb", q="x", mode="bogus")
    assert any("bogus" in i.value for i in at.info) and at.segmented_control(key="se_mode").value == "phrase"

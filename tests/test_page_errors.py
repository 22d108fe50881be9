"""AppTest of the Errors page: real numbers, the judge hint without an endpoint, and the click-through links."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import open_page
from tests.test_errors import labels_db  # noqa: F401 - the hand-made labels fixture


def _frame(element) -> pd.DataFrame:
    value = element.value
    return value.data if hasattr(value, "data") else value  # a Styler keeps its frame in .data


def _open(
    db: Path, env_db, monkeypatch: pytest.MonkeyPatch, *, judge_env: dict[str, str] | None = None, **params: str
) -> AppTest:
    for name in ("OPENAI_BASE_URL", "RUNLENS_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (judge_env or {}).items():
        monkeypatch.setenv(name, value)
    env_db(db)
    return open_page("views/errors.py", db, monkeypatch, timeout_s=60, **params)


FRAME_COLUMNS = {
    "err_t3": "#Error",
    "err_attempts": "Open",
    "err_rates": "Failed %",
}  # AppTest does not expose a dataframe's key


def _by_key(at: AppTest, key: str) -> pd.DataFrame:
    return next(f for f in map(_frame, at.dataframe) if FRAME_COLUMNS[key] in f.columns)


def test_page_counts_hint_and_click_through(labels_db: Path, env_db, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    at = _open(labels_db, env_db, monkeypatch, err_run="eb-v3", err_code="PE", err_code_b="TE")
    rates = _by_key(at, "err_rates").set_index("Model")  # read first: per attempt, with intervals
    assert rates.loc["Agent X v3", "PE %"].endswith("]") and "[" in rates.loc["Agent X v3", "PE %"]
    assert not rates.astype(str).isin(["None", "nan"]).any().any()
    t3 = _by_key(at, "err_t3").set_index("Model")
    assert (t3.loc["Agent X v3", "PE."], t3.loc["Agent X v3", "#Error"], t3.loc["Agent X v3", "#Total"]) == (
        "5",
        "8",
        "9",
    )
    styles = str(
        next(d.proto for d in at.dataframe if "#Error" in _frame(d).columns)
    )  # the grid's cell styles travel with it
    assert "font-weight: bold" in styles and "text-decoration: underline" in styles  # AD-Bench's fewest, second
    assert not t3.isin(["None", "nan"]).any().any() and "run_id" not in t3.columns
    assert t3.loc["Agent X v4", "#Error"] == "7"  # every source: rule DE and judge HAL join the log labels
    assert any("OPENAI_BASE_URL" in i.value for i in at.info)  # says how to enable the judge
    assert any("parameter errors (PE)" in t.value for t in at.text)
    # the deep link (what a click on the PE x TE cell writes) lists the attempts behind it, each with its URL
    rows = _by_key(at, "err_attempts")
    assert rows["Task"].tolist() == ["B", "D"]
    assert rows["Open"].tolist() == ["drilldown?run=eb-v3&task=B&sample=0", "drilldown?run=eb-v3&task=D&sample=0"]
    assert len(at.get("plotly_chart")) == 2


def test_page_source_and_facet(labels_db: Path, env_db, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    # a configured endpoint (never contacted by the page) replaces the how-to-enable hint with the judge's status
    judge_env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "RUNLENS_JUDGE_MODEL": "local-judge"}
    at = _open(labels_db, env_db, monkeypatch, judge_env=judge_env, err_sources="judge")
    assert not any("OPENAI_BASE_URL" in i.value for i in at.info)
    judge = next(c.value for c in at.caption if "local-judge" in c.value)
    assert "; 0 verdicts stored for eb." in judge, judge  # the count with its noun (fmt.plural)
    rates = _by_key(at, "err_rates").set_index("Model")  # read first: per attempt, with intervals
    assert rates.loc["Agent X v3", "PE %"].endswith("]") and "[" in rates.loc["Agent X v3", "PE %"]
    assert not rates.astype(str).isin(["None", "nan"]).any().any()
    t3 = _by_key(at, "err_t3").set_index("Model")
    assert (t3.loc["Agent X v4", "Hal."], t3.loc["Agent X v4", "#Total"], t3.loc["Agent X v3", "#Total"]) == (
        "1",
        "1",
        "0",
    )
    at = _open(labels_db, env_db, monkeypatch, err_sources="label", err_facet="level", err_slice="L3")
    rates = _by_key(at, "err_rates").set_index("Model")  # read first: per attempt, with intervals
    assert rates.loc["Agent X v3", "PE %"].endswith("]") and "[" in rates.loc["Agent X v3", "PE %"]
    assert not rates.astype(str).isin(["None", "nan"]).any().any()
    t3 = _by_key(at, "err_t3").set_index("Model")
    assert (t3.loc["Agent X v3", "PE."], t3.loc["Agent X v4", "PE."]) == ("4", "2")


def test_unknown_sources_and_facet_in_the_link_give_a_notice(
    labels_db: Path,  # noqa: F811
    env_db,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = _open(labels_db, env_db, monkeypatch, err_sources="label,bogus", err_facet="nope")
    notices = " ".join(i.value for i in at.info).replace("\\", "")
    assert "'bogus': not a label source" in notices and "err_facet 'nope' is not one of" in notices
    assert at.session_state["err_sources"] == ["label"] and at.session_state["err_facet"] == "all"
    at.segmented_control(key="err_facet").set_value("level").run()  # a facet change goes into the URL
    assert at.query_params["err_facet"] in ("level", ["level"])


@pytest.mark.slow  # builds the whole demo database once per session
def test_page_table3_on_demo(demo_db: Path, env_db, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _open(demo_db, env_db, monkeypatch, benchmark="ad-bench", **{"from": "2026-01-15", "to": "2026-01-15"})
    rates = _by_key(at, "err_rates").set_index("Model")
    assert rates.loc["Qwen3-8B", "Attempts"] == "300"  # the demo's runs: 100 tasks x 3 samples
    assert rates.loc["Qwen3-8B", "TE %"].startswith(f"{100 * 65 / 300:.1f} [")  # 65 of 300 attempts
    t3 = _by_key(at, "err_t3").set_index("Model")
    assert (t3.loc["Gemini-3-Pro", "#Error"], t3.loc["Gemini-3-Pro", "#Total"]) == ("89", "128")
    assert (t3.loc["Qwen3-8B", "TE."], t3.loc["Qwen3-8B", "PE."]) == ("65", "60")
    assert t3.index[0] == "Gemini-3-Pro"  # fewest errors first


def test_stale_run_and_code_in_the_link_give_a_notice(labels_db: Path, env_db, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    at = _open(labels_db, env_db, monkeypatch, err_run="gone-run", err_code="NOPE")
    assert not at.exception
    notices = [i.value for i in at.info]
    assert any("err\\_run" in n and "gone" in n for n in notices), notices  # Markdown-escaped
    assert any("err\\_code" in n and "NOPE" in n for n in notices), notices
    diff = next(f for f in map(_frame, at.dataframe) if "From (% of attempts)" in f.columns)
    assert "#Error" in set(diff["Code"]) and not diff.astype(str).isin(["None", "nan", "inf"]).any().any()
    lines = [t.value for t in at.text if " of attempts (" in t.value]  # shares of attempts first, counts beside
    assert lines and all(re.search(r"\d%.*→.*\d% of attempts \([+−]\d", line) for line in lines), lines


def test_the_attempts_behind_a_bar_are_read_when_asked(
    labels_db: Path,  # noqa: F811
    env_db,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The table under the first screen is not read on a first visit without a pick; the button (or a pick, a click
    on a bar or a link) lists the same rows the link gives."""
    at = _open(labels_db, env_db, monkeypatch)
    assert not any("Open" in f.columns for f in map(_frame, at.dataframe))
    assert len(at.get("plotly_chart")) == 1  # the shares; the co-occurrence heatmap is read when its panel opens
    at.session_state["err_co_open"] = True
    at.run()
    assert len(at.get("plotly_chart")) == 2
    at.button(key="err_list").click().run()
    rows = _by_key(at, "err_attempts")
    assert len(rows) > 0 and rows["Open"].str.startswith("drilldown?run=").all()
    at = _open(labels_db, env_db, monkeypatch)
    at.selectbox(key="err_pick_code").set_value("PE").run()  # a pick asks for them too
    picked = _by_key(at, "err_attempts")
    linked = _by_key(_open(labels_db, env_db, monkeypatch, err_code="PE"), "err_attempts")
    pd.testing.assert_frame_equal(picked.reset_index(drop=True), linked.reset_index(drop=True))

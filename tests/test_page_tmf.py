"""AppTest of the Tech-Market-Fit page: numbers, stage, chart, small multiples, period slider, inputs."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analytics import tmf
from analytics.plaintext import md_plain
from ingest.pipeline import ingest_paths
from store import RunFilter, reader
from tests.conftest import ROOT


def open_tmf(db: Path, monkeypatch: pytest.MonkeyPatch, benchmark: str) -> AppTest:
    monkeypatch.setenv("RUNLENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["benchmark"] = benchmark
    at.run()
    at.switch_page("views/tmf.py")
    at.run()
    assert not at.exception, at.exception
    return at


def rerun(at: AppTest) -> AppTest:
    """Rerun after a widget change. After switch_page, AppTest's tree loses the sidebar widgets, so their state
    would be dropped on the next run; carry the benchmark filter over by hand."""
    at.session_state["flt_benchmark"] = (
        at.query_params["benchmark"][0]
        if isinstance(at.query_params["benchmark"], list)
        else at.query_params["benchmark"]
    )
    at.run()
    assert not at.exception, at.exception
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_page_on_fixture_shows_stage_value_and_chart(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_tmf(fixture_db, monkeypatch, "mini-bench")
    with reader(fixture_db) as con:
        expected = tmf.analyse(tmf.load(con, RunFilter(benchmark="mini-bench")))
    got = metrics(at)
    assert got["TMF stage"] == tmf.stage_label(expected).split(" · ")[0]
    assert re.fullmatch(rf"Stage {expected.value.stage} \(\d+%\)", got["TMF stage"])
    assert got["AI value per task (area)"] == tmf.fmt_x(expected.value.area, "USD")
    assert got["Human cost per task"] == "$5.42"  # mean(4, 9) minutes x 50 USD / 60
    assert "Agent A" in at.info[0].value and "saving" in at.info[0].value
    main = charts(at)[0]
    names = {t.get("name") for t in main["data"]}
    assert {"Optimal supply curve (Pareto frontier)", "Human", "AI value (intersection)"} <= names
    assert any("Stage 2" in a.get("text", "") for a in main["layout"]["annotations"])
    table = at.dataframe[0].value
    assert "mini-a-v1" in set(table["Run id"]) and table["Open"].str.startswith("drilldown?run=").all()
    # the dollar figures reconciled: human cost x share of its performance = what a buyer pays; minus the run's
    # cost = the best saving (the figures the metrics and the headline show)
    lines = next(t.value for t in at.text if "What a buyer pays" in t.value).splitlines()
    human, share, pays = re.search(r"= (\$[\d.,]+) × ([\d.]+)% = (\$[\d.,]+)\.$", lines[0]).groups()
    assert human == got["Human cost per task"]
    assert abs(float(human[1:]) * float(share) / 100 - float(pays[1:])) < 0.006
    best = re.search(r"= (\$[\d.,]+)\.$", lines[1]).group(1)
    assert best == got["Best saving per task"] and pays in lines[1]
    assert any(s.value.startswith(md_plain("In one line:")) and md_plain(best) in s.value for s in at.success)


def test_hourly_rate_input_changes_the_human_cost(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new rate finishes the prepared analysis again without reading the data: the page shows a fresh
    analysis's figures at that rate, and the tasks were read once."""
    analysis = importlib.import_module("analytics.tmf.overview")  # the module the page's views read through

    reads: list[RunFilter] = []
    load = analysis.load
    monkeypatch.setattr(
        analysis, "load", lambda con, run_filter, **kw: reads.append(run_filter) or load(con, run_filter, **kw)
    )
    at = open_tmf(fixture_db, monkeypatch, "mini-bench")
    assert len(reads) == 1
    for rate, human in ((100.0, "$10.83"), (50.0, "$5.42")):
        at.number_input(key="tmf_hourly").set_value(rate)
        rerun(at)
        with reader(fixture_db) as con:
            fresh = tmf.analyse(
                tmf.load(con, RunFilter(benchmark="mini-bench")), options=tmf.TmfOptions(hourly_usd=rate)
            )
        got = metrics(at)
        assert got["Human cost per task"] == human == tmf.fmt_x(fresh.human.x, "USD")
        assert got["AI value per task (area)"] == tmf.fmt_x(fresh.value.area, "USD")
        assert got["TMF stage"] == tmf.stage_label(fresh).split(" · ")[0]
    assert len(reads) == 1


@pytest.mark.slow
def test_page_on_demo_small_multiples_and_periods(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_tmf(demo_db, monkeypatch, "ad-bench")
    assert re.match(r"Stage [123]", metrics(at)["TMF stage"])
    assert len(charts(at)) == 1  # the first view: the main chart; the small multiples and the movie wait closed
    assert [e.label for e in at.get("expander")][-3:-1] == [
        "By level or category",
        "Over time: a movie, not a photograph",
    ]
    at.session_state["tmf_multi_open"] = True
    at.session_state["tmf_movie_open"] = True
    rerun(at)
    figs = charts(at)
    assert len(figs) >= 3  # main chart, small multiples, movie
    titles = [a["text"] for a in figs[1]["layout"]["annotations"]]
    assert [t.split(" · ")[0] for t in titles[:3]] == ["L1", "L2", "L3"]
    slider = at.select_slider(key="tmf_period")
    assert len(slider.options) > 3  # several quarters of AD-Bench history, newest last (the default)
    assert slider.value == slider.options[-1]
    first = slider.options[0]
    slider.set_value(first)
    rerun(at)
    early = charts(at)[0]
    n_points = sum(len(t.get("x", [])) for t in early["data"] if t.get("name") in ("Other runs", "Frontier runs"))
    assert 0 < n_points < 35  # only the runs of the first quarter


def _no_minutes_db(tmp_path: Path, costs: tuple[float | None, float | None] = (0.2, None)) -> Path:
    """A benchmark whose tasks carry no human_minutes, with one costed and one cost-less run (by default)."""
    lines = [{"record": "benchmark", "benchmark": "nm-bench", "scoring": "binary"}]
    lines += [{"record": "task", "benchmark": "nm-bench", "task_id": t} for t in ("t1", "t2")]
    for run, cost in zip(("nm-costed", "nm-free"), costs, strict=True):
        lines.append(
            {
                "record": "run",
                "run_id": run,
                "benchmark": "nm-bench",
                "agent": run,
                "kind": "agent",
                "eval_date": "2025-03-01",
            }
        )
        for t, score in (("t1", 1), ("t2", 0)):
            att = {"record": "attempt", "run_id": run, "task_id": t, "sample": 0, "score": score}
            if cost is not None:
                att["cost_usd"] = cost
            lines.append(att)
    src = tmp_path / "nm.jsonl"
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    db = tmp_path / "nm.duckdb"
    assert [r.outcome for r in ingest_paths([src], db=db)] == ["ingested"]
    return db


def test_benchmark_without_human_minutes_asks_for_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_tmf(_no_minutes_db(tmp_path), monkeypatch, "nm-bench")
    assert metrics(at)["TMF stage"] == "n/a"
    assert "enter human minutes" in at.info[0].value
    assert any("nm\\-free" in w.value for w in at.warning)  # listed, not dropped (Markdown-escaped)
    at.number_input(key="tmf_minutes").set_value(30.0)
    rerun(at)
    # 30 minutes at 50 USD/hour = $25 per task; the costed agent (50% at $0.20) meets the market: stage 2
    assert metrics(at)["Human cost per task"] == "$25.00"
    assert re.fullmatch(r"Stage 2 \(\d+%\)", metrics(at)["TMF stage"])


def test_changing_the_period_kind_keeps_the_page_working(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_tmf(fixture_db, monkeypatch, "mini-bench")
    at.segmented_control(key="tmf_freq").set_value("month")
    rerun(at)
    at.segmented_control(key="tmf_freq").set_value("year")
    rerun(at)
    assert re.fullmatch(r"Stage 2 \(\d+%\)", metrics(at)["TMF stage"])


def test_back_to_an_earlier_url_restores_that_view(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The browser's Back puts the earlier URL back and reruns: the page follows the URL, not the session."""
    at = open_tmf(fixture_db, monkeypatch, "mini-bench")
    at.number_input(key="tmf_hourly").set_value(100.0)
    rerun(at)
    assert at.query_params["hourly_usd"] in ("100", ["100"])
    del at.query_params["hourly_usd"]  # Back: the URL before the change (the default rate)
    rerun(at)
    assert at.number_input(key="tmf_hourly").value == 50.0 and metrics(at)["Human cost per task"] == "$5.42"
    at.query_params["hourly_usd"] = "100"  # Forward
    rerun(at)
    assert at.number_input(key="tmf_hourly").value == 100.0 and metrics(at)["Human cost per task"] == "$10.83"
    at.number_input(key="tmf_hourly").set_value(80.0)  # a change in the page still wins over the old URL
    rerun(at)
    assert at.number_input(key="tmf_hourly").value == 80.0 and at.query_params["hourly_usd"] in ("80", ["80"])


def test_assumptions_travel_in_the_link_and_bad_values_give_notices(
    fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNLENS_DB", str(fixture_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    link = {"benchmark": "mini-bench", "hourly_usd": "100", "willingness": "0.5", "acceptance_exponent": "0"}
    for key, value in {**link, "performance": "bogus", "human_minutes": "-3"}.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("views/tmf.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="tmf_hourly").value == 100.0 and at.number_input(key="tmf_minutes").value == 0.0
    notices = " ".join(i.value for i in at.info)
    assert "bogus" in notices and "outside" in notices  # dropped and clamped, said so, no exception
    with reader(fixture_db) as con:
        opt = tmf.TmfOptions(hourly_usd=100.0, willingness=0.5, exponent=0.0)
        expected = tmf.analyse(tmf.load(con, RunFilter(benchmark="mini-bench")), options=opt)
    got = metrics(at)
    assert got["Human cost per task"] == "$10.83"
    assert got["AI value per task (area)"] == tmf.fmt_x(expected.value.area, "USD")  # willingness is applied
    captions = " ".join(c.value for c in at.caption).replace("\\", "")  # plain text: Markdown escaped
    assert "0.5x the human cost, whatever the performance" in captions
    kept = {k: at.query_params[k] for k in ("hourly_usd", "willingness", "acceptance_exponent")}
    assert {k: v[0] if isinstance(v, list) else v for k, v in kept.items()} == {
        "hourly_usd": "100",
        "willingness": "0.5",
        "acceptance_exponent": "0",
    }


def test_the_irt_choice_comes_from_the_first_views_read(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No IRT fit stored: IRT ability is not offered (a caption says why), known from the first view's runs'
    statement without a statement of its own; a link naming it asks first, drops it with a notice and shows the
    default analysis."""
    asked: list[object] = []
    real = tmf.has_irt_fit
    monkeypatch.setattr(tmf, "has_irt_fit", lambda con, **kw: asked.append(kw) or real(con, **kw))
    at = open_tmf(fixture_db, monkeypatch, "mini-bench")
    assert asked == []
    assert at.selectbox(key="tmf_perf").options == list(tmf.PERFORMANCES[:2])
    assert "IRT ability is not offered" in " ".join(c.value for c in at.caption)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["benchmark"], at.query_params["performance"] = "mini-bench", "irt"
    at.run()
    at.switch_page("views/tmf.py").run()
    assert not at.exception, at.exception
    assert len(asked) == 1 and "irt" in " ".join(i.value for i in at.info)
    assert at.selectbox(key="tmf_perf").value == tmf.PERFORMANCES[0]
    with reader(fixture_db) as con:
        expected = tmf.analyse(tmf.load(con, RunFilter(benchmark="mini-bench")))
    assert metrics(at)["TMF stage"] == tmf.stage_label(expected).split(" · ")[0]


def test_runs_without_costs_get_an_empty_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_tmf(_no_minutes_db(tmp_path, costs=(None, None)), monkeypatch, "nm-bench")
    assert any("has both a cost and a performance" in i.value for i in at.info)
    assert not charts(at) and not at.get("download_button")


def test_a_bad_period_or_as_of_in_the_link_gives_a_notice(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_DB", str(fixture_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"benchmark": "mini-bench", "period": "fortnight", "asof": "1999Q1"})
    at.run()
    at.switch_page("views/tmf.py")
    at.run()
    assert not at.exception
    notices = " ".join(i.value for i in at.info)
    assert "fortnight" in notices and "1999Q1" in notices, notices

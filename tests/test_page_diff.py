"""AppTest of the version diff page: default pair, flips, McNemar, deltas, and both trajectories of a flip."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from analytics import diff
from analytics.plaintext import md_plain
from tests.apptest import open_page
from tests.test_diff import _write_bench


def open_diff(db: Path, monkeypatch: pytest.MonkeyPatch, **params: str) -> AppTest:
    return open_page("views/diff.py", db, monkeypatch, **params)


def test_diff_page_on_hand_made_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.pipeline import ingest_paths

    db = tmp_path / "flip.duckdb"
    ingest_paths([_write_bench(tmp_path / "flip.jsonl")], db=db)
    at = open_diff(db, monkeypatch, benchmark="flip-bench")
    m = {x.label: x.value for x in at.metric}
    assert m["Matched tasks"] == "5"
    assert m["Regressions (A ✓, B ✗)"] == "1" and m["Fixes (A ✗, B ✓)"] == "2"
    assert m["McNemar exact p"] == "1"
    assert m["Pass@1 change"] == "+10.0 pp"
    flipped = at.dataframe(key="df_flipped").value
    assert flipped["Task"].tolist() == ["t1", "t3", "t4"]
    assert flipped["Open A"].iloc[0] == "drilldown?run=a-v1&task=t1&sample=0"
    assert flipped["A passed"].iloc[0] == "✓" and flipped["B passed"].iloc[0] == "✗"
    assert any(t.value == "Task t1 · regression" for t in at.text)
    # the two transcripts are read when asked: the first view links both attempts to the drilldown
    assert not [d for d in at.dataframe if "Alignment" in d.value.columns]
    assert not any(t.value.startswith("answer:") for t in at.text)
    assert not any(t.value.startswith("Task: ") for t in at.text)
    at.toggle(key="df_both").set_value(True).run(timeout=60)
    # both trajectories of the first flip, side by side
    sides = [d.value for d in at.dataframe if "Alignment" in d.value.columns]
    assert len(sides) == 2 and all(s["Tool"].tolist() == ["search"] for s in sides)
    for frame in at.dataframe:  # every cell a person reads: no None, nan or float noise
        cells = frame.value.astype(str).to_numpy().ravel().tolist()
        assert not {"None", "nan", "NaN", "<NA>", "True", "False"} & set(cells), frame.value
    assert not any("passed True" in t.value or "passed False" in t.value for t in at.text)


def test_diff_page_on_demo_defaults_to_a_family_pair(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_diff(demo_db, monkeypatch)
    bench = at.selectbox(key="flt_benchmark").value
    with rdb.reader(demo_db) as con:
        expected = diff.default_pair(diff.run_pairs(con, benchmark=bench))
        result = diff.compare_runs(con, run_a=expected[0], run_b=expected[1])
    assert (at.selectbox(key="df_a").value, at.selectbox(key="df_b").value) == expected
    m = {x.label: x.value for x in at.metric}
    assert m["Matched tasks"] == str(len(result.tasks))
    assert m["McNemar exact p"] == f"{result.p_value:.3g}"
    deltas = next(d.value for d in at.dataframe if "B − A (pp) [95% CI]" in d.value.columns)
    assert len(deltas) == len(result.deltas) and deltas["Slice"].iloc[0] == "all tasks"
    # one interval for the one Pass@1 change: the metric, the deltas' first row and the measures' agree
    interval = next(x for x in at.metric if x.label == "Pass@1 change").proto.delta
    low, high = interval.removeprefix("95% CI ").removesuffix(" pp").split(" to ")
    assert f"[{low} to {high}]" in deltas["B − A (pp) [95% CI]"].iloc[0]
    measures = next(d.value for d in at.dataframe if "Measure" in d.value.columns)
    assert f"[{low} to {high}] pp" in measures["B − A [95% CI]"].iloc[0]


def test_diff_page_paired_test_and_regressions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.pipeline import ingest_paths

    db = tmp_path / "flip.duckdb"
    ingest_paths([_write_bench(tmp_path / "flip.jsonl")], db=db)
    at = open_diff(db, monkeypatch, benchmark="flip-bench", a="a-v1", b="a-v2")
    assert at.selectbox(key="df_a").value == "a-v1"
    with rdb.reader(db) as con:
        result = diff.compare_runs(con, run_a="a-v1", run_b="a-v2")
    assert result.paired is not None
    assert any(f"p = {result.paired.p_value:.3g} (sign-flip)" in t.value for t in at.text)
    frames = lambda col: [d.value for d in at.dataframe if col in d.value.columns]  # noqa: E731
    measures = frames("Measure")[0]  # no tokens in this log: no tokens row
    assert list(measures["Measure"]) == ["Pass@1", "cost per task ($)", "latency (s)", "tool calls per task"]
    assert measures["B − A [95% CI]"].iloc[0].endswith(" pp") and "None" not in measures.to_string()
    changes = frames("Change")[0]
    assert changes["Task"].iloc[0] == "t1" and changes["Change"].iloc[0] == "−100.0 pp"  # worst regression first
    assert changes["Error codes (+ new in B, − gone)"].iloc[0] == "+HAL"
    at.slider(key="df_change").set_value((0, 100)).run()
    kept = frames("Change")[0]
    assert not kept["Change"].str.startswith("−").any() and "t1" not in set(kept["Task"])
    at.slider(key="df_change").set_value((-100, 100))
    at.toggle(key="df_worse").set_value(True).run()
    worse = frames("Change")[0]
    assert len(worse) == 1 and worse["Task"].tolist() == ["t1"]


def test_diff_link_names_the_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """baseline=/candidate= choose the pair and are what the URL keeps; a=/b= still work; a stale run gives a notice."""
    from ingest.pipeline import ingest_paths

    db = tmp_path / "flip.duckdb"
    ingest_paths([_write_bench(tmp_path / "flip.jsonl")], db=db)
    at = open_diff(db, monkeypatch, benchmark="flip-bench", baseline="a-v2", candidate="a-v1")
    assert (at.selectbox(key="df_a").value, at.selectbox(key="df_b").value) == ("a-v2", "a-v1")
    assert at.query_params["baseline"] in ("a-v2", ["a-v2"]) and "a" not in at.query_params
    at = open_diff(db, monkeypatch, benchmark="flip-bench", a="a-v2", b="a-v1")
    assert (at.selectbox(key="df_a").value, at.selectbox(key="df_b").value) == ("a-v2", "a-v1")
    assert at.query_params["candidate"] in ("a-v1", ["a-v1"])
    at = open_diff(db, monkeypatch, benchmark="flip-bench", baseline="deleted-run", candidate="a-v1")
    assert not at.exception
    stale = md_plain(repr("deleted-run"))  # log text is escaped for Markdown on the page
    assert any(stale in i.value and "not in this benchmark" in i.value for i in at.info)
    assert at.selectbox(key="df_b").value == "a-v1"
    # Back to an earlier URL (the pair swapped): the page follows the URL, then keeps the session's choice
    at.query_params["baseline"], at.query_params["candidate"] = "a-v1", "a-v2"
    at.session_state["flt_benchmark"] = "flip-bench"
    at.run()
    assert (at.selectbox(key="df_a").value, at.selectbox(key="df_b").value) == ("a-v1", "a-v2")
    at.selectbox(key="df_a").set_value("a-v2")
    at.session_state["flt_benchmark"] = "flip-bench"
    at.selectbox(key="df_b").set_value("a-v1").run()
    assert (at.selectbox(key="df_a").value, at.selectbox(key="df_b").value) == ("a-v2", "a-v1")
    assert at.query_params["baseline"] in ("a-v2", ["a-v2"])


def _changes(at: AppTest) -> list[str]:
    return next(d.value["Task"].tolist() for d in at.dataframe if "Tool calls Δ" in d.value.columns)


def test_long_task_tables_are_drawn_a_page_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.gen_logs import generate
    from ingest.pipeline import ingest_paths

    db = tmp_path / "long.duckdb"
    files = generate(tmp_path / "logs", n_attempts=1200, n_runs=2, n_benchmarks=1, samples=1, seed=33)
    ingest_paths(files, db=db, jobs=1)
    at = open_diff(db, monkeypatch, benchmark="bench-0")
    assert not at.exception
    n_tasks = int(at.metric[0].value)
    assert n_tasks == 600
    assert len(_changes(at)) == 250  # one page formatted and drawn, not 600 rows
    assert any("the downloads hold all 600" in c.value for c in at.caption)
    at.session_state["df_changes_page"] = 3
    at.run()
    assert len(_changes(at)) == 100  # the last page: rows 501-600
    flipped = at.dataframe(key="df_flipped").value
    assert 0 < len(flipped) <= 250

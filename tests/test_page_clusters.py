# ruff: noqa: F811  (pytest fixtures imported from the analytics tests are redefined as arguments)
"""The Failure clusters page (AppTest): it computes the clusters (on request, or by itself in the background with
progress), then lists clusters with their size per run and the member attempts with drilldown links."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.apptest import open_page
from tests.test_clusters import PER_CAUSE, failures_db  # noqa: F401  (the fixture)


def test_clusters_page_computes_then_clusters(failures_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page("views/clusters.py", failures_db, monkeypatch, benchmark="fb")
    assert any("not computed yet" in i.value for i in at.info)
    at.button(key="cl_compute").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.run()  # the page reruns itself after embedding; AppTest needs the explicit run
    table = at.dataframe[0].value
    assert int(table["Failed attempts"].astype(int).sum()) == 4 * PER_CAUSE
    assert at.metric[0].value == str(4 * PER_CAUSE)
    members = at.dataframe[1].value
    assert len(members) == int(table["Failed attempts"].iloc[0])
    assert members["Open"].str.startswith("drilldown?run=v").all()
    assert len(at.get("plotly_chart")) == 1


def test_the_first_visit_computes_in_the_background_with_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first visit starts the job and shows its progress; a second visitor sees the same job; the page fills
    once the clusters are stored, and a later visit reads them without starting anything."""
    import threading

    import jobs.failures
    from ingest.pipeline import ingest_paths
    from tests.failure_sets import failure_set
    from ui import background

    fs = failure_set(seed=3, n_causes=4, n_failures=120)
    fresh = tmp_path / "fresh.duckdb"
    ingest_paths([fs.write(tmp_path / "f.jsonl")], db=fresh)
    gate, reached = threading.Event(), threading.Event()
    build = jobs.failures.build_clusters

    def held_build(*args: object, **kwargs: object) -> object:  # the job waits here until the test has looked
        reached.set()
        assert gate.wait(timeout=120)
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs.failures, "build_clusters", held_build)
    monkeypatch.setenv("RUNLENS_AUTO_FIT", "1")
    try:
        at = open_page("views/clusters.py", fresh, monkeypatch, benchmark=fs.benchmark)
        assert any("in the background" in i.value for i in at.info)
        jobs = [j for k, j in background._JOBS.items() if str(fresh) in k]
        assert len(jobs) == 1 and jobs[0].thread is not None
        assert reached.wait(timeout=120)
        second = open_page("views/clusters.py", fresh, monkeypatch, benchmark=fs.benchmark)  # another visitor
        assert len([k for k in background._JOBS if str(fresh) in k]) == 1  # the same job, not a second one
        bars = second.get("progress")
        assert len(bars) == 1 and "clustering 120 failed attempts" in str(bars[0].proto.text), bars
        assert not second.dataframe
    finally:
        gate.set()
    jobs[0].thread.join(timeout=180)
    assert jobs[0].is_done and jobs[0].error is None, jobs[0].error
    at.run()  # what the page's own timer does once the job is done
    assert not at.exception, [e.value for e in at.exception]
    assert sum(int(str(v).replace(",", "")) for v in at.dataframe[0].value["Failed attempts"]) == 120
    for key in [k for k in background._JOBS if str(fresh) in k]:
        background.forget(key)
    later = open_page("views/clusters.py", fresh, monkeypatch, benchmark=fs.benchmark)  # a later visit: at once
    assert not [k for k in background._JOBS if str(fresh) in k] and not later.get("progress")
    assert len(later.dataframe[0].value) == len(at.dataframe[0].value)


def test_cluster_chart_keeps_ten_colours_and_greys_the_rest() -> None:
    import pandas as pd

    from analytics import clusters as cl

    long = pd.DataFrame(
        [(cid, f"c{cid}", run, cid + 1) for cid in range(25) for run in ("r1", "r2")],
        columns=["cluster_id", "label", "run_id", "n_attempts"],
    )
    fig = cl.fig_clusters_by_run(long)
    names = [t.name for t in fig.data]
    assert len(fig.data) == 11 and names[0] == "24: c24" and names[-1] == "15 smaller clusters"
    assert len({t.marker.color for t in fig.data}) == 11  # no colour used twice
    rest = fig.data[-1]
    assert list(rest.y) == [sum(range(1, 16))] * 2  # the 15 smallest clusters, per run
    table = cl.display_table(
        pd.DataFrame(
            {
                "cluster_id": [0],
                "label": ["a · b"],
                "llm_label": [None],
                "n_attempts": [3],
                "share_of_failures": [0.5],
                "codes": [{"TE": 2}],
                "terms": [["a", "b"]],
                "trend": ["new in v2 (8% of v2's failures)"],
            }
        )
    )
    assert list(table.columns)[:2] == ["Cluster", "Key phrases"] and "LLM label" not in table
    assert table["Error codes (attempts)"].iloc[0] == "TE 2" and table["Share of failures (%)"].iloc[0] == 50.0
    assert table["Trend over versions"].iloc[0] == "new in v2 (8% of v2's failures)"

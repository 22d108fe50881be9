# ruff: noqa: F811  (pytest fixtures imported from the analytics tests are redefined as arguments)
"""The Failure clusters page (AppTest): it computes the clusters (on request, or by itself in the background with
progress), then lists clusters with their size per run and the member attempts with drilldown links."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import reader
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


def _stored(db: str) -> dict[str, object]:
    """What the clusters job stored: documents, vectors and the clustering (its key, members and summary)."""
    with reader(db) as con:
        return {
            "documents": con.execute(
                "SELECT attempt_id, doc_version, segments, masked, content_hash FROM failure_documents ORDER BY ALL"
            ).fetchall(),
            "vectors": con.execute("SELECT text_hash, model, vector FROM embeddings ORDER BY ALL").fetchall(),
            "clusterings": con.execute(
                "SELECT clustering_key, benchmark, run_id, model, n_failures, summary FROM failure_clusterings"
            ).fetchall(),
            "members": con.execute(
                "SELECT clustering_key, attempt_id, cluster_id FROM failure_cluster_members ORDER BY ALL"
            ).fetchall(),
        }


def test_the_first_visit_computes_in_a_process_of_its_own_with_todays_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first visit starts the job in a process of its own (jobs/clusters_worker.py: DuckDB's memory bounded
    there, never in the server), whose progress the page reads; a second visitor sees the same job; the page fills
    once the clusters are stored, and a later visit reads them without starting anything. What the process stores
    (documents, vectors, clustering) is what the job computed in the server stores."""
    from ingest.pipeline import ingest_paths
    from jobs.failures import cluster_failures
    from tests.failure_sets import failure_set
    from ui import background

    fs = failure_set(seed=3, n_causes=4, n_failures=120)
    # local lakes, the default kind of store: one DuckDB instance per process serves its reader and its writer
    fresh, inline = (f"ducklake:sqlite:{tmp_path / name}.lake" for name in ("fresh", "inline"))
    for db in (fresh, inline):
        ingest_paths([fs.write(tmp_path / "f.jsonl")], db=db)
    monkeypatch.setenv("RUNLENS_AUTO_FIT", "1")
    at = open_page("views/clusters.py", fresh, monkeypatch, benchmark=fs.benchmark)
    assert any("in the background" in i.value for i in at.info)
    jobs = [j for k, j in background._JOBS.items() if str(fresh) in k]
    assert len(jobs) == 1 and jobs[0].process is not None and jobs[0].thread is not None  # a process, read by a thread
    open_page("views/clusters.py", fresh, monkeypatch, benchmark=fs.benchmark)  # another visitor, meanwhile or after
    assert len([k for k in background._JOBS if str(fresh) in k]) == 1  # the same job, not a second one
    jobs[0].thread.join(timeout=180)
    assert jobs[0].is_done and jobs[0].error is None, jobs[0].error
    assert jobs[0].process.returncode == 0 and jobs[0].fraction == 1.0
    assert jobs[0].message == "the clusters are stored"  # the process's progress lines, read into the job
    at.run()  # what the page's own timer does once the job is done
    assert not at.exception, [e.value for e in at.exception]
    assert sum(int(str(v).replace(",", "")) for v in at.dataframe[0].value["Failed attempts"]) == 120
    for key in [k for k in background._JOBS if str(fresh) in k]:
        background.forget(key)
    later = open_page("views/clusters.py", fresh, monkeypatch, benchmark=fs.benchmark)  # a later visit: at once
    assert not [k for k in background._JOBS if str(fresh) in k] and not later.get("progress")
    assert len(later.dataframe[0].value) == len(at.dataframe[0].value)
    cluster_failures(inline, benchmark=fs.benchmark)  # the job as the server ran it, in this process
    by_process, by_server = _stored(fresh), _stored(inline)
    assert len(by_process["documents"]) == 120 and len(by_process["members"]) == 120  # type: ignore[arg-type]
    assert by_process["vectors"] and len(by_process["clusterings"]) == 1  # type: ignore[arg-type]
    assert by_process == by_server


def test_a_too_small_memory_limit_is_named_on_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The button (RUNLENS_AUTO_FIT=0) runs the job in its process too and waits for it; DuckDB's share of the
    process's limit too small for the documents step gives the page an error naming the setting, not a crash."""
    from ingest.pipeline import ingest_paths
    from jobs import clusters_worker
    from tests.failure_sets import failure_set
    from ui import background

    fs = failure_set(seed=5, n_causes=3, n_failures=60)
    small = tmp_path / "small.duckdb"
    ingest_paths([fs.write(tmp_path / "f.jsonl")], db=small)
    monkeypatch.setattr(clusters_worker, "DUCKDB_BYTES", 1024 * 1024)
    at = open_page("views/clusters.py", small, monkeypatch, benchmark=fs.benchmark)
    try:
        at.button(key="cl_compute").click().run()
        assert not at.exception, [e.value for e in at.exception]
        errors = [str(e.value).replace("\\", "") for e in at.error]  # shown as plain text (markdown escaped)
        assert len(errors) == 1 and "Out of Memory Error" in errors[0], errors
        assert errors[0].endswith("DuckDB 1 MB of it: RUNLENS_CLUSTERS_WORKER_MB)"), errors
        assert not at.dataframe
    finally:
        for key in [k for k in background._JOBS if str(small) in k]:
            background.forget(key)


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

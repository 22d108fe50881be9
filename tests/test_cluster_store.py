"""The Failure clusters page's stored results (migration 010): failure documents built once per failed attempt and
kept, the boilerplate cut in SQL equal to the Python one, the clustering computed once and read back as computed,
and a new clustering when the failures change (only the new failures' documents built)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from analytics import clusters as cl
from store import reader, writer


def _extra_failures(path: Path, benchmark: str, n: int) -> Path:
    """One more run of ``benchmark`` with ``n`` failed attempts (a cause none of the set's failures has)."""
    lines = [{"record": "run", "run_id": f"{benchmark}-v9", "benchmark": benchmark, "agent": "Agent",
              "agent_version": "9"}]  # fmt: skip
    for i in range(n):
        lines.append(
            {"record": "attempt", "run_id": f"{benchmark}-v9", "task_id": f"T{i:05d}", "sample": 0, "score": 0.0,
             "answer": "none", "steps": [{"round": 1, "kind": "tool_call", "tool": "db", "args": {"i": i},
                                          "error": "disk quota exceeded on the scratch volume"}]}
        )  # fmt: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


# ``held_db`` is the module's and its tests change it in turn: test_a_run_keeps_its_own_clustering_... reads the
# clustering the first test stored, and checks it outlived the second test's. They run as one file on one process
# (``bash run.sh test``: ``--dist loadfile``); alone, or split over workers (``--dist load``), that test fails.
@pytest.fixture(scope="module")
def held_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from ingest.pipeline import ingest_paths
    from tests.failure_sets import failure_set

    folder = tmp_path_factory.mktemp("cluster_store")
    fs = failure_set(seed=5, n_causes=4, n_failures=150)
    db = folder / "held.duckdb"
    ingest_paths([fs.write(folder / "held.jsonl")], db=db)
    return db, fs.benchmark


def test_stored_documents_cut_boilerplate_as_python_does(held_db: tuple[Path, str]) -> None:
    from jobs.failures import cluster_failures

    db, bm = held_db
    cluster_failures(db, benchmark=bm, run_id=f"{bm}-v2")  # documents of one run's failures only
    with reader(db) as con:
        n_docs = con.execute("SELECT count(*) FROM failure_documents").fetchall()[0][0]
        for run_id in (f"{bm}-v2", None):
            python = cl.failure_texts(con, benchmark=bm, run_id=run_id)
            stored = cl.stored_failure_texts(con, benchmark=bm, run_id=run_id)
            if run_id is None:  # the other runs have no document yet: left out
                assert len(stored) == n_docs < len(python)
                continue
            assert len(python) == n_docs > 10
            assert stored["attempt_id"].tolist() == python["attempt_id"].tolist()
            assert stored["text"].tolist() == python["text"].tolist()
            assert stored["codes"].map(list).tolist() == python["codes"].map(list).tolist()
        assert len(cl.undocumented_failures(con, benchmark=bm)) == 150 - n_docs
        assert cl.stored_clusters(con, benchmark=bm) is None  # the benchmark's clustering is not computed


def test_clusters_are_computed_once_and_again_when_the_failures_change(held_db: tuple[Path, str]) -> None:
    from ingest.pipeline import ingest_paths
    from jobs.failures import cluster_failures, embed_failures
    from store import delete_run

    db, bm = held_db
    said: list[str] = []
    cluster_failures(db, benchmark=bm, progress=lambda f, m: said.append(m))
    assert any("building the documents" in m for m in said) and any("clustering 150" in m for m in said)
    with reader(db) as con:
        stored = cl.stored_clusters(con, benchmark=bm)
        assert stored is not None and stored.n_failures == 150
        assert cl.undocumented_failures(con, benchmark=bm).size == 0
    assert embed_failures(db, benchmark=bm) == 0  # the stored documents' texts are the Python path's: all embedded
    with reader(db) as con:
        fresh = cl.failure_clusters(con, benchmark=bm)
    assert fresh is not None  # what the clusters computed now from the Python documents are
    assert stored.members["attempt_id"].tolist() == fresh.members["attempt_id"].tolist()
    assert stored.members["cluster_id"].tolist() == fresh.members["cluster_id"].tolist()
    assert stored.members["codes"].map(list).tolist() == fresh.members["codes"].map(list).tolist()
    cols = ["cluster_id", "label", "n_attempts", "trend", "content_key", "representatives", "examples", "by_run"]
    assert stored.summary[cols].to_dict("records") == fresh.summary[cols].to_dict("records")
    assert np.allclose(stored.summary["share_of_failures"], fresh.summary["share_of_failures"])

    said.clear()  # a second run finds everything stored: nothing is built, embedded or clustered
    cluster_failures(db, benchmark=bm, progress=lambda f, m: said.append(m))
    assert not any("building" in m or "clustering" in m or "embedding" in m for m in said), said

    ingest_paths([_extra_failures(db.parent / "extra.jsonl", bm, 4)], db=db)
    with reader(db) as con:
        assert cl.stored_clusters(con, benchmark=bm) is None  # the failures changed: the stored clusters are stale
        assert cl.undocumented_failures(con, benchmark=bm).size == 4
    said.clear()
    cluster_failures(db, benchmark=bm, progress=lambda f, m: said.append(m))
    assert "building the documents of failed attempts: 0 of 4 done" in said  # only the new failures' documents
    with reader(db) as con:
        again = cl.stored_clusters(con, benchmark=bm)
        n_clusterings = con.execute(
            "SELECT count(*) FROM failure_clusterings WHERE benchmark = ? AND run_id IS NULL", [bm]
        ).fetchall()[0][0]
    assert again is not None and again.n_failures == 154 and n_clusterings == 1  # the stale one replaced
    quota = again.members[again.members["run_id"] == f"{bm}-v9"]["cluster_id"]
    assert len(quota) == 4

    delete_run(f"{bm}-v9", db=db)  # a deleted run's documents go with its attempts
    with reader(db) as con:
        left = con.execute("SELECT count(*) FROM failure_documents").fetchall()[0][0]
        assert cl.stored_clusters(con, benchmark=bm) is None
    assert left == 150


def test_a_run_keeps_its_own_clustering_and_its_summary_survives_json(held_db: tuple[Path, str]) -> None:
    db, bm = held_db
    with reader(db) as con:  # the first test's clustering of one run: its failures did not change since
        stored = cl.stored_clusters(con, benchmark=bm, run_id=f"{bm}-v2")
    assert stored is not None and set(stored.members["run_id"]) == {f"{bm}-v2"}
    back = cl.summary_from_json(cl.summary_to_json(stored.summary))
    assert back.drop(columns="llm_label").to_dict("records") == stored.summary.drop(columns="llm_label").to_dict(
        "records"
    )
    assert isinstance(back.iloc[0]["codes"], dict) and isinstance(back.iloc[0]["representatives"][0], dict)
    ids = stored.members[stored.members["cluster_id"] == 0]["attempt_id"].tolist()
    with writer(db) as con:  # codes on the first member and on one past the first two (labels change no key)
        con.executemany(
            "INSERT INTO error_labels (attempt_id, code, source) VALUES (?, ?, 'label')",
            [[ids[0], "ZA"], [ids[2], "ZB"]],
        )
    with reader(db) as con:  # one cluster's members, the first few, as the page reads them
        top = cl.stored_members(con, benchmark=bm, run_id=f"{bm}-v2", cluster_id=0, limit=2)
        every = cl.stored_members(con, benchmark=bm, run_id=f"{bm}-v2", cluster_id=0)
        bare = cl.stored_clusters(con, benchmark=bm, run_id=f"{bm}-v2", with_members=False)
        keyed = cl.stored_members(con, benchmark=bm, run_id=f"{bm}-v2", cluster_id=0, limit=2, key=stored.key)
    expected = stored.members[stored.members["cluster_id"] == 0].reset_index(drop=True)
    assert every.drop(columns="codes").equals(expected.drop(columns="codes")) and len(every) > 2
    assert top.drop(columns="codes").equals(expected.head(2).drop(columns="codes"))
    codes = every["codes"].map(list).tolist()  # the first rows' codes are read for them alone: the same
    assert top["codes"].map(list).tolist() == codes[:2] == [["ZA"], []] and codes[2] == ["ZB"]
    assert keyed.drop(columns="codes").equals(top.drop(columns="codes")) and stored.key == bare.key != ""
    assert bare is not None and bare.members.empty and bare.summary.equals(stored.summary)


def test_failures_that_change_while_they_are_clustered_are_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clustering runs without the writer: an upload meanwhile changes the failures' key, and what was clustered
    is not stored under it (the next visit computes it again)."""
    import jobs.failures
    from ingest.pipeline import ingest_paths
    from tests.failure_sets import failure_set

    fs = failure_set(seed=6, n_causes=4, n_failures=60)
    db = tmp_path / "moving.duckdb"
    ingest_paths([fs.write(tmp_path / "m.jsonl")], db=db)
    build = jobs.failures.build_clusters

    def upload_meanwhile(*args: object, **kwargs: object) -> object:
        ingest_paths([_extra_failures(tmp_path / "extra.jsonl", fs.benchmark, 3)], db=db)  # the writer is free
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs.failures, "build_clusters", upload_meanwhile)
    said: list[str] = []
    jobs.failures.cluster_failures(db, benchmark=fs.benchmark, progress=lambda f, m: said.append(m))
    assert said[-1].startswith("the failures changed while they were clustered")
    with reader(db) as con:
        assert cl.stored_clusters(con, benchmark=fs.benchmark) is None
        assert con.execute("SELECT count(*) FROM failure_clusterings").fetchall()[0][0] == 0
    monkeypatch.setattr(jobs.failures, "build_clusters", build)
    jobs.failures.cluster_failures(db, benchmark=fs.benchmark)
    with reader(db) as con:
        again = cl.stored_clusters(con, benchmark=fs.benchmark)
    assert again is not None and again.n_failures == 63


def test_documents_and_vectors_are_computed_without_the_writer(tmp_path: Path) -> None:
    """An upload while the job embeds is not kept waiting (the writer is taken only for the last short write); the
    documents and vectors computed are stored, the clustering of the failures as they were is not."""
    from analytics.embeddings import StaticEmbedder
    from ingest.pipeline import ingest_paths
    from jobs.failures import cluster_failures
    from tests.failure_sets import failure_set

    fs = failure_set(seed=7, n_causes=4, n_failures=60)
    db = tmp_path / "embed.duckdb"
    ingest_paths([fs.write(tmp_path / "e.jsonl")], db=db)
    emb = StaticEmbedder()
    uploads: list[str] = []

    def encode(texts: list[str]) -> object:
        if not uploads:  # the writer is free: this upload does not wait for the job
            (res,) = ingest_paths([_extra_failures(tmp_path / "extra.jsonl", fs.benchmark, 3)], db=db)
            uploads.append(res.outcome)
        return emb.encode(texts)

    said: list[str] = []
    cluster_failures(db, benchmark=fs.benchmark, encode=encode, progress=lambda f, m: said.append(m))  # type: ignore[arg-type]
    assert uploads == ["ingested"] and said[-1].startswith("the failures changed while they were clustered")
    with reader(db) as con:
        n_docs = con.execute("SELECT count(*) FROM failure_documents").fetchall()[0][0]
        n_vecs = con.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]
        assert con.execute("SELECT count(*) FROM failure_clusterings").fetchall()[0][0] == 0
    assert n_docs == 60 and n_vecs > 0
    cluster_failures(db, benchmark=fs.benchmark)  # the next visit: the three new failures only
    with reader(db) as con:
        again = cl.stored_clusters(con, benchmark=fs.benchmark)
        assert con.execute("SELECT count(*) FROM failure_documents").fetchall()[0][0] == 63
    assert again is not None and again.n_failures == 63


def test_batch_boundaries_change_no_document_vector_or_cluster(tmp_path: Path) -> None:
    """The job in batches of a few failures (documents) and texts (vectors) stores what it stores in one batch of
    each: the same documents, vectors and clusters."""
    from ingest.pipeline import ingest_paths
    from jobs.failures import cluster_failures
    from tests.failure_sets import failure_set

    fs = failure_set(seed=8, n_causes=4, n_failures=60)
    source = fs.write(tmp_path / "b.jsonl")
    stored = []
    for name, kwargs in (("whole", {"doc_batch": 1_000, "batch": 1_000}), ("batched", {"doc_batch": 7, "batch": 5})):
        db = tmp_path / f"{name}.duckdb"
        ingest_paths([source], db=db)
        said: list[str] = []
        cluster_failures(db, benchmark=fs.benchmark, progress=lambda f, m, said=said: said.append(m), **kwargs)  # type: ignore[arg-type]
        with reader(db) as con:
            docs = con.execute(
                "SELECT attempt_id, segments, masked, content_hash FROM failure_documents ORDER BY attempt_id"
            ).fetchall()
            vecs = con.execute("SELECT text_hash, vector FROM embeddings ORDER BY text_hash").fetchall()
            clusters = cl.stored_clusters(con, benchmark=fs.benchmark)
        assert clusters is not None
        members = clusters.members[["attempt_id", "cluster_id"]].to_dict("records")
        stored.append((docs, vecs, members, clusters.summary.drop(columns="llm_label").to_dict("records"), said))
    (docs, vecs, members, summary, _), (docs2, vecs2, members2, summary2, said2) = stored
    assert sum("building the documents" in m for m in said2) == 9  # 60 failures, 7 at a time: the boundaries hit
    assert len(docs) == 60 and docs2 == docs and len(vecs) > 5 and vecs2 == vecs
    assert members2 == members and summary2 == summary


def test_failure_vectors_hold_each_distinct_text_once(held_db: tuple[Path, str]) -> None:
    """The vectors per failure are the embedder's, in the failures' order, repeated texts included; the new vectors
    are found by their rows (what ``store_vectors`` writes); with every text distinct, no second array is made."""
    import pandas as pd

    from jobs.failures import failure_vectors

    def encode(texts: list[str]) -> np.ndarray:
        return np.array([[len(t), ord(t[0]), 1.0] for t in texts], dtype=np.float32)

    db, _ = held_db
    with reader(db) as con:
        for texts in (["bb", "a", "bb", "ccc", "a"], ["bb", "a", "ccc"]):
            vectors, missing, new, rows = failure_vectors(
                con, pd.DataFrame({"text": texts}), model="test-model", encode=encode, batch=2
            )
            assert np.array_equal(vectors, encode(texts)) and missing == list(dict.fromkeys(texts))
            assert np.array_equal(new[rows], encode(missing))
            assert (vectors is new) == (len(set(texts)) == len(texts))


def test_the_jobs_duckdb_settings_apply_again_to_an_instance_that_spilled(tmp_path: Path) -> None:
    """The clusters job's process sets DuckDB's memory limit and temporary folder on its reader, then on its writer,
    which for a lake is the same instance: once that instance has spilled, DuckDB refuses to switch the folder, even
    to itself (the 1M lake's job failed so at its store step), so ``configure`` leaves an unchanged folder alone."""
    import duckdb

    from jobs.failures import configure

    settings = {"memory_limit": "64MB", "temp_directory": str(tmp_path / "spill")}
    con = duckdb.connect()
    configure(con, settings)
    con.execute("SET threads = 1")
    sorted_rows = "SELECT count(*) FROM (SELECT i::VARCHAR || repeat('x', 24) AS s FROM range(3000000) t(i) ORDER BY s)"
    assert con.execute(sorted_rows).fetchall() == [(3_000_000,)]
    assert (tmp_path / "spill").is_dir()  # it spilled: a plain SET of the folder now fails
    with pytest.raises(duckdb.NotImplementedException):
        con.execute("SET temp_directory = ?", [settings["temp_directory"]])
    configure(con, settings)


def test_the_jobs_duckdb_gives_back_the_address_space_it_frees() -> None:
    """The clusters job's process (``jobs.clusters_worker``) has DuckDB's allocator unmap what it frees: the
    address-space cap counts what is kept, and at 1M attempts DuckDB kept about 800 MB of it after the documents
    step (a 2,048 MB grant stopped there). A sort of a few hundred MB leaves the process's address space where it
    was once the connection is closed (the allocator's default kept about 200 MB more here)."""
    import subprocess
    import sys

    script = """
import jobs.clusters_worker as w
w.return_freed_address_space()
import duckdb
def vm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize")) // 1024
con = duckdb.connect()
con.execute("SET threads = 1")
con.execute("SET enable_progress_bar = false")
before = vm()
con.execute("SELECT count(*) FROM (SELECT i::VARCHAR || repeat('x', 24) AS s FROM range(3000000) t(i) ORDER BY s)")
con.close()
print(vm() - before)
"""
    env = {k: v for k, v in os.environ.items() if k != "DUCKDB_JE_MALLOC_CONF"}
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True, cwd=root)
    assert int(out.stdout) < 64, out.stdout


def test_the_jobs_duckdb_runs_one_thread_below_a_gigabyte() -> None:
    """The job's DuckDB runs one thread when its share of a small grant is below 1 GB (two threads' share of the
    documents step's statement ran out of 512 MB at 1M attempts); at the full cap its threads are DuckDB's own."""
    import duckdb

    from jobs.clusters_worker import MB, duckdb_settings
    from jobs.failures import configure

    small, full = duckdb_settings(512 * MB, "spill"), duckdb_settings(1024 * MB, "spill")
    assert small == {"memory_limit": "512MB", "temp_directory": "spill", "threads": "1"}
    assert full == {"memory_limit": "1024MB", "temp_directory": "spill"}
    con = duckdb.connect()
    configure(con, {"threads": small["threads"]})
    assert con.execute("SELECT current_setting('threads')").fetchall() == [(1,)]

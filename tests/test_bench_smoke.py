"""The benchmark scripts at tiny sizes, so they cannot rot: generator, ingest-vs-read_json, page timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from bench.gen_logs import generate
from tests.conftest import ROOT


def test_generator_is_seeded_and_shaped(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", n_attempts=200, n_runs=4, seed=3)
    b = generate(tmp_path / "b", n_attempts=200, n_runs=4, seed=3)
    assert [f.read_bytes() for f in a] == [f.read_bytes() for f in b]
    c = generate(tmp_path / "c", n_attempts=200, n_runs=4, seed=4)
    assert a[0].read_bytes() != c[0].read_bytes()
    records = [json.loads(line) for f in a for line in f.read_text().splitlines()]
    attempts = [r for r in records if r["record"] == "attempt"]
    assert len(attempts) == 200 and len({r["run_id"] for r in attempts}) == 4
    steps = [len(r["steps"]) for r in attempts]
    assert 4 <= sum(steps) / len(steps) <= 6  # about five steps each
    assert len({r["benchmark"] for r in records if r["record"] == "benchmark"}) == 4
    assert any("errors" in r for r in attempts) and any(r["score"] == 1 for r in attempts)


def test_generator_short_tools_shape(tmp_path: Path) -> None:
    """The second shape: four tool calls of a few words per attempt; the default shape's bytes do not depend on it."""
    files = generate(tmp_path / "s", n_attempts=200, n_runs=2, seed=3, shape="short-tools")
    attempts = [
        r for f in files for line in f.read_text().splitlines() if (r := json.loads(line))["record"] == "attempt"
    ]
    assert len(attempts) == 200
    assert all(len(a["steps"]) == 4 and {s["kind"] for s in a["steps"]} == {"tool_call"} for a in attempts)
    assert max(len(s["result"].split()) for a in attempts for s in a["steps"]) <= 6
    default = generate(tmp_path / "d", n_attempts=200, n_runs=2, seed=3)
    assert [f.read_bytes() for f in default] == [
        f.read_bytes() for f in generate(tmp_path / "e", n_attempts=200, n_runs=2, seed=3, shape="default")
    ]


def test_bench_ingest_and_bench_pages_run(tmp_path: Path) -> None:
    out = tmp_path / "ingest.json"
    done = subprocess.run(
        [
            sys.executable,
            "bench/bench_ingest.py",
            "--sizes",
            "300",
            "--runs",
            "3",
            "--work",
            str(tmp_path),
            "--keep-db",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [row] = json.loads(out.read_text())["rows"]
    assert row["attempts"] == 300 and row["steps"] > 900
    assert row["read_json"]["cpu_s"] > 0
    for store in ("lake", "file"):  # the default local lake and a DuckDB file, each against the per-file floor
        assert row[store]["wall_s"] > 0 and row[store]["ratio_wall"] > 0 and row[store]["tree_rss_mb"] > 0
    assert "| default | 300 |" in done.stdout and "| lake |" in done.stdout and "| file |" in done.stdout
    db = tmp_path / "bench-300.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] == 300
    pages = tmp_path / "pages.json"
    done = subprocess.run(
        [
            sys.executable,
            "bench/bench_pages.py",
            "--db",
            str(db),
            "--pages",
            "views/leaderboard.py",
            "views/drilldown.py",
            "views/search.py?q=step&mode=words",
            "--json",
            str(pages),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(pages.read_text())
    timed = {p["page"]: p for p in result["pages"]}
    assert timed["views/leaderboard.py"]["first_wall_s"] > 0 and not timed["views/leaderboard.py"]["problems"]
    searched = timed["views/search.py?q=step&mode=words"]  # a page with its link's parameters
    assert searched["first_wall_s"] > 0 and not searched["problems"]
    assert result["drilldown_queries"]["wall_s"] > 0
    assert set(result["sql_table2"]) == {"shipped", "bench-0"}
    assert result["sql_table2"]["bench-0"]["rows"] and not result["sql_table2"]["bench-0"]["error"]


def test_bench_fastpath_runs(tmp_path: Path) -> None:
    [log, *_] = generate(tmp_path / "logs", n_attempts=60, n_runs=2, seed=1)
    done = subprocess.run(
        [sys.executable, "bench/bench_fastpath.py", str(log), "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    row = done.stdout.splitlines()[-1].split("|")
    assert row[1].strip() == log.name and row[2].strip() == "30"
    assert float(row[3]) > 0 and float(row[4]) > 0


def test_bench_tmf_bootstrap_runs() -> None:
    done = subprocess.run(
        [sys.executable, "bench/bench_tmf_bootstrap.py", "--shapes", "60x4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout.splitlines()[0])
    assert row["shape"] == "60x4" and row["replicates"] == 500
    assert abs(sum(row["stage_probability"].values()) - 1.0) < 1e-9


def test_bench_publish_runs(fixture_db: Path, tmp_path: Path) -> None:
    from bench import bench_publish

    out = tmp_path / "publish.json"
    assert (
        bench_publish.main(
            ["--store", str(fixture_db), "--burst", "2", "--attempts", "6", "--repeat", "1", "--json", str(out)]
        )
        == 0
    )
    result = json.loads(out.read_text())
    assert [r["uploads"] for r in result["one"] + result["burst2"]] == [1, 2]
    assert all(r["publishes"] >= 1 and len(r["latency_s"]) == r["uploads"] for r in result["one"] + result["burst2"])


def test_bench_lake_runs(tmp_path: Path) -> None:
    from bench import bench_lake

    out = tmp_path / "lake.json"
    args = ["--sizes", "600", "--work", str(tmp_path / "work"), "--writers", "2", "--uploads", "2", "--json", str(out)]
    assert bench_lake.main(args) == 0
    row = json.loads(out.read_text())["sizes"]["600"]
    assert set(row) == {"file", "lake (local disk)", "burst"}
    assert all(len(row[s]["upload_s"]) == 3 for s in ("file", "lake (local disk)"))
    assert row["burst"]["ingested"] == row["burst"]["runs_stored"] == 4


def test_bench_scale_builds_once_and_measures(tmp_path: Path) -> None:
    from bench import bench_scale

    out = tmp_path / "scale.json"
    args = ["--size", "300", "--work", str(tmp_path / "work"), "--measure", "upload", "search", "--json", str(out)]
    assert bench_scale.main(args) == 0
    result = json.loads(out.read_text())
    assert all(len(result["upload"][kind]["seconds"]) == 3 for kind in ("file", "lake"))
    for kind in ("file", "lake"):
        row = result["search"][kind]
        assert row["scan identifier"]["n_attempts"] == row["index identifier"]["n_attempts"]
    built = (tmp_path / "work" / "300" / "file.duckdb").stat().st_mtime_ns
    assert bench_scale.main([*args[:4], "--measure"]) == 0  # reused, not rebuilt
    assert (tmp_path / "work" / "300" / "file.duckdb").stat().st_mtime_ns == built


def test_bench_clusters_runs_with_stand_in_vectors(tmp_path: Path) -> None:
    import numpy as np

    from bench import bench_clusters

    logs = tmp_path / "logs"
    generate(logs, n_attempts=300, n_runs=3, n_benchmarks=1, seed=2)
    db = tmp_path / "bench.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "ingest", "--no-progress", "--db", str(db), str(logs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        n_failed = con.execute("SELECT count(*) FROM attempts WHERE NOT passed").fetchall()[0][0]
    assert n_failed > 60
    out = tmp_path / "clusters.json"
    cache = tmp_path / "throwaway.duckdb"
    argv = ["--db", str(db), "--sample", "20", "--repeat", "1", "--stand-in", "--max-points", "40", "--json", str(out)]
    assert bench_clusters.main([*argv, "--cache-store", str(cache)]) == 0
    with pytest.raises(SystemExit, match="throwaway"):  # never writes into a store that exists
        bench_clusters.main([*argv, "--cache-store", str(db)])
    result = json.loads(out.read_text())
    clustering = result["clustering"]
    assert result["n_failures"] == n_failed and result["embedding"]["stand_in"] is True
    assert (clustering["n_clustered_directly"], clustering["n_assigned"]) == (40, n_failed - 40)
    assert clustering["member_total"] == clustering["by_run_total"] == n_failed
    assert clustering["n_clusters"] >= 1 and clustering["wall_s_best"] > 0 and result["peak_rss_mb"] > 0
    assert len(result["cache"]["read"]) == 1 and result["cache"]["write"]["wall_s"] > 0

    # the stand-ins: the sample keeps its vectors, every other text lies near one of them, all unit length
    texts = [f"text {i}" for i in range(50)]
    sample_ix = np.array([3, 10, 20])
    sample_vecs = bench_clusters.random_unit_vectors([texts[i] for i in sample_ix])
    vecs = bench_clusters.stand_in_vectors(texts, sample_ix, sample_vecs, seed=0)
    assert np.array_equal(vecs[sample_ix], sample_vecs)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    assert (vecs @ sample_vecs.T).max(axis=1).min() > 0.9


def test_bench_clusters_synthetic_and_quality_run(tmp_path: Path) -> None:
    from bench import bench_cluster_quality, bench_clusters

    out = tmp_path / "synthetic.json"
    argv = ["--synthetic", "1500", "--embed", "500", "--repeat", "1", "--max-points", "300", "--json", str(out)]
    assert bench_clusters.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["n"] == 1500 and result["embed"]["texts"] == 500 and result["embed"]["texts_per_wall_s"] > 0
    assert result["store_vectors"]["wall_s"] > 0 and 0.0 <= result["ari"] <= 1.0
    bench_cluster_quality.HELD_OUT[:] = [("failure_sets", 100, 4, 200, "agent"), ("ops", 200, 4, 300, "trace")]
    quality = tmp_path / "quality.json"
    keep = tmp_path / "keep"
    assert bench_cluster_quality.main(["--minilm-max", "0", "--keep", str(keep), "--json", str(quality)]) == 0
    rows = json.loads(quality.read_text())
    assert [(r["generator"], r["seed"]) for r in rows] == [("failure_sets", 100), ("ops", 200)]
    assert sorted(p.name for p in keep.glob("*.duckdb")) == ["failure_sets-100.duckdb", "ops-200.duckdb"]
    assert all(-1.0 <= r["ari"] <= 1.0 for r in rows)


def test_bench_page_reads_and_the_app_start_run(tmp_path: Path) -> None:
    from bench import bench_page_reads, bench_startup
    from ingest.pipeline import ingest_paths

    db = tmp_path / "small.duckdb"
    ingest_paths(generate(tmp_path / "logs", n_attempts=300, n_runs=4, n_benchmarks=1, seed=33), db=db, jobs=1)
    out = tmp_path / "reads.json"
    assert bench_page_reads.main(["--db", str(db), "--sign-flip", "50", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["reads"]) >= {"sql: schema browser", "diff: compare_runs", "review: judge's corrected figures"}
    assert all(r["cpu_s"] >= 0 for r in result["reads"].values()) and len(result["sign_flip_tail"]) == 1
    start = bench_startup.app_start(str(db), repeat=1)
    assert start["problems"] == [] and float(start["total_s"]) > float(start["imports_s"]) > 0  # type: ignore[arg-type]
    assert "catalog" in {name for name, _ in start["reads_of_median_run"]}  # type: ignore[union-attr]
    phases = bench_startup.app_phases(str(db), repeat=1)  # the same start taken apart (the hooks found their names)
    marks = {mark["what"] for mark in phases["marks"]}  # type: ignore[attr-defined]
    assert phases["problems"] == [] and {"_bootstrap", "_sidebar", "read catalog", "app.py's imports done"} <= marks
    assert any(m.startswith("the landing page") for m in marks) and phases["imports_in_first_run_s"]
    script = phases["script_thread"]  # from /proc: its wall, the part on a CPU and the part waiting for one
    assert 0 < script["on_cpu_s"] <= script["wall_s"] and script["runqueue_s"] >= 0  # type: ignore[index]
    pages = bench_startup.pages_as_a_server(str(db), ["views/upload.py"])  # the component scan once, as a server
    assert [row["page"] for row in pages["pages"]][1:] == ["views/upload.py"]  # type: ignore[index]
    assert all(not row["problems"] for row in pages["pages"])  # type: ignore[attr-defined]

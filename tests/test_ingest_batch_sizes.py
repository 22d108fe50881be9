"""The size of a batch changes nothing stored (ingest/batches.py): the demo and a generated store, written one
transaction per file, in pairs, or all files in one transaction (the larger batches of 1 GB), with and without
validation workers, hold the same rows, ids, aggregates and ``ingest_log`` rows and digests."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gen_logs import generate
from data.demo.build import load_demo
from ingest import batches
from ingest.pipeline import ingest_paths
from tests.test_ingest_batches import count_batches, snapshot
from tests.test_ingest_parallel import outcomes


def test_the_demo_in_one_batch_is_the_demo_written_file_by_file(
    demo_db_master: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the session's demo (conftest.demo_db_master) was loaded with the default batches: its 6 files in one
    assert batches.BATCH_BYTES >= 64 * 2**20 and batches.BATCH_FILES >= 6
    sizes = count_batches(monkeypatch)
    monkeypatch.setattr(batches, "BATCH_BYTES", 0)
    results = load_demo(tmp_path / "alone.duckdb")
    assert sizes == [] and len(results) == 6  # no batch this time
    assert snapshot(str(tmp_path / "alone.duckdb")) == snapshot(str(demo_db_master))


@pytest.mark.parametrize("backend", ["file", "local lake"])
def test_a_generated_store_is_the_same_in_batches_of_any_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    files = generate(tmp_path / "logs", n_attempts=3000, n_runs=10, n_benchmarks=2, seed=11)
    per_file = max(f.stat().st_size for f in files)
    sizes = count_batches(monkeypatch)

    def store(name: str) -> str:
        return str(tmp_path / f"{name}.duckdb") if backend == "file" else f"ducklake:sqlite:{tmp_path / name}.lake"

    stores: dict[str, tuple[str, list[int]]] = {}
    variants = {  # name: (batch bytes, validation jobs)
        "alone": (0, 1),
        "pairs": (2 * per_file + 1, 1),
        "all": (64 * per_file, 1),
        "all, workers": (64 * per_file, 2),
    }
    results = {}
    for name, (batch_bytes, jobs) in variants.items():
        monkeypatch.setattr(batches, "BATCH_BYTES", batch_bytes)
        sizes.clear()
        results[name] = ingest_paths(files, db=store(name), jobs=jobs)
        stores[name] = (store(name), list(sizes))
    assert stores["alone"][1] == []
    assert stores["pairs"][1] == [2] * 5
    assert stores["all"][1] == [10] == stores["all, workers"][1]
    assert all(r.outcome == "ingested" for r in results["alone"]) and len(results["alone"]) == 10
    expected = snapshot(stores["alone"][0])
    assert sum(len(rows) for rows in expected.values()) > 10_000
    for name in variants:
        assert outcomes(results[name]) == outcomes(results["alone"]), name
        assert snapshot(stores[name][0]) == expected, name

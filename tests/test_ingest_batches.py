"""A folder's small files written in batches (ingest/batches.py) give the store of one transaction per file: the
same rows, ids, aggregates and outcomes; a batch that fails is rolled back whole and its files written alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import store as rdb
from bench.gen_logs import generate
from ingest import batches
from ingest.pipeline import ingest_paths
from store import ingest_writer
from tests.test_ingest_parallel import TABLES, mixed_batch, outcomes

AGGREGATES = (
    "run_task_stats",
    "run_task_codes",
    "run_code_pairs",
    "run_judge_counts",
    "run_label_codes",
    "run_slice_stats",
    "run_slice_codes",
    "run_task_first",
)


def snapshot(db: str) -> dict[str, list[tuple]]:
    """Every row the files wrote (timings and paths left out), the aggregates included, each float to 12
    significant digits: an aggregate's mean is summed in whatever order DuckDB's threads meet the rows, so one
    build may store 0.79 where another stores 0.7899999999999999."""
    queries = {**TABLES, **{t: f"SELECT * FROM {t} ORDER BY ALL" for t in AGGREGATES}}
    with rdb.reader(db) as con:
        return {name: [_settled(row) for row in con.execute(sql).fetchall()] for name, sql in queries.items()}


def _settled(row: tuple) -> tuple:
    return tuple(float(f"{v:.12g}") if isinstance(v, float) else v for v in row)


def folder(tmp_path: Path) -> list[Path]:
    """Files that depend on each other (mixed_batch: conflicts, duplicates, a bad file, a run extended by a later
    file) and plain generated ones, some repeating the definitions of earlier ones."""
    mixed_batch(tmp_path / "logs")
    generate(tmp_path / "logs" / "more", n_attempts=900, n_runs=9, n_benchmarks=2, seed=5)
    return sorted((tmp_path / "logs").rglob("*.jsonl"))


def count_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = batches.write_batch

    def counted(con: duckdb.DuckDBPyConnection, files: list[ingest_writer.BatchFile], **kw: Any) -> object:
        sizes.append(len(files))
        return real(con, files, **kw)

    monkeypatch.setattr(batches, "write_batch", counted)
    return sizes


@pytest.mark.parametrize("backend", ["file", "local lake"])
def test_batched_files_give_the_store_of_one_transaction_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    files = folder(tmp_path)

    def store(name: str) -> str:
        return str(tmp_path / f"{name}.duckdb") if backend == "file" else f"ducklake:sqlite:{tmp_path / name}.lake"

    sizes = count_batches(monkeypatch)
    batched = ingest_paths(files, db=store("batched"), jobs=1)
    assert sizes and max(sizes) > 1  # some files did go together
    monkeypatch.setattr(batches, "BATCH_BYTES", 0)  # one transaction per file, as before batches
    n_batches = len(sizes)
    alone = ingest_paths(files, db=store("alone"), jobs=1)
    assert len(sizes) == n_batches

    assert outcomes(batched) == outcomes(alone)
    assert sum(r.outcome == "ingested" for r in batched) == 13
    assert [(r.n_runs, r.n_tasks, r.n_attempts, r.n_steps) for r in batched] == [
        (r.n_runs, r.n_tasks, r.n_attempts, r.n_steps) for r in alone
    ]
    assert snapshot(store("batched")) == snapshot(store("alone"))


@pytest.mark.parametrize(
    "failure",
    [
        duckdb.ConstraintException("simulated failure after the batch's rows"),
        pa.ArrowInvalid("simulated Arrow failure"),
    ],
)
def test_a_batch_that_fails_is_rolled_back_and_its_files_written_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    files = folder(tmp_path)
    real = ingest_writer._write_batch
    failed: list[int] = []

    def fails_at_the_end(con: duckdb.DuckDBPyConnection, batch: list, is_demo: bool) -> list[int]:
        real(con, batch, is_demo)  # every row of the batch written, then the transaction fails
        failed.append(len(batch))
        raise failure

    monkeypatch.setattr(ingest_writer, "_write_batch", fails_at_the_end)
    results = ingest_paths(files, db=tmp_path / "failing.duckdb", jobs=1)
    assert failed and max(failed) > 1
    monkeypatch.setattr(batches, "BATCH_BYTES", 0)
    alone = ingest_paths(files, db=tmp_path / "alone.duckdb", jobs=1)
    assert outcomes(results) == outcomes(alone)
    assert snapshot(str(tmp_path / "failing.duckdb")) == snapshot(str(tmp_path / "alone.duckdb"))


def test_batches_hold_at_most_their_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = generate(tmp_path / "logs", n_attempts=1200, n_runs=6, n_benchmarks=1, seed=7)
    per_file = max(f.stat().st_size for f in files)
    monkeypatch.setattr(batches, "BATCH_BYTES", 2 * per_file + 1)
    sizes = count_batches(monkeypatch)
    results = ingest_paths(files, db=tmp_path / "db.duckdb", jobs=1)
    assert [r.outcome for r in results] == ["ingested"] * 6
    assert sizes == [2, 2, 2]

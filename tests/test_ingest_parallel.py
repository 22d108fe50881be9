"""Validation in worker processes gives exactly what a file-by-file ingest gives: same rows, same ids, same errors."""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import shutil
from pathlib import Path

import duckdb
import orjson
import pytest

from bench.gen_logs import generate
from ingest import pipeline
from ingest.errors import IngestError, Problem
from ingest.pipeline import ingest_jobs, ingest_paths
from store import RunlensError
from tests.conftest import FIXTURES

TABLES = {  # every row a file writes, ordered by its natural key; timings and paths left out
    "benchmarks": "SELECT * FROM benchmarks ORDER BY benchmark",
    "tasks": "SELECT * FROM tasks ORDER BY benchmark, task_id",
    "runs": "SELECT * EXCLUDE (file_id) FROM runs ORDER BY run_id",
    "attempts": "SELECT a.* EXCLUDE (file_id), l.content_hash FROM attempts a JOIN ingest_log l USING (file_id) "
    "ORDER BY attempt_id",
    "steps": "SELECT * FROM steps ORDER BY attempt_id, step",
    "texts": "SELECT * FROM texts ORDER BY text_hash",
    "error_labels": "SELECT * FROM error_labels ORDER BY ALL",
    "attempt_metrics": "SELECT * FROM attempt_metrics ORDER BY ALL",
    "ingest_log": "SELECT file_id, content_hash, format, n_runs, n_tasks, n_attempts, n_steps, outcome, rows_digest "
    "FROM ingest_log ORDER BY file_id",
}


def snapshot(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in TABLES.items()}


def lines(*records: dict) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


BENCH = {"record": "benchmark", "benchmark": "b", "scoring": "binary"}
TASK = {"record": "task", "benchmark": "b", "task_id": "t1"}


def run(run_id: str, **extra: object) -> dict:
    return {"record": "run", "run_id": run_id, "benchmark": "b", "agent": "a", **extra}


def attempt(run_id: str, sample: int = 0, score: float = 1.0) -> dict:
    return {
        "record": "attempt",
        "run_id": run_id,
        "task_id": "t1",
        "sample": sample,
        "score": score,
        "steps": [{"tool": "search", "args": {"q": "x"}, "result": "y" * 2000}],
    }


def mixed_batch(folder: Path) -> list[Path]:
    """Files whose validity depends on the files before them in the same batch."""
    generate(folder / "gen", n_attempts=600, n_runs=6, n_benchmarks=2, seed=3)  # definitions repeated per file
    files = {
        "m01-defines.jsonl": lines(BENCH, TASK, run("r1"), attempt("r1")),
        "m02-refers-to-m01.jsonl": lines(run("r2"), attempt("r2"), attempt("r1", sample=1)),
        "m03-conflicts.jsonl": lines({**BENCH, "scoring": "graded"}, run("r3"), attempt("r3")),
        "m04-duplicate-attempt.jsonl": lines(attempt("r1", sample=1)),
        "m05-bad-json.jsonl": lines(run("r5")) + b"{not json\n",
        "m06-same-as-m01.jsonl": lines(BENCH, TASK, run("r1"), attempt("r1")),
        "m07-after-bad.jsonl": lines(run("r5", agent="other"), attempt("r5")),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    shutil.copy(FIXTURES / "good.jsonl", folder / "m08-good.jsonl")
    return sorted(folder.rglob("*.jsonl"))


def outcomes(results: list) -> list[tuple[str, str, str | None]]:
    return [
        (Path(r.path).name, r.outcome, str(r.error) if r.error else r.duplicate_of and Path(r.duplicate_of).name)
        for r in results
    ]


def test_workers_give_the_same_database_and_outcomes_as_one_file_after_another(tmp_path: Path) -> None:
    files = mixed_batch(tmp_path / "logs")
    serial = ingest_paths(files, db=tmp_path / "serial.duckdb", jobs=1)
    parallel = ingest_paths(files, db=tmp_path / "parallel.duckdb", jobs=2)

    assert outcomes(parallel) == outcomes(serial)
    by_name = {Path(r.path).name: r for r in parallel}
    assert by_name["m02-refers-to-m01.jsonl"].outcome == "ingested"  # validated again once m01 was written
    assert "'b' is already defined with different pass_threshold, scoring" in str(by_name["m03-conflicts.jsonl"].error)
    assert "m04-duplicate-attempt.jsonl:1: sample: duplicate attempt" in str(
        by_name["m04-duplicate-attempt.jsonl"].error
    )
    assert "m05-bad-json.jsonl:2: -: invalid JSON" in str(by_name["m05-bad-json.jsonl"].error)
    assert by_name["m06-same-as-m01.jsonl"].outcome == "duplicate"
    assert by_name["m07-after-bad.jsonl"].outcome == "ingested"  # m05 (bad) defined nothing
    assert sum(r.outcome == "ingested" for r in parallel) == 10

    assert snapshot(tmp_path / "parallel.duckdb") == snapshot(tmp_path / "serial.duckdb")


def test_a_second_batch_in_workers_sees_the_first(tmp_path: Path) -> None:
    """Definitions and attempts already in the database: identical repeats skipped, duplicates refused."""
    first = generate(tmp_path / "a", n_attempts=300, n_runs=3, n_benchmarks=1, seed=1)
    db = tmp_path / "db.duckdb"
    ingest_paths(first, db=db, jobs=2)
    again = tmp_path / "b"
    again.mkdir()
    (again / "repeat.jsonl").write_bytes(first[0].read_bytes() + b"\n")  # same records, other content hash
    (again / "more.jsonl").write_bytes(
        lines({"record": "attempt", "run_id": "run-001", "task_id": "t000000", "sample": 99, "score": 0.0})
    )
    results = ingest_paths([again], db=db, jobs=2)
    assert [(Path(r.path).name, r.outcome) for r in results] == [("more.jsonl", "ingested"), ("repeat.jsonl", "failed")]
    assert "duplicate attempt" in str(results[1].error) and "in the database" in str(results[1].error)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM attempts WHERE sample = 99").fetchall() == [(1,)]


def test_ingest_errors_survive_the_trip_from_a_worker() -> None:
    import pickle

    err = IngestError([Problem("f.jsonl:3", "score", "1.5 is outside [0.0, 1.0]"), Problem("f.jsonl:9", "-", "x")])
    back = pickle.loads(pickle.dumps(err))
    assert back.problems == err.problems and str(back) == str(err)


def test_workers_only_for_several_large_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNLENS_INGEST_JOBS", raising=False)
    small = [tmp_path / f"{i}.jsonl" for i in range(3)]
    for path in small:
        path.write_bytes(b"{}\n")
    assert ingest_jobs(small, None) == 1  # a few small files: starting processes would cost more
    assert ingest_jobs(small, 2) == 2
    assert ingest_jobs(small[:1], 4) == 1  # one file: nothing to overlap
    monkeypatch.setattr("ingest.pipeline.PARALLEL_MIN_BYTES", 1)
    monkeypatch.setenv("RUNLENS_INGEST_JOBS", "3")
    assert ingest_jobs(small, None) == 3
    monkeypatch.setattr("ingest.pipeline.WORKER_BASE_BYTES", 0)
    monkeypatch.setattr("ingest.pipeline._available_memory", lambda: 2 * 8 * 3)  # room for two 3-byte files
    assert ingest_jobs(small, None) == 2
    assert ingest_jobs(small, 3) == 3  # asked for: as asked
    monkeypatch.setattr("ingest.pipeline._available_memory", lambda: 0)
    assert ingest_jobs(small, None) == 1
    # the tree's budget (RUNLENS_INGEST_MEMORY_MB) bounds them too: the writer's share, then 8x each worker's file
    monkeypatch.setattr("ingest.pipeline._available_memory", lambda: 1 << 40)
    monkeypatch.setattr("ingest.pipeline.TREE_MEMORY_BYTES", pipeline.WRITER_MEMORY_BYTES + 2 * 8 * 3)
    assert ingest_jobs(small, None) == 2
    monkeypatch.setattr("ingest.pipeline.WORKER_BASE_BYTES", 1)
    assert ingest_jobs(small, None) == 1
    # a native file larger than a part holds only a part: it counts as one (CHUNK_BYTES)
    monkeypatch.setattr("ingest.pipeline.CHUNK_BYTES", 1)
    assert ingest_jobs(small, None) == 3


class _DeadPool:
    """A process pool whose workers have died: every future fails with BrokenProcessPool."""

    def __init__(self, *_args: object, **_kwargs: object) -> None:
        pass

    def __enter__(self) -> _DeadPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def submit(self, *_args: object) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_exception(concurrent.futures.process.BrokenProcessPool("a worker was killed"))
        return future


def test_when_workers_die_the_remaining_files_are_validated_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = generate(tmp_path / "logs", n_attempts=200, n_runs=4, n_benchmarks=1, seed=2)
    monkeypatch.setattr("ingest.parallel.concurrent.futures.ProcessPoolExecutor", _DeadPool)
    results = ingest_paths(files, db=tmp_path / "db.duckdb", jobs=2)
    assert [r.outcome for r in results] == ["ingested"] * 4
    assert "validation workers stopped (a worker was killed)" in capsys.readouterr().err
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall() == [(200,)]


def test_a_bad_jobs_setting_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_INGEST_JOBS", "two")
    with pytest.raises(RunlensError, match="RUNLENS_INGEST_JOBS must be a whole number.*'two'"):
        ingest_jobs([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], None)


def _pandas_after_validation(path: str) -> tuple[bool, int]:
    """In a worker: whether validating ``path`` imported pandas, and the rows of a table converted to pandas after."""
    import sys

    import pyarrow as pa

    from ingest.records import Known

    prepared = pipeline.prepare_file(Path(path), Known())
    assert prepared.error is None
    imported = "pandas" in sys.modules
    return imported, len(pa.table({"x": [1, 2]}).to_pandas())


def test_a_worker_validates_without_importing_pandas_and_can_still_use_it() -> None:
    """pyarrow's probe for pandas is answered "absent" in a validation worker (0.2-0.25 CPU s a worker), yet an
    explicit conversion still imports and uses it."""
    import multiprocessing
    import os

    from ingest import parallel

    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        1, mp_context=context, initializer=parallel._init_worker, initargs=(os.getpid(),)
    ) as pool:
        imported, rows = pool.submit(_pandas_after_validation, str(FIXTURES / "good.jsonl")).result()
    assert not imported
    assert rows == 2


def test_the_writer_runs_on_one_thread_beside_its_workers_and_puts_the_setting_back() -> None:
    from store.ingest_writer import one_thread

    con = duckdb.connect()
    con.execute("SET threads = 3")
    threads = "SELECT current_setting('threads')"
    with one_thread(con, True):
        assert con.execute(threads).fetchall() == [(1,)]
    assert con.execute(threads).fetchall() == [(3,)]
    with one_thread(con, False):
        assert con.execute(threads).fetchall() == [(3,)]


_WORKER_IMPORTS = """
import sys
from ingest.parallel import _prepare_worker  # what a spawned validation worker imports to run a file
import store
from store import RunlensError
assert RunlensError.__module__ == "store.errors"
print(sorted(m for m in ("duckdb", "store.backends", "store.sessions", "store.lake", "store.ingest_writer")
             if m in sys.modules))
import store.migrate
print(store.migrate.__name__, callable(store.migrate), "duckdb" in sys.modules)
"""


def test_a_validation_worker_imports_nothing_of_the_database() -> None:
    """A worker (a fresh process) imports validation, not DuckDB and the store's backends (``store`` imports its
    names when first asked for: 0.30-0.34 CPU s a worker before, 0.19-0.23 after); ``store.migrate`` stays the
    function once its submodule is imported, as when every name was imported up front."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", _WORKER_IMPORTS], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "migrate True True"]


def test_a_worker_hands_its_rows_over_in_the_memory_folder_within_its_cap(tmp_path: Path) -> None:
    """A file's rows go to the memory folder while the files there stay within the cap, else to the disk's; the
    rows read back are the same either way, and the folder's files are counted."""
    from ingest.parallel import _prepare_worker
    from ingest.records import Known
    from ingest.tempdirs import SpillPlaces
    from ingest.tempdirs import folder_bytes as _folder_bytes

    [path] = generate(tmp_path / "logs", n_attempts=40, n_runs=1, n_benchmarks=1, seed=5)
    disk, memory = tmp_path / "disk", tmp_path / "memory"
    disk.mkdir()
    memory.mkdir()
    kept = _prepare_worker(path, Known(), "auto", SpillPlaces(str(disk), str(memory), 1 << 30), {})
    assert kept.bundle is not None and kept.bundle.spill_dir is not None
    assert Path(kept.bundle.spill_dir).parent == memory
    held = _folder_bytes(str(memory))
    assert held > 0 and _folder_bytes(str(disk)) == 0
    no_room = SpillPlaces(str(disk), str(memory), held + 1)  # no room beside the first
    full = _prepare_worker(path, Known(), "auto", no_room, {})
    off = _prepare_worker(path, Known(), "auto", SpillPlaces(str(disk)), {})
    for prepared in (full, off):
        assert prepared.bundle is not None and prepared.bundle.spill_dir is not None
        assert Path(prepared.bundle.spill_dir).parent == disk
        assert list(prepared.bundle.parts())[0] == list(kept.bundle.parts())[0]
    assert _folder_bytes(str(memory)) == held
    for prepared in (kept, full, off):
        prepared.bundle.release()


def test_the_workers_known_is_pickled_again_only_when_it_changed_and_each_file_gets_its_own_copy() -> None:
    from ingest.parallel import _known_from, _WorkerKnown
    from ingest.records import Known

    known = Known({"b": ("binary", 1.0)}, {"r1": ("b", None, None)}, {("b", "t1")}, hashes={"h": "f.jsonl"})
    for_worker = _WorkerKnown()
    first = for_worker(known)
    assert for_worker(known) is first  # unchanged: the same bytes
    got = _known_from(first)
    got.tasks.add(("b", "t2"))  # a worker's file defines a task: the next file's copy does not have it
    assert _known_from(first) == known.for_worker() and _known_from(first) is not got
    known.runs["r1"] = ("b", 1.0, 2.0)  # a value changed, not the number of runs
    second = for_worker(known)
    assert second != first and _known_from(second) == known.for_worker()


def test_the_workers_start_with_their_allocator_setting_and_this_process_keeps_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from ingest.parallel import WORKER_ENV, _worker_environment

    monkeypatch.delenv("MIMALLOC_PURGE_DELAY", raising=False)
    with _worker_environment():
        assert {k: os.environ.get(k) for k in WORKER_ENV} == WORKER_ENV
    assert "MIMALLOC_PURGE_DELAY" not in os.environ
    monkeypatch.setenv("MIMALLOC_PURGE_DELAY", "5")  # the user's own setting is kept
    with _worker_environment():
        assert os.environ["MIMALLOC_PURGE_DELAY"] == "5"
    assert os.environ["MIMALLOC_PURGE_DELAY"] == "5"


def test_rows_the_memory_folder_cannot_take_go_to_disk(tmp_path: Path) -> None:
    from ingest.parallel import _prepare_worker
    from ingest.records import Known
    from ingest.tempdirs import SpillPlaces

    [path] = generate(tmp_path / "logs", n_attempts=20, n_runs=1, n_benchmarks=1, seed=6)
    disk, not_a_folder = tmp_path / "disk", tmp_path / "memory"
    disk.mkdir()
    not_a_folder.write_bytes(b"")  # writing under it fails (OSError)
    prepared = _prepare_worker(path, Known(), "auto", SpillPlaces(str(disk), str(not_a_folder), 1 << 30), {})
    assert prepared.bundle is not None and prepared.bundle.spill_dir is not None
    assert Path(prepared.bundle.spill_dir).parent == disk and len(prepared.bundle.spilled) == 1
    prepared.bundle.release()

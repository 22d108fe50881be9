"""The spill folder of an ingest killed mid-way (SIGKILL: an out-of-memory kill, a CI timeout, an upload worker past
its time) is removed by the next ingest; the folders of running ingests are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench.gen_logs import generate
from ingest import pipeline, tempdirs
from ingest.pipeline import ingest_paths
from store import PROJECT_ROOT
from tests.conftest import FIXTURES

# An ingest of one file read in parts of 4 KB (each spilled to disk), whose writer stops for good before the
# transaction: it says when it is there, with its parts on disk, and waits to be killed.
KILLED_INGEST = textwrap.dedent(
    """
    import sys, time
    from ingest import pipeline
    from store import ingest_writer

    def stop(*args, **kwargs):
        print("writing", flush=True)
        time.sleep(600)

    ingest_writer.write_bundle = stop  # (the pipeline imports it when it writes)
    pipeline.ingest_paths([sys.argv[1]], db=sys.argv[2], jobs=1)
    """
)


def kill_an_ingest(log: Path, db: Path, tmp: Path) -> Path:
    """Run an ingest of ``log`` in a process of its own, SIGKILL it while its writer holds spilled parts; return the
    spill folder it left in ``tmp``."""
    env = {  # (parts on disk: none in the memory folder)
        **os.environ,
        "TMPDIR": str(tmp),
        "RUNLENS_INGEST_CHUNK_MB": str(4096 / 1024**2),
        "RUNLENS_INGEST_MEMORY_SPILL_MB": "0",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_INGEST, str(log), str(db)],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the writer is reached (or the process ends)
        assert line.strip() == "writing", proc.stderr.read() if proc.stderr else line
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    left = list(tmp.glob(tempdirs.SPILL_PREFIX + "*"))
    assert len(left) == 1, left
    assert list(left[0].rglob("*.arrow")), "the killed ingest had spilled parts"
    assert left[0].name.startswith(f"{tempdirs.SPILL_PREFIX}p{proc.pid}-")
    return left[0]


def test_the_next_ingest_removes_the_spill_folder_of_a_killed_one(tmp_path: Path, private_tmp: Path) -> None:
    (log,) = generate(tmp_path / "logs", n_attempts=60, n_runs=1, n_benchmarks=1)
    assert log.stat().st_size > 10 * 4096  # several parts
    left = kill_an_ingest(log, tmp_path / "killed.duckdb", private_tmp)

    # a running ingest's folder (this process's) and another user's kind of folder are not touched
    mine = Path(tempdirs.owned_folder(tempdirs.SPILL_PREFIX))
    other = private_tmp / "runlens-sql-keep"
    other.mkdir()

    results = ingest_paths([FIXTURES / "good.jsonl"], db=tmp_path / "next.duckdb")  # small: spills nothing itself
    assert [r.outcome for r in results] == ["ingested"]
    assert not left.exists()
    assert mine.exists() and other.exists()
    mine.rmdir()


def test_the_next_ingest_removes_the_memory_folder_of_a_killed_one(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed ingest's parts waiting in the memory folder (tmpfs) go with the next ingest, even one that spills
    nothing (a small file)."""
    start = tempdirs.start_token(os.getpid())
    if start in (None, "na"):
        pytest.skip("no process start times on this system")
    memory = tmp_path / "shm"
    memory.mkdir()
    monkeypatch.setattr(pipeline, "memory_parent", lambda: str(memory))
    left = memory / f"{tempdirs.SPILL_PREFIX}p{os.getpid()}-s{int(start) + 1}-x"  # (a process gone: see below)
    (left / "file-1" / "part-00000").mkdir(parents=True)
    results = ingest_paths([FIXTURES / "good.jsonl"], db=tmp_path / "next.duckdb")
    assert [r.outcome for r in results] == ["ingested"]
    assert list(memory.iterdir()) == []


def test_rows_wait_in_the_memory_folder_while_they_fit_else_on_disk(tmp_path: Path, private_tmp: Path) -> None:
    """``SpillPlaces.spill``, the one choice for a large file's parts and a worker's files: the memory folder while
    the rows fit within its cap, else the disk's folder; the disk's too when told to keep off the memory folder, and
    the system's temporary folder when no folder is named."""
    from ingest.records import Bundle, Known

    [log] = generate(tmp_path / "logs", n_attempts=20, n_runs=1, n_benchmarks=1, seed=3)
    disk, memory = tmp_path / "disk", tmp_path / "memory"
    disk.mkdir()
    memory.mkdir()
    bundles: list[Bundle] = []

    def placed(places: tempdirs.SpillPlaces, to_memory: bool = True) -> Path:
        bundle = pipeline.prepare_file(log, Known()).bundle
        assert bundle is not None and bundle.spill_dir is None
        bundles.append(bundle)
        places.spill(bundle, to_memory=to_memory)
        assert bundle.spill_dir is not None and bundle.n_attempts == 20
        return Path(bundle.spill_dir).parent

    roomy = tempdirs.SpillPlaces(str(disk), str(memory), 1 << 30)
    assert placed(roomy) == memory
    held = tempdirs.folder_bytes(str(memory))
    assert placed(tempdirs.SpillPlaces(str(disk), str(memory), held + 1)) == disk  # no room beside the first
    assert placed(roomy, to_memory=False) == disk
    assert placed(tempdirs.ON_DISK) == private_tmp
    assert tempdirs.folder_bytes(str(memory)) == held
    for bundle in bundles:
        bundle.release()
    assert list(memory.iterdir()) == list(disk.iterdir()) == list(private_tmp.iterdir()) == []


def test_a_folder_whose_process_id_was_reused_is_removed(private_tmp: Path) -> None:
    """The owner's start time tells a reused process id from the owner: this process's id with another start time
    names a folder whose owner is gone."""
    start = tempdirs.start_token(os.getpid())
    assert start is not None
    if start == "na":
        pytest.skip("no process start times on this system")
    reused = private_tmp / f"{tempdirs.SPILL_PREFIX}p{os.getpid()}-s{int(start) + 1}-x"
    live = Path(tempdirs.owned_folder(tempdirs.SPILL_PREFIX))
    reused.mkdir()
    assert tempdirs.remove_orphans(tempdirs.SPILL_PREFIX) == 1
    assert not reused.exists() and live.exists()
    live.rmdir()


def test_folders_named_before_owners_were_recorded_go_after_a_day(private_tmp: Path) -> None:
    old = private_tmp / (tempdirs.SPILL_PREFIX + "abc123")
    new = private_tmp / (tempdirs.SPILL_PREFIX + "def456")
    for folder in (old, new):
        folder.mkdir()
    os.utime(old, (time.time() - 2 * tempdirs.LEGACY_STALE_AFTER_S,) * 2)
    assert tempdirs.remove_orphans(tempdirs.SPILL_PREFIX) == 1
    assert not old.exists() and new.exists()


def test_an_upload_removes_the_folder_of_a_killed_server(private_tmp: Path) -> None:
    """An upload folder whose server is gone (a process id no process has) is removed at the next upload."""
    from ingest import upload_worker as uw

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)  # its id now names no process (until reused: then its start time differs)
    dead = private_tmp / f"{uw.TEMP_PREFIX}p{proc.pid}-s1-x"
    dead.mkdir()
    (dead / "upload.jsonl").write_text("{}")
    with uw.staged([("a.jsonl", b"{}")]) as paths:
        assert paths[0].parent.name.startswith(f"{uw.TEMP_PREFIX}p{os.getpid()}-")
        assert not dead.exists()
    assert not list(private_tmp.glob(uw.TEMP_PREFIX + "*"))


# A demo load (of the hand-written file only: the generators take seconds) that stops for good at its ingest, with
# its generated files in its folder: it says when it is there, and waits to be killed.
KILLED_DEMO = textwrap.dedent(
    """
    import sys, time
    from data.demo import build

    def stop(*args, **kwargs):
        print("ingesting", flush=True)
        time.sleep(600)

    build.GENERATORS[:] = [("starter", build._starter)]
    build.ingest_paths = stop
    build.load_demo(sys.argv[1])
    """
)


def test_the_next_demo_load_removes_the_folder_of_a_killed_one(tmp_path: Path, private_tmp: Path) -> None:
    from data.demo import build

    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_DEMO, str(tmp_path / "killed.duckdb")],
        cwd=PROJECT_ROOT,
        env={**os.environ, "TMPDIR": str(private_tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ingesting", proc.stderr.read() if proc.stderr else line
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    (left,) = private_tmp.glob(build.TEMP_PREFIX + "*")
    assert left.name.startswith(f"{build.TEMP_PREFIX}p{proc.pid}-")
    assert list(left.rglob("starter.jsonl")), "the killed load had written its files"
    mine = Path(tempdirs.owned_folder(build.TEMP_PREFIX))  # a load running in this process: kept

    seen: list[Path] = []

    def record(files: list[Path], **kwargs: object) -> list[object]:
        seen.extend(files)
        assert not left.exists()  # removed before this load's own build
        return []

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build, "GENERATORS", [("starter", build._starter)])
        mp.setattr(build, "ingest_paths", record)
        build.load_demo(tmp_path / "next.duckdb")
    assert [f.name for f in seen] == ["starter.jsonl"]
    assert seen[0].parent.parent.parent.name.startswith(f"{build.TEMP_PREFIX}p{os.getpid()}-")
    assert not seen[0].exists()  # the load's own folder is gone when it returns
    assert mine.exists()
    mine.rmdir()
    assert not list(private_tmp.glob(build.TEMP_PREFIX + "*"))


def test_a_clusters_job_removes_the_spill_folder_of_a_killed_one(private_tmp: Path) -> None:
    """A clusters job killed hard (out of memory, a measurement stopped) left its spill folder: the next removes it."""
    from jobs import clusters_worker

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    dead = private_tmp / f"{clusters_worker.SPILL_PREFIX}p{proc.pid}-s1-x"
    dead.mkdir()
    (dead / "documents.parquet").write_bytes(b"x")
    with clusters_worker.spill_folder() as spill:
        assert Path(spill).name.startswith(f"{clusters_worker.SPILL_PREFIX}p{os.getpid()}-")
        assert not dead.exists()
    assert not list(private_tmp.glob(clusters_worker.SPILL_PREFIX + "*"))

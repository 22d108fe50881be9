"""The writer lock and the snapshot's generation (issue 19): a publish never lets the next writer in early, never
replaces a newer snapshot, batches a queue of short sessions into one publish, and a crash never leaves the
snapshot behind committed data.

Writers run as real processes (the lock is per process); each prints what it did, and the tests read the
primary and the snapshot afterwards.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from bench.gen_logs import generate
from store import writelock
from store.backends import file as rdb
from tests.conftest import ROOT

# An ingest whose first os.fsync (the publish's, on the snapshot's temporary copy) blocks until the test says so.
SLOW_FSYNC_INGEST = """
import os, sys, time
from pathlib import Path
db, path, in_fsync, release = sys.argv[1:5]
real_fsync, calls = os.fsync, []
def slow_fsync(fd):
    if not calls:
        calls.append(fd)
        Path(in_fsync).touch()
        deadline = time.monotonic() + 30
        while not Path(release).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return real_fsync(fd)
os.fsync = slow_fsync
from ingest.pipeline import ingest_paths
results = ingest_paths([path], db=db)
sys.exit(0 if [r.outcome for r in results] == ["ingested"] else 3)
"""

# One short writer session that inserts a probe row, then checks that a reader sees it as soon as writer() returns.
# argv: db, name, log, [go-file to wait for inside the session], [die: SIGKILL itself after committing]
SHORT_WRITER = """
import json, os, signal, sys, time
from pathlib import Path
from store.backends import file as rdb
db, name, log = sys.argv[1:4]
go = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
die = len(sys.argv) > 5 and sys.argv[5] == "die"
def note(event):
    with open(log, "a") as fh:
        fh.write(json.dumps([name, event]) + "\\n")
real_publish, real_await = rdb.publish_file, rdb._await_publish
def publish_file(path, generation):
    done = real_publish(path, generation)
    note("published" if done else "publish-skipped")
    return done
def await_publish(path, generation, *, wait_s):
    note("left-publish")
    return real_await(path, generation, wait_s=wait_s)
rdb.publish_file, rdb._await_publish = publish_file, await_publish
note("ready")
with rdb.writer(db, short_session=True) as con:
    con.execute("INSERT INTO meta VALUES (?, 'x')", [name])
    while go and not Path(go).exists():
        time.sleep(0.02)
    if die:
        os.kill(os.getpid(), signal.SIGKILL)
with rdb.reader(db) as con:
    seen = con.execute("SELECT count(*) FROM meta WHERE key = ?", [name]).fetchall()[0][0]
sys.exit(0 if seen == 1 else 4)
"""


def _python(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(predicate: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _runs(db_file: Path) -> set[str]:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
    finally:
        con.close()


def _events(log: Path) -> list[tuple[str, str]]:
    if not log.exists():
        return []
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]  # type: ignore[misc]


def _probes(db_file: Path) -> set[str]:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT key FROM meta WHERE value = 'x'").fetchall()}
    finally:
        con.close()


def test_second_writer_waits_for_a_slow_publish(tmp_path: Path) -> None:
    """The bug of issue 19: the first writer's publish copied the primary (releasing DuckDB's lock), the second
    writer got in, published, and the first writer's late rename put the older snapshot back."""
    db = tmp_path / "race.duckdb"
    first, second = generate(tmp_path / "logs", n_attempts=40, n_runs=2, n_benchmarks=1, seed=3)
    with rdb.writer(db):  # created and migrated beforehand, so both ingests are short
        pass
    in_fsync, release = tmp_path / "in-fsync", tmp_path / "release"
    slow = _python(SLOW_FSYNC_INGEST, db, first, in_fsync, release)
    assert _wait_for(in_fsync.exists, 60), slow.communicate()
    fast = _python(SLOW_FSYNC_INGEST.replace("if not calls:", "if False:"), db, second, tmp_path / "x", release)
    # Let the second ingest run to its end if it can (it could, before the fix); with the lock it waits instead.
    _wait_for(lambda: fast.poll() is not None, 8)
    release.touch()
    out_slow, out_fast = slow.communicate(timeout=120), fast.communicate(timeout=120)
    assert (slow.returncode, fast.returncode) == (0, 0), (out_slow, out_fast)
    both = _runs(db)
    assert len(both) == 2
    assert _runs(rdb.snapshot_path(db)) == both, "the snapshot went back in time"


def _published(db: Path) -> rdb.Generation:
    generation = rdb.snapshot_generation(rdb.snapshot_path(db))
    assert generation is not None
    return generation


def test_publish_never_replaces_a_newer_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "gen.duckdb"
    with rdb.writer(db):
        pass
    with rdb.writer(db) as con:
        con.execute("INSERT INTO meta VALUES ('probe', 'x')")
    newer = _published(db)
    assert newer.number >= 2
    snap_bytes = rdb.snapshot_path(db).read_bytes()
    older = rdb.Generation(newer.store_id, newer.number - 1)
    assert not rdb.publish_file(db, older)
    assert not rdb.publish_file(db, newer)  # the same generation: nothing to replace
    assert rdb.snapshot_path(db).read_bytes() == snap_bytes
    # A snapshot left by another primary (deleted, restored) is replaced whatever its number.
    assert rdb.publish_file(db, rdb.Generation("another-store", 1))


def test_a_newer_snapshot_published_during_the_copy_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generation is checked again right before the rename: a slow copy of an older state loses."""
    db = tmp_path / "gen.duckdb"
    with rdb.writer(db, publish_snapshot=False) as con:
        con.execute("INSERT INTO meta VALUES ('probe', 'x')")
        stale = rdb.seal(con)
    real_copy = rdb.shutil.copyfile

    def copy_then_a_newer_writer_publishes(src: Path, dst: Path) -> object:
        out = real_copy(src, dst)
        monkeypatch.setattr(rdb.shutil, "copyfile", real_copy)
        with rdb.writer(db) as con:
            con.execute("INSERT INTO meta VALUES ('late', 'x')")
        return out

    monkeypatch.setattr(rdb.shutil, "copyfile", copy_then_a_newer_writer_publishes)
    assert not rdb.publish_file(db, stale)
    assert _published(db).number == stale.number + 1
    assert _probes(rdb.snapshot_path(db)) == {"probe", "late"}


def test_a_queue_of_short_writers_publishes_in_a_batch(tmp_path: Path) -> None:
    db, log = tmp_path / "batch.duckdb", tmp_path / "events.jsonl"
    with rdb.writer(db):
        pass
    names = [f"w{i}" for i in range(4)]
    state = writelock.acquire(db, wait_s=5, queue=False)  # hold the lock while the writers start and queue up
    try:
        procs = [_python(SHORT_WRITER, db, name, log) for name in names]
        assert _wait_for(lambda: sum(e == "ready" for _, e in _events(log)) == len(names), 60)
        time.sleep(1.0)  # from "ready" to waiting on the lock is an import-free step
        assert writelock.has_waiters(db)
    finally:
        writelock.release(state)
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * len(names), outs  # each saw its own row once writer() returned
    events = _events(log)
    published = [n for n, e in events if e == "published"]
    assert 1 <= len(published) < len(names), events
    assert _probes(rdb.snapshot_path(db)) == set(names)
    assert not rdb.pending_path(db).exists()


def test_the_writer_left_to_publish_dies_and_the_one_waiting_publishes(tmp_path: Path) -> None:
    db, log, go = tmp_path / "crash.duckdb", tmp_path / "events.jsonl", tmp_path / "go"
    with rdb.writer(db):
        pass
    first = _python(SHORT_WRITER, db, "first", log, go)  # takes the lock, then waits for 'go' inside its session
    assert _wait_for(lambda: ("first", "ready") in _events(log), 60)
    assert _wait_for(lambda: not _lock_free(db), 30)
    doomed = _python(SHORT_WRITER, db, "doomed", log, "", "die")  # queues, commits, and is SIGKILLed
    assert _wait_for(lambda: ("doomed", "ready") in _events(log), 60)
    assert _wait_for(lambda: writelock.has_waiters(db), 30)
    go.touch()
    out_first, out_doomed = first.communicate(timeout=120), doomed.communicate(timeout=120)
    assert doomed.returncode == -9, out_doomed
    assert first.returncode == 0, out_first
    events = _events(log)
    assert ("first", "left-publish") in events and ("first", "published") in events, events
    assert _probes(rdb.snapshot_path(db)) == {"first", "doomed"}  # the dead writer's commit too


def _lock_free(db: Path) -> bool:
    fd = os.open(writelock.lock_path(db), os.O_RDWR | os.O_CREAT)
    try:
        return writelock._try_flock(fd, writelock.fcntl.LOCK_EX)
    finally:
        os.close(fd)


def _commit_and_die(db: str) -> None:
    session = rdb.writer(db)  # kept in a variable: a collected generator would run its exit
    con = session.__enter__()
    con.execute("INSERT INTO meta VALUES ('orphan', 'x')")
    os._exit(0)  # no publish, no close: as if killed right after the commit


def test_a_reader_publishes_what_a_dead_writer_committed(tmp_path: Path) -> None:
    db = tmp_path / "heal.duckdb"
    with rdb.writer(db):
        pass
    child = mp.get_context("fork").Process(target=_commit_and_die, args=(str(db),))
    child.start()
    child.join(60)
    assert rdb.pending_path(db).exists()
    assert "orphan" not in _probes(rdb.snapshot_path(db))
    with rdb.reader(db) as con:
        assert con.execute("SELECT count(*) FROM meta WHERE key = 'orphan'").fetchall() == [(1,)]
    assert not rdb.pending_path(db).exists()


def _hold_lock(db: str, seconds: float) -> None:
    state = writelock.acquire(Path(db), wait_s=5, queue=False)
    time.sleep(seconds)
    writelock.release(state)
    os._exit(0)


def test_a_busy_lock_raises_database_busy_error(tmp_path: Path) -> None:
    db = tmp_path / "busy.duckdb"
    with rdb.writer(db):
        pass
    holder = mp.get_context("fork").Process(target=_hold_lock, args=(str(db), 3.0))
    holder.start()
    assert _wait_for(lambda: not _lock_free(db), 30)
    started = time.monotonic()
    with pytest.raises(rdb.DatabaseBusyError), rdb.writer(db, wait_s=0.3):
        pass
    assert time.monotonic() - started < 2.5
    with rdb.writer(db, wait_s=30) as con:  # waits for the holder, then gets in
        con.execute("INSERT INTO meta VALUES ('after', 'x')")
    holder.join(10)
    assert "after" in _probes(rdb.snapshot_path(db))


def test_threads_take_turns_and_a_thread_may_nest(tmp_path: Path) -> None:
    db = tmp_path / "threads.duckdb"
    order: list[str] = []

    def session(name: str) -> None:
        with rdb.writer(db) as con:
            order.append(f"{name}-in")
            con.execute("INSERT INTO meta VALUES (?, 'x')", [name])
            with rdb.writer(db) as inner:  # nested in the same thread: no deadlock, one publish at the end
                inner.execute("INSERT INTO meta VALUES (?, 'x')", [f"{name}-inner"])
            time.sleep(0.2)
            order.append(f"{name}-out")

    threads = [threading.Thread(target=session, args=(f"t{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert order in (["t0-in", "t0-out", "t1-in", "t1-out"], ["t1-in", "t1-out", "t0-in", "t0-out"])
    assert _probes(rdb.snapshot_path(db)) == {"t0", "t0-inner", "t1", "t1-inner"}


def test_publish_requested_inside_a_session_survives_an_exception(tmp_path: Path) -> None:
    db = tmp_path / "judge.duckdb"
    with rdb.writer(db):
        pass
    with pytest.raises(KeyError), rdb.writer(db, publish_snapshot=False) as con:
        con.execute("INSERT INTO meta VALUES ('partial', 'x')")
        rdb.publish(con, db)
        raise KeyError("interrupted")
    assert "partial" in _probes(rdb.snapshot_path(db))
    with pytest.raises(rdb.RunlensError, match="writer session"):
        rdb.publish(duckdb.connect(":memory:"), db)


def test_publish_now_publishes_midway_through_a_session(tmp_path: Path) -> None:
    db = tmp_path / "now.duckdb"
    with rdb.writer(db) as con:
        con.execute("INSERT INTO meta VALUES ('early', 'x')")
        assert rdb.publish_now(con, db)
        assert "early" in _probes(rdb.snapshot_path(db))
        con.execute("INSERT INTO meta VALUES ('late', 'x')")
    assert _probes(rdb.snapshot_path(db)) >= {"early", "late"}


def _wait_in_queue(db: str, is_short: bool) -> None:
    state = writelock.acquire(Path(db), wait_s=60, queue=is_short)
    writelock.release(state)
    os._exit(0)


def test_a_publish_is_left_only_to_short_sessions(tmp_path: Path) -> None:
    """A long session waiting as well could take the lock first, and the data would wait for its whole length."""
    db = tmp_path / "long.duckdb"
    with rdb.writer(db):
        pass
    ctx = mp.get_context("fork")
    state = writelock.acquire(db, wait_s=5, queue=False)
    try:
        assert not rdb._may_leave_publish(db)  # nobody waits
        short = ctx.Process(target=_wait_in_queue, args=(str(db), True))
        short.start()
        assert _wait_for(lambda: writelock.has_waiters(db), 30)
        assert rdb._may_leave_publish(db)
        long = ctx.Process(target=_wait_in_queue, args=(str(db), False))
        long.start()
        assert _wait_for(lambda: writelock.has_waiters(db, is_short=False), 30)
        assert not rdb._may_leave_publish(db)
    finally:
        writelock.release(state)
    short.join(30)
    long.join(30)
    assert (short.exitcode, long.exitcode) == (0, 0)

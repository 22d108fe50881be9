"""Crash safety: SIGKILL an ingest of several files at seeded random moments, 30+ times.

After every kill the primary database opens (DuckDB replays or drops the WAL), the published snapshot opens, each
file is entirely in or entirely absent (attempts, steps, labels and its ingest_log row agree), doctor finds no
problem, and a rerun completes the job without duplicating anything.

The ingest runs in a child forked from this (already warmed-up) process, so a trial costs the ingest itself and
not a Python start-up; the kill is a real SIGKILL of the process holding the database.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

import store as rdb
from analytics import doctor
from bench.gen_logs import generate
from ingest.pipeline import ingest_paths

N_TRIALS = 32
N_FILES = 5


def _expected(files: list[Path]) -> dict[str, tuple[int, int]]:
    """run_id -> (attempts, steps) as written in each file."""
    out = {}
    for path in files:
        n_att = n_steps = 0
        run_id = None
        for line in path.read_bytes().splitlines():
            rec = json.loads(line)
            if rec["record"] == "attempt":
                n_att += 1
                n_steps += len(rec.get("steps") or [])
                run_id = rec["run_id"]
        out[str(run_id)] = (n_att, n_steps)
    return out


def _child(folder: str, db: str, jobs: int) -> None:
    ingest_paths([folder], db=db, jobs=jobs)
    os._exit(0)


def _descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (validation workers and their resource tracker)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            kids = {int(k) for k in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()}
        except OSError:
            continue
        found |= kids
        todo.extend(kids)
    return found


def _ingest_in_child(folder: Path, db: Path, *, kill_after_s: float | None, jobs: int = 1) -> bool:
    """Run one ingest in a forked child; SIGKILL it after ``kill_after_s``. True when it ran to the end.

    With validation workers, they must not outlive the killed ingest: they exit once it is gone."""
    proc = mp.get_context("fork").Process(target=_child, args=(str(folder), str(db), jobs))
    proc.start()
    orphans: set[int] = set()
    if kill_after_s is not None:
        proc.join(kill_after_s)
        if proc.is_alive():
            orphans = _descendants(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    deadline = time.monotonic() + 30
    while orphans and time.monotonic() < deadline:
        orphans = {p for p in orphans if _alive(p)}
        time.sleep(0.1)
    assert not orphans, f"processes outlived the killed ingest: {orphans}"
    return proc.exitcode == 0


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _state(db: Path) -> dict[str, tuple[int, int, int, int]]:
    """run_id -> (attempts, steps, labels, ingest_log rows) in the primary, opened read-write as a restart would."""
    con = duckdb.connect(str(db))
    try:
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'attempts'").fetchall()[
            0
        ][0]:
            return {}
        rows = con.execute("""
            SELECT r.run_id,
                   (SELECT count(*) FROM attempts a WHERE a.run_id = r.run_id),
                   (SELECT count(*) FROM steps s JOIN attempts a USING (attempt_id) WHERE a.run_id = r.run_id),
                   (SELECT count(*) FROM error_labels e JOIN attempts a USING (attempt_id) WHERE a.run_id = r.run_id),
                   (SELECT count(*) FROM ingest_log l WHERE l.file_id = r.file_id AND l.outcome = 'ingested')
            FROM runs r""").fetchall()
        return {str(r[0]): tuple(int(x) for x in r[1:]) for r in rows}
    finally:
        con.close()


def _check_consistent(db: Path, expected: dict[str, tuple[int, int]]) -> int:
    """Assert the all-or-nothing property and a clean doctor report; return how many files are in."""
    state = _state(db)
    if not state:  # killed before the first commit (possibly mid-migration; each migration is its own transaction)
        return 0
    for run_id, (n_att, n_steps, n_labels, n_log) in state.items():
        assert (n_att, n_steps) == expected[run_id], (run_id, state[run_id], expected[run_id])
        assert n_log == 1 and n_labels > 0, (run_id, state[run_id])
    con = duckdb.connect(str(db))
    try:
        report = doctor.check(con, str(db), rehash_sources=False)
    finally:
        con.close()
    assert report.ok, report.problems
    snap = rdb.snapshot_path(db)
    if snap.exists():  # the published snapshot is always a whole, openable database
        with duckdb.connect(str(snap), read_only=True) as con:
            con.execute("SELECT count(*) FROM attempts").fetchall()
    return len(state)


@pytest.mark.slow
@pytest.mark.parametrize(("jobs", "n_trials"), [(1, N_TRIALS), (2, 10)])
def test_sigkill_at_random_points_never_half_writes_a_file(tmp_path: Path, jobs: int, n_trials: int) -> None:
    """File by file (32 kills), and with validation worker processes (10 kills: they start in about a second)."""
    logs = tmp_path / "logs"
    files = generate(logs, n_attempts=N_FILES * 120, n_runs=N_FILES, n_benchmarks=2, seed=5)
    expected = _expected(files)
    db = tmp_path / "crash.duckdb"
    started = time.perf_counter()
    assert _ingest_in_child(logs, db, kill_after_s=None, jobs=jobs)
    full_s = time.perf_counter() - started  # how long an uninterrupted job takes here, now
    landed = _check_consistent(db, expected)
    assert landed == N_FILES
    rng = np.random.default_rng(2026 + jobs)
    partial_seen = set()
    trials = 0
    # A loaded machine can make the job slower than the first, uninterrupted run: then every kill lands before the
    # first commit. Each late kill that finds nothing committed stretches the time scale, and a few extra trials (at most
    # as many again) are allowed until kills have landed at two different points.
    while trials < n_trials or (len(partial_seen) < 2 and trials < 2 * n_trials):
        trials += 1
        if landed == N_FILES:  # (the last check's, of the store as it is) start again so later kills land mid-job
            for path in (db, Path(f"{db}.wal"), rdb.snapshot_path(db)):
                path.unlink(missing_ok=True)
        share = float(rng.uniform(0.02, 1.1))
        finished = _ingest_in_child(logs, db, kill_after_s=share * full_s, jobs=jobs)
        landed = _check_consistent(db, expected)
        if landed == 0 and not finished and share > 0.5:
            full_s *= 1.25
        partial_seen.add(landed)
    assert len(partial_seen) >= 2, f"kills never landed between files: {partial_seen} after {trials} kills"
    assert _ingest_in_child(logs, db, kill_after_s=None, jobs=jobs)  # a rerun completes the job
    assert _check_consistent(db, expected) == N_FILES
    with rdb.reader(db) as con:
        n = con.execute("SELECT count(*) FROM attempts").fetchall()[0][0]
    assert n == sum(a for a, _ in expected.values())


def test_an_empty_file_left_by_a_kill_while_the_database_was_made_is_made_again(tmp_path: Path) -> None:
    """DuckDB creates the file before it writes the header: a kill in between left an empty file that no open
    accepted. The writer makes a new database whole (a temporary name, renamed once closed), so the empty file and
    a half-made temporary one are replaced and the ingest goes on."""
    db = tmp_path / "crash.duckdb"
    db.touch()
    making = tmp_path / ".crash.duckdb.creating"
    making.write_bytes(b"\0" * 100)
    with pytest.raises(duckdb.IOException, match="not a valid DuckDB database file"):
        duckdb.connect(str(db)).close()
    files = generate(tmp_path / "logs", n_attempts=20, n_runs=1, n_benchmarks=1, seed=5)
    ingest_paths([str(tmp_path / "logs")], db=db)
    assert _check_consistent(db, _expected(files)) == 1
    assert not making.exists() and sorted(p.name for p in tmp_path.glob(".crash*")) == []


def test_a_file_that_is_not_a_database_is_never_replaced(tmp_path: Path) -> None:
    """Only an empty file is taken for one a kill left: anything else is the user's, and DuckDB's error stands."""
    db = tmp_path / "notes.duckdb"
    db.write_bytes(b"these are someone's notes, not a database\n")
    with pytest.raises(duckdb.IOException, match="not a valid DuckDB database file"), rdb.writer(db):
        pass
    assert db.read_bytes() == b"these are someone's notes, not a database\n"

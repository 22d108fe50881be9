"""The team store under a team's load: many writer processes uploading at once (some the same file) while
dashboards read, and writers killed at random points. Every file goes in exactly once or not at all."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

import store as rdb
from analytics import doctor
from tests.lake_support import make_upload, new_lake, overlapping, spawn_worker, writers_and_readers

# Writer w uploads files 4w .. 4w + 4, every other writer in reverse order: each shares one file with the next
# writer at the same place in both plans (the first or the last upload), so the two ask for it at the same time and
# one finds it ingested after waiting for the other's commit (8 contested files, 32 distinct, 40 uploads). Ten uploads
# a writer with stride 7 (80 uploads, 21 contested files, each uploaded by its second writer long after the first)
# reached no such race, and every other interleaving five uploads reach too (each commit by another writer than the
# previous one, all eight writers waiting at most commits, the readers seeing every snapshot): BENCHMARKS.md.
N_WRITERS, N_UPLOADS, N_FILES, STRIDE = 8, 5, 32, 4


@pytest.mark.slow
def test_eight_writers_and_two_readers(postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location, env = new_lake(postgres, tmp_path / "data")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    files = [make_upload(tmp_path, i) for i in range(N_FILES)]
    # each writer uploads N_UPLOADS files; files overlap between writers (the same CI artefact uploaded twice)
    plans = [[str(files[(w * STRIDE + j) % N_FILES]) for j in range(N_UPLOADS)] for w in range(N_WRITERS)]
    plans = [plan[::-1] if w % 2 else plan for w, plan in enumerate(plans)]
    rdb.ensure_snapshot(location)  # the lake exists before the readers start
    stop = tmp_path / "stop"
    outcomes, reads, spans = writers_and_readers(plans, env, stop)
    uploaded = {f for plan in plans for f in plan}
    assert len(uploaded) < N_WRITERS * N_UPLOADS  # some files were uploaded by more than one writer
    assert all(sorted(o)[-1] == "ingested" and o.count("ingested") == 1 for o in outcomes.values()), outcomes
    assert set(outcomes) == uploaded
    # the race the plans are made for happened: two writers were uploading the same file at the same time
    assert any(overlapping(s) for s in spans.values()), spans
    with rdb.reader(location) as con:
        n_runs, n_attempts, n_ids = con.execute(
            "SELECT count(DISTINCT run_id), count(*), count(DISTINCT attempt_id) FROM attempts"
        ).fetchall()[0]
        n_files = con.execute("SELECT count(*) FROM ingest_log").fetchall()[0][0]
    assert n_runs == n_files == len(uploaded) and n_attempts == n_ids == 40 * len(uploaded)
    with rdb.writer(location) as con:
        report = doctor.check(con, location, rehash_sources=False)
    assert report.ok, report.problems
    for read in reads:
        assert read["failures"] == [], read["failures"][:2]
        assert len(read["seen"]) > 5
        snapshots = [s for s, _ in read["seen"]]
        runs = [n for _, n in read["seen"]]
        assert snapshots == sorted(snapshots) and runs == sorted(runs), "a reader went back in time"


@pytest.mark.slow
def test_a_writer_killed_at_any_point_leaves_each_file_whole_or_absent(
    postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, env = new_lake(postgres, tmp_path / "data")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    rng = random.Random(19)
    files = [make_upload(tmp_path, i, n_tasks=400, samples=5) for i in range(10)]  # 2,000 attempts each
    for trial, path in enumerate(files):
        proc = spawn_worker(["write", str(path)], env)
        time.sleep(rng.uniform(0.3, 4.0))  # startup, validation, writing, committing: anywhere
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        with rdb.reader(location) as con:
            n = con.execute("SELECT count(*) FROM attempts WHERE run_id = ?", [f"run-{trial}"]).fetchall()[0][0]
            logged = con.execute("SELECT count(*) FROM ingest_log WHERE path = ?", [str(path)]).fetchall()[0][0]
        assert (n, logged) in ((0, 0), (2000, 1)), f"trial {trial}: {n} attempts, {logged} log rows"
    with rdb.writer(location) as con:  # the lock a killed writer held is gone: a new writer gets in at once
        report = doctor.check(con, location, rehash_sources=False)
    assert report.ok, report.problems

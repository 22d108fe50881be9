"""Upload latency with the snapshot publish: one small upload, and a burst of concurrent ones.

``python bench/bench_publish.py --store STORE.duckdb [--code DIR] [--burst 8] [--attempts 100] [--json OUT]``
``python bench/bench_publish.py --store STORE.duckdb --breakdown`` (steps of one session's end, in this process)

``STORE`` is an existing database (e.g. built with ``python -m ingest --db STORE bench-logs/``); it is copied to a
scratch folder for every scenario, so it is never modified. Each upload is ``python -m ingest`` of one native file
of ``--attempts`` attempts (its own run and benchmark names), in a fresh process started from ``--code`` (default:
this tree; point it at a copy of another revision to compare). Reported per scenario: the wall time of every
upload from its start to its exit (the latency a CI job sees, Python start-up included), the whole burst's wall
time, and how many snapshot publishes there were (changes of the snapshot's inode and modification time, polled
every 5 ms: a lower bound).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from bench.gen_logs import generate  # noqa: E402
from store import writelock  # noqa: E402
from store.backends import file as file_store  # noqa: E402


def upload_files(folder: Path, n: int, n_attempts: int) -> list[Path]:
    """``n`` native files of ``n_attempts`` attempts each, with run and benchmark names no store has."""
    raw = generate(folder / "raw", n_attempts=n_attempts * n, n_runs=n, n_benchmarks=1, seed=77)
    out = []
    for k, path in enumerate(raw):
        data = path.read_bytes().replace(b'"run-', f'"up{k}-'.encode()).replace(b'"bench-', b'"upload-bench-')
        target = folder / f"upload-{k}.jsonl"
        target.write_bytes(data)
        out.append(target)
    return out


def fresh_store(store: Path, scratch: Path) -> Path:
    """A private copy of ``store`` (and its snapshot, so the first upload does not pay for creating one)."""
    for leftover in scratch.glob("store.duckdb*"):
        leftover.unlink()
    db = scratch / "store.duckdb"
    shutil.copyfile(store, db)
    shutil.copyfile(store, scratch / "store.duckdb.read")
    return db


def _upload(code: Path, db: Path, path: Path, out: dict[str, float]) -> None:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ingest", "--no-progress", "--db", str(db), str(path)],
        cwd=code,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(code)},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"upload of {path} failed: {proc.stderr[-2000:]}")
    out[path.name] = time.perf_counter() - started


def _stamp(snap: Path) -> tuple[int, int]:
    st = snap.stat()
    return st.st_ino, st.st_mtime_ns  # inode numbers alone are reused by the next copy


def _count_publishes(snap: Path, stop: threading.Event, seen: set[tuple[int, int]]) -> None:
    while not stop.is_set():
        with contextlib.suppress(FileNotFoundError):
            seen.add(_stamp(snap))
        time.sleep(0.005)


def run_uploads(code: Path, db: Path, files: list[Path]) -> dict[str, object]:
    """Start every upload at once; return per-upload latencies, the burst's wall time and the publish count."""
    snap = db.with_name(db.name + ".read")
    initial = _stamp(snap)
    seen: set[tuple[int, int]] = {initial}
    stop = threading.Event()
    watcher = threading.Thread(target=_count_publishes, args=(snap, stop, seen))
    watcher.start()
    latencies: dict[str, float] = {}
    started = time.perf_counter()
    threads = [threading.Thread(target=_upload, args=(code, db, f, latencies)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    stop.set()
    watcher.join()
    values = sorted(latencies.values())
    return {
        "uploads": len(files),
        "latency_s": [round(v, 2) for v in values],
        "mean_s": round(sum(values) / len(values), 2),
        "wall_s": round(wall, 2),
        "publishes": len(seen - {initial}),  # lower bound: a snapshot replaced twice between polls counts once
    }


def _phases_before(db: Path) -> dict[str, float]:
    """The previous publish, step by step: checkpoint, then copy with the connection still open (issue 19's bug)."""
    marks = [time.perf_counter()]
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO meta VALUES ('bench-probe', 'x')")
    marks.append(time.perf_counter())
    con.execute("CHECKPOINT")
    marks.append(time.perf_counter())
    tmp = db.with_name(db.name + ".read.tmp")
    shutil.copyfile(db, tmp)
    marks.append(time.perf_counter())
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    marks.append(time.perf_counter())
    os.replace(tmp, db.with_name(db.name + ".read"))
    marks.append(time.perf_counter())
    con.close()
    marks.append(time.perf_counter())
    names = ["open_insert", "checkpoint", "copy", "fsync", "rename", "close"]
    return {n: round(marks[i + 1] - marks[i], 2) for i, n in enumerate(names)}


def _phases_after(db: Path) -> dict[str, float]:
    """The current session end, step by step: seal (generation + checkpoint), close, publish_file."""
    marks = [time.perf_counter()]
    state = writelock.acquire(db, wait_s=5, queue=False)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO meta VALUES ('bench-probe', 'x')")
    marks.append(time.perf_counter())
    generation = file_store.seal(con)
    marks.append(time.perf_counter())
    con.close()
    marks.append(time.perf_counter())
    file_store.publish_file(db, generation)
    marks.append(time.perf_counter())
    writelock.release(state)
    names = ["lock_open_insert", "seal_checkpoint", "close", "publish_file"]
    return {n: round(marks[i + 1] - marks[i], 2) for i, n in enumerate(names)}


def breakdown(store: Path, scratch: Path, repeat: int) -> dict[str, list[dict[str, float]]]:
    """In-process timings of one session's end on a private copy of ``store``, before and after issue 19."""
    return {
        "before": [_phases_before(fresh_store(store, scratch)) for _ in range(repeat)],
        "after": [_phases_after(fresh_store(store, scratch)) for _ in range(repeat)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="existing database to copy for each scenario")
    parser.add_argument("--code", type=Path, default=ROOT, help="tree whose `python -m ingest` runs the uploads")
    parser.add_argument("--burst", type=int, default=8)
    parser.add_argument("--attempts", type=int, default=100, help="attempts per uploaded file")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each scenario")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--breakdown", action="store_true", help="only time the steps of one session's end")
    args = parser.parse_args(argv)
    results: dict[str, object] = {
        "store_mb": round(args.store.stat().st_size / 1e6),
        "code": str(args.code),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="rl-bench-publish-") as tmp:
        scratch = Path(tmp)
        if args.breakdown:
            results["breakdown"] = breakdown(args.store, scratch, args.repeat)
            print(json.dumps(results["breakdown"]), flush=True)
            if args.json:
                args.json.write_text(json.dumps(results, indent=2))
            return 0
        files = upload_files(scratch / "logs", args.burst, args.attempts)
        for scenario, batch in (("one", files[:1]), (f"burst{args.burst}", files)):
            runs = [run_uploads(args.code, fresh_store(args.store, scratch), batch) for _ in range(args.repeat)]
            results[scenario] = runs
            print(scenario, json.dumps(runs), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

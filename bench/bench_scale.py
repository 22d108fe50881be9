"""Growth at scale: builds the stores of one size once, keeps them, and measures what must not grow with them.

``python bench/bench_scale.py --size 1000000 --work DIR [--measure upload search] [--json OUT]``

Kept in ``DIR/<size>/`` and reused by every later run (delete the folder to rebuild):

* ``logs/``: seeded native logs (``bench/gen_logs.py``, 50 files);
* ``file.duckdb`` (and its ``.read`` snapshot): a DuckDB file store, ``python -m ingest`` of the logs;
* ``store.lake`` (and ``store.lake.files/``): a local lake (``ducklake:sqlite:``, SQLite catalog, Parquet on the
  local disk), made from the file store with ``python -m analytics migrate-store``.

With ``--stream`` (for 10M, whose logs and two stores do not fit on this disk together) only the local lake, the
default store, is built, the way a user fills it: each log file is generated, ingested with ``python -m ingest``
into ``lake/store.lake`` and deleted before the next is written (the files are those of the plain build), so the
disk holds one log file at a time. Each file's ingest (wall, CPU, peak RSS of the process tree) goes to
``lake/build.json``. A rerun resumes: files already ingested are recognised by their content hash and skipped.

Measured (``--measure``):

* ``upload``: ``python -m ingest`` of one native file of 100 attempts (a new run), in a fresh process, three times
  per store: the latency a user or CI job sees, Python start-up included. Each upload adds its run to the kept
  stores (100 attempts; tagged by time so a rerun never repeats one).
* ``search``: ``python -m analytics search`` of a phrase, a word and an identifier on each store, in a fresh process.

Run it under ``nice -n 19`` on a shared machine. Building 1M attempts takes about 4 minutes here (generation, ingest,
migration); 10M about 25 minutes and 50 GB of disk (logs 27 GB, file store 15 GB plus its snapshot, lake 7 GB), or
with ``--stream`` the lake alone and one 0.55 GB log file at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_lake import upload_files  # noqa: E402
from bench.gen_logs import generate, iter_generate  # noqa: E402

SEARCHES = {"phrase": "budget week growth", "word": "threshold", "identifier": "t000123"}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str], *, timeout: float = 7200) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds of ``python args`` in a fresh process (its CPU seconds: ``_cpu()`` before and after)."""
    start = time.perf_counter()
    env = {**os.environ, "RUNLENS_MAX_FILE_BYTES": str(1 << 40)}  # generated files pass 512 MiB at 10M
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, done


def build(work: Path, size: int) -> dict[str, str]:
    """The stores of ``size`` attempts under ``work/<size>`` (built once): {kind: location}."""
    folder = work / str(size)
    folder.mkdir(parents=True, exist_ok=True)
    logs, db, lake = folder / "logs", folder / "file.duckdb", folder / "store.lake"
    if not (logs / "DONE").exists():
        shutil.rmtree(logs, ignore_errors=True)
        t = time.perf_counter()
        generate(logs, n_attempts=size, seed=size)
        (logs / "DONE").write_text("")
        print(f"generated {size:,} attempts in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    if not Path(f"{db}.read").exists():
        for stale in folder.glob("file.duckdb*"):
            stale.unlink()
        seconds, _ = _run(["-m", "ingest", "--db", str(db), "--no-progress", str(logs)])
        print(f"ingested into {db} in {seconds:.0f} s", file=sys.stderr)
    if not (folder / "LAKE_DONE").exists():
        for stale in folder.glob("store.lake*"):
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        seconds, _ = _run(["-m", "analytics", "migrate-store", "--from", str(db), "--to", f"ducklake:sqlite:{lake}"])
        (folder / "LAKE_DONE").write_text("")
        print(f"migrated into {lake} in {seconds:.0f} s", file=sys.stderr)
    return {"file": str(db), "lake": f"ducklake:sqlite:{lake}"}


def build_streamed(work: Path, size: int) -> dict[str, str]:
    """The local lake of ``size`` attempts under ``work/<size>/lake``, one log file on disk at a time."""
    folder = work / str(size) / "lake"
    folder.mkdir(parents=True, exist_ok=True)
    lake, done, record = folder / "store.lake", folder / "DONE", folder / "build.json"
    location = f"ducklake:sqlite:{lake}"
    if done.exists():
        return {"lake": location}
    files: list[dict[str, object]] = []
    started = time.perf_counter()
    for path in iter_generate(folder / "logs", n_attempts=size, seed=size):
        before = _cpu()
        seconds, _ = _run(["-m", "ingest", "--db", location, "--no-progress", str(path)])
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        files.append(
            {
                "file": path.name,
                "bytes": path.stat().st_size,
                "seconds": round(seconds, 1),
                "cpu_seconds": round(_cpu() - before, 1),
                "peak_rss_mb_so_far": round(peak_mb),
                "load_average": os.getloadavg()[0],
            }
        )
        path.unlink()
        record.write_text(json.dumps({"size": size, "files": files}, indent=1) + "\n")
        print(f"{path.name}: {seconds:.0f} s", file=sys.stderr)
    total = {
        "size": size,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "ingest_seconds": round(sum(float(f["seconds"]) for f in files), 1),  # type: ignore[arg-type]
        "ingest_cpu_seconds": round(sum(float(f["cpu_seconds"]) for f in files), 1),  # type: ignore[arg-type]
        "disk_bytes": _disk_bytes(location),
        "files": files,
    }
    record.write_text(json.dumps(total, indent=1) + "\n")
    done.write_text("")
    return {"lake": location}


def _disk_bytes(location: str) -> int:
    if location.startswith("ducklake:sqlite:"):
        catalog = Path(location.removeprefix("ducklake:sqlite:"))
        files = Path(f"{catalog}.files")
        return catalog.stat().st_size + sum(p.stat().st_size for p in files.rglob("*") if p.is_file())
    return sum(
        Path(f"{location}{suffix}").stat().st_size for suffix in ("", ".read") if Path(f"{location}{suffix}").exists()
    )


def measure_upload(stores: dict[str, str], folder: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    tag = f"up{int(time.time())}"
    for kind, location in stores.items():
        files = upload_files(folder / "uploads", f"{tag}-{kind}", 3)
        seconds, cpu = [], []
        for path in files:
            before = _cpu()
            seconds.append(round(_run(["-m", "ingest", "--db", location, "--no-progress", str(path)])[0], 3))
            cpu.append(round(_cpu() - before, 3))
        out[kind] = {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "median_s": statistics.median(seconds),
            "disk_bytes": _disk_bytes(location),
            "load_average": os.getloadavg()[0],
        }
        print(f"upload {kind}: {seconds} s wall, {cpu} s CPU", file=sys.stderr)
    return out


def measure_search(stores: dict[str, str]) -> dict[str, object]:
    """Each search in a fresh process, first scanning (no index), then through the index (refreshed before)."""
    out: dict[str, object] = {}
    for kind, location in stores.items():
        row: dict[str, object] = {}
        for state in ("scan", "index"):
            if state == "scan":
                _run(["-m", "analytics", "search-index", "--db", location, "--drop"])
            else:
                before = _cpu()
                seconds, _ = _run(["-m", "analytics", "search-index", "--db", location])
                row["index_refresh"] = {"seconds": round(seconds, 3), "cpu_seconds": round(_cpu() - before, 3)}
            for what, text in SEARCHES.items():
                before = _cpu()
                seconds, done = _run(["-m", "analytics", "search", "--db", location, "--json", text])
                report = json.loads(done.stdout)
                row[f"{state} {what}"] = {
                    "seconds": round(seconds, 3),
                    "cpu_seconds": round(_cpu() - before, 3),
                    "n_attempts": report.get("n_attempts"),
                }
        out[kind] = row
        print(f"search {kind}: {row}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, required=True, help="where the stores are kept (outside the repository)")
    parser.add_argument("--measure", nargs="*", default=["upload"], choices=["upload", "search"])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--stream", action="store_true", help="build only the local lake, one log file at a time")
    args = parser.parse_args(argv)
    stores = build_streamed(args.work, args.size) if args.stream else build(args.work, args.size)
    result: dict[str, object] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "size": args.size}
    if "upload" in args.measure:
        result["upload"] = measure_upload(stores, args.work / str(args.size))
    if "search" in args.measure:
        result["search"] = measure_search(stores)
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

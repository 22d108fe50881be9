"""The team store (DuckLake) against the single-file store: upload latency by store size, page first renders, and
commits per second with concurrent writers.

``python bench/bench_lake.py --sizes 100000 1000000 --work /tmp/rl_lake [--s3] [--pages] [--writers 8 --uploads 20]
[--json OUT]``

For each size: seeded native logs (``bench/gen_logs.py``) are ingested into a DuckDB file (kept in ``--work`` and
reused by later runs), then copied into a new lake on a throwaway PostgreSQL (``scripts/servers.py``) with the data
in a local folder, and with ``--s3`` into a second lake whose data sits on a local S3 server (moto). Measured:

* *upload*: ``python -m ingest`` of one native file of 100 attempts (its own run), in a fresh process, three times
  per store: the latency a CI job sees, Python start-up included. On the file store that includes the publish of
  the read snapshot (the whole file copied).
* *pages* (``--pages``): ``bench/bench_pages.py`` first and warm renders of the main pages on each store, each in its
  own process (AppTest, data cache cleared before each first render).
* *writers*: ``--writers`` processes each ingest ``--uploads`` small files (20 tasks x 2 samples) into one lake at
  once: commits per second over the burst, and every file is checked in exactly once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import store as rdb  # noqa: E402
from bench.gen_logs import generate  # noqa: E402
from scripts.servers import Postgres, S3Server, start_postgres, start_s3  # noqa: E402
from store.transfer import copy_store  # noqa: E402

PAGES = ["views/leaderboard.py", "views/errors.py", "views/tmf.py", "views/progress.py", "views/drilldown.py"]


def _run(
    args: list[str], env: dict[str, str], *, timeout: float = 3600
) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, done


def base_store(work: Path, size: int) -> Path:
    """A DuckDB file of ``size`` generated attempts (built once, reused)."""
    db = work / f"base-{size}.duckdb"
    if db.exists() and Path(f"{db}.read").exists():
        return db
    logs = work / f"logs-{size}"
    if not logs.exists():
        generate(logs, n_attempts=size, seed=size)
    for stale in work.glob(f"base-{size}.duckdb*"):
        stale.unlink()
    seconds, _ = _run(["-m", "ingest", "--db", str(db), "--no-progress", str(logs)], {})
    print(f"built {db} in {seconds:.0f} s", file=sys.stderr)
    return db


def upload_files(folder: Path, tag: str, n: int, *, n_tasks: int = 50, samples: int = 2) -> list[Path]:
    """``n`` native files, each a new run (``<tag>-<i>``) of benchmark ``upload-bench``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        run = f"{tag}-{i}"
        lines = [
            {"record": "benchmark", "benchmark": "upload-bench", "scoring": "binary"},
            *({"record": "task", "benchmark": "upload-bench", "task_id": f"T{t:03d}"} for t in range(n_tasks)),
            {"record": "run", "run_id": run, "benchmark": "upload-bench", "agent": f"agent-{i % 4}"},
            *(
                {
                    "record": "attempt",
                    "run_id": run,
                    "task_id": f"T{t:03d}",
                    "sample": s,
                    "score": (t + i + s) % 3 == 0,
                    "steps": [{"kind": "tool_call", "tool": "search", "args": {"q": t}}, {"kind": "final"}],
                }
                for t in range(n_tasks)
                for s in range(samples)
            ),
        ]
        path = folder / f"{run}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        out.append(path)
    return out


def upload_latency(location: str, env: dict[str, str], files: list[Path]) -> list[float]:
    """Seconds of ``python -m ingest FILE`` for each file, one after another."""
    return [round(_run(["-m", "ingest", "--db", location, "--no-progress", str(path)], env)[0], 3) for path in files]


def page_renders(location: str, env: dict[str, str], out: Path) -> dict[str, object]:
    """bench_pages.py's report (first and warm renders of PAGES, drilldown and SQL console timings)."""
    _run(["bench/bench_pages.py", "--db", location, "--pages", *PAGES, "--json", str(out)], env)
    return dict(json.loads(out.read_text()))


def writers_burst(
    location: str, env: dict[str, str], folder: Path, n_writers: int, n_uploads: int
) -> dict[str, object]:
    """``n_writers`` processes x ``n_uploads`` files each into the lake at once: commits/s and exactly-once."""
    files = upload_files(folder, "burst", n_writers * n_uploads, n_tasks=20)
    plans = [files[w * n_uploads : (w + 1) * n_uploads] for w in range(n_writers)]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.lake_worker", "write", *map(str, plan)],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for plan in plans
    ]
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(err[-3000:])
        outcomes += [json.loads(line)["outcome"] for line in out.splitlines()]
    wall = time.perf_counter() - start
    with rdb.reader(location) as con:
        n_in = con.execute("SELECT count(*) FROM runs WHERE run_id LIKE 'burst-%'").fetchall()[0][0]
    return {
        "writers": n_writers,
        "uploads": len(files),
        "wall_s": round(wall, 2),
        "commits_per_s": round(len(files) / wall, 2),
        "ingested": outcomes.count("ingested"),
        "runs_stored": n_in,
    }


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` set in this process for the block (the lake's data path and S3 settings), then restored."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def new_lake(pg: Postgres, name: str, data_path: str, s3: S3Server | None) -> tuple[str, dict[str, str]]:
    pg.create_database(name)
    env = {"RUNLENS_DB": pg.lake(name), "RUNLENS_LAKE_DATA_PATH": data_path, **(s3.env() if s3 else {})}
    return pg.lake(name), env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/rl_lake"))
    parser.add_argument("--s3", action="store_true", help="also a lake with its data on a local S3 server")
    parser.add_argument("--pages", action="store_true", help="also page first renders on every store")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--uploads", type=int, default=20, help="uploads per writer in the burst (0: no burst)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    pg = start_postgres(durable=True)
    s3 = start_s3() if args.s3 else None
    results: dict[str, object] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "sizes": {}}
    try:
        if s3:
            s3.create_bucket("runlens")
        for size in args.sizes:
            base = base_store(args.work, size)
            file_copy = args.work / f"file-{size}.duckdb"
            for suffix in ("", ".read"):
                shutil.copyfile(f"{base}{suffix}", f"{file_copy}{suffix}")
            stores: dict[str, tuple[str, dict[str, str]]] = {"file": (str(file_copy), {"RUNLENS_DB": str(file_copy)})}
            data = args.work / f"lake-data-{size}"
            shutil.rmtree(data, ignore_errors=True)
            stores["lake (local disk)"] = new_lake(pg, f"lake_{size}", str(data), None)
            if s3:
                stores["lake (S3)"] = new_lake(pg, f"lake_s3_{size}", f"s3://runlens/lake-{size}/", s3)
            row: dict[str, object] = {}
            for name, (location, env) in stores.items():
                entry: dict[str, object] = {}
                if name != "file":
                    start = time.perf_counter()
                    with environment(env):
                        copy_store(file_copy, location)
                    entry["migrate_s"] = round(time.perf_counter() - start, 1)
                files = upload_files(args.work / f"up-{size}-{len(row)}", f"up{len(row)}", 3)
                times = upload_latency(location, env, files)
                entry["upload_s"] = times
                entry["upload_median_s"] = statistics.median(times)
                if args.pages:
                    entry["pages"] = page_renders(location, env, args.work / f"pages-{size}-{len(row)}.json")
                print(json.dumps({"size": size, "store": name, **entry}), file=sys.stderr)
                row[name] = entry
            if args.uploads:
                location, env = stores["lake (local disk)"]
                row["burst"] = writers_burst(location, env, args.work / f"burst-{size}", args.writers, args.uploads)
                print(json.dumps({"size": size, "burst": row["burst"]}), file=sys.stderr)
            results["sizes"][str(size)] = row  # type: ignore[index]
    finally:
        if s3:
            s3.stop()
        pg.stop()
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Ingest throughput against DuckDB's own read_json of the same files.

``python bench/bench_ingest.py --sizes 100000 1000000 --shape default --stores lake file --work /tmp/rl_bench``
(``--shape short-tools --runs 10``: the second shape of bench/gen_logs.py; ``--nice 19`` on a shared machine;
``--per-file FILE ...``: each file alone, its floor and its ingest in fresh processes, a ratio per file)

For each size: generate the logs with bench/gen_logs.py (seeded; reused when present), then time, each in a
fresh subprocess under ``/usr/bin/time -v`` (wall, user+sys CPU of the process and its workers, peak RSS of the
largest process) with the process tree's summed RSS sampled every 0.2 s:

* ``python -m ingest --no-progress --db STORE DIR`` into each store asked for -- ``lake``: a fresh local lake
  (``ducklake:sqlite:``, the default store), ``file``: a fresh DuckDB file -- the full pipeline (read, hash,
  validate, write one transaction per file, publish);
* the floor, **per file**: in one process, ``CREATE OR REPLACE TABLE raw AS SELECT * FROM read_json(FILE, ...)``
  into a fresh DuckDB file for each file in turn (so the disk holds one file's table at a time, whatever the
  size), timed as a whole: DuckDB's C++ JSON reader doing no validation and no normalisation.

``--archive``: the ingest is given the same logs packed in one ``logs.tar.gz`` (gzip level 1, packed once, not
timed), each member streamed out of it (``ingest.archives``); the floor stays ``read_json`` of the plain files.

Machine facts (CPU model, cores, load average) are printed with the results because the timings depend on them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIME = "/usr/bin/time"


def machine() -> dict[str, object]:
    """CPU model, core count, memory and the current load average."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "mem_gb": round(mem_gb, 1),
        "python": platform.python_version(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def _tree_rss_mb(root: int) -> float:
    """Resident memory of process ``root`` and all its descendants, summed (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry.name)
        children.setdefault(int(fields.get("PPid", "0").strip() or 0), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0] or 0)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total / 1024


def timed(cmd: list[str], *, env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``cmd`` under /usr/bin/time -v; return wall_s, cpu_s (user+sys, worker processes included), max_rss_mb
    (the largest single process), tree_rss_mb (peak of the whole process tree's summed RSS, sampled every 0.2 s)
    and the load average at the start."""
    load = os.getloadavg()[0]
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        proc = subprocess.Popen(
            [TIME, "-v", "-o", tf.name, *cmd],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        peak = [0.0]
        done_event = threading.Event()

        def sample() -> None:
            while not done_event.wait(0.2):
                peak[0] = max(peak[0], _tree_rss_mb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, stderr = proc.communicate()
        done_event.set()
        sampler.join()
        report = Path(tf.name).read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-3000:]}")

    def grab(label: str) -> str:
        m = re.search(rf"{re.escape(label)}: (.+)", report)
        return m.group(1).strip() if m else "0"

    wall = 0.0
    for part in grab("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = wall * 60 + float(part)
    return {
        "wall_s": wall,
        "cpu_s": float(grab("User time (seconds)")) + float(grab("System time (seconds)")),
        "max_rss_mb": int(grab("Maximum resident set size (kbytes)")) / 1024,
        "tree_rss_mb": round(peak[0]),
        "load1": round(load, 2),
    }


def ensure_logs(work: Path, n_attempts: int, *, runs: int, shape: str = "default") -> Path:
    """The generated logs of one size and shape (generated once; a marker file says generation finished)."""
    out = work / (f"logs-{n_attempts}" if shape == "default" else f"logs-{shape}-{n_attempts}-{runs}")
    done = out / ".complete"
    if not done.exists():
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "gen_logs.py"),
                "--attempts",
                str(n_attempts),
                "--runs",
                str(runs),
                "--out",
                str(out),
                "--shape",
                shape,
            ],
            check=True,
            cwd=ROOT,
        )
        done.write_text("ok")
    return out


READ_JSON_PER_FILE = """
import duckdb, sys
con = duckdb.connect(sys.argv[1])
n = 0
for path in sys.argv[2:]:
    con.execute("CREATE OR REPLACE TABLE raw AS SELECT * FROM read_json(?, format = 'newline_delimited', "
                "union_by_name = true, maximum_object_size = 67108864, sample_size = -1)", [path])
    n += con.execute("SELECT count(*) FROM raw").fetchall()[0][0]
print(n)
"""


def packed(logs: Path, files: list[Path]) -> Path:
    """The logs in one ``logs.tar.gz`` beside them (packed once; a marker says packing finished)."""
    import tarfile

    out = logs.parent / f"{logs.name}.tar.gz"
    done = logs.parent / f"{logs.name}.tar.gz.complete"
    if not done.exists():
        with tarfile.open(out, "w:gz", compresslevel=1) as tar:
            for f in files:
                tar.add(f, f"{logs.name}/{f.name}")
        done.write_text("ok")
    return out


def _fresh(path: Path) -> None:
    """Remove a store left by an earlier run (a DuckDB file, or a lake's catalog and data folder)."""
    import shutil

    for suffix in ("", ".read", ".wal", ".files", "-wal", "-shm", ".lock", ".queue"):
        stale = Path(f"{path}{suffix}")
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink(missing_ok=True)


def _counts(location: str) -> tuple[int, int]:
    sys.path.insert(0, str(ROOT))
    import store

    with store.reader(location) as con:
        row = con.execute("SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM steps)").fetchall()[0]
    return int(row[0]), int(row[1])


def bench_size(
    work: Path,
    n_attempts: int,
    *,
    runs: int,
    keep_db: bool,
    jobs: int | None = None,
    shape: str = "default",
    stores: tuple[str, ...] = ("lake", "file"),
    nice: int = 0,
    archive: bool = False,
) -> dict[str, object]:
    """Ingest (into each store) and per-file read_json timings for one size."""
    logs = ensure_logs(work, n_attempts, runs=runs, shape=shape)
    files = sorted(logs.glob("*.jsonl"))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    prefix = ["nice", "-n", str(nice)] if nice else []
    jobs_flag = ["--jobs", str(jobs)] if jobs else []
    row: dict[str, object] = {"shape": shape, "files": len(files), "mb": round(size_mb, 1)}
    source = packed(logs, files) if archive else logs
    if archive:
        row["archive_mb"] = round(source.stat().st_size / 1e6, 1)
    raw_db = work / f"raw-{shape}-{n_attempts}.duckdb"
    _fresh(raw_db)
    raw = timed([*prefix, sys.executable, "-c", READ_JSON_PER_FILE, str(raw_db), *map(str, files)])
    _fresh(raw_db)
    row["read_json"] = raw
    for kind in stores:
        if kind == "lake":
            path = work / f"bench-{shape}-{n_attempts}.lake"
            location = f"ducklake:sqlite:{path}"
        else:
            # the default shape's file keeps its earlier name (bench_pages.py --db bench-N.duckdb)
            path = work / (f"bench-{n_attempts}.duckdb" if shape == "default" else f"bench-{shape}-{n_attempts}.duckdb")
            location = str(path)
        _fresh(path)
        ingest = timed(
            [*prefix, sys.executable, "-m", "ingest", "--no-progress", *jobs_flag, "--db", location, str(source)]
        )
        n_att, n_steps = _counts(location)
        if not keep_db:
            _fresh(path)
        row["attempts"], row["steps"] = n_att, n_steps
        row[kind] = {
            **ingest,
            "attempts_per_s": round(n_att / ingest["wall_s"]),
            "ratio_wall": round(ingest["wall_s"] / raw["wall_s"], 2),
            "ratio_cpu": round(ingest["cpu_s"] / max(raw["cpu_s"], 1e-9), 2),
        }
    return row


def per_file(work: Path, files: list[Path], *, nice: int = 0) -> list[dict[str, Any]]:
    """Each file on its own: its floor (``read_json`` into a fresh DuckDB file) and its ingest into a fresh local
    lake, each in a fresh process (so each ratio carries one process's start-up, as one upload does)."""
    prefix = ["nice", "-n", str(nice)] if nice else []
    out = []
    for f in files:
        raw_db, lake_path = work / "per-file-raw.duckdb", work / "per-file.lake"
        _fresh(raw_db)
        raw = timed([*prefix, sys.executable, "-c", READ_JSON_PER_FILE, str(raw_db), str(f)])
        _fresh(raw_db)
        _fresh(lake_path)
        ingest = timed(
            [*prefix, sys.executable, "-m", "ingest", "--no-progress", "--db", f"ducklake:sqlite:{lake_path}", str(f)]
        )
        _fresh(lake_path)
        row = {"file": f.name, "mb": round(f.stat().st_size / 1e6, 1), "read_json": raw, "lake": ingest}
        row["ratio_cpu"] = round(ingest["cpu_s"] / max(raw["cpu_s"], 1e-9), 2)
        print(json.dumps(row), file=sys.stderr)
        out.append(row)
    return out


def per_file_markdown(rows: list[dict[str, Any]]) -> str:
    """``per_file``'s results as a Markdown table."""
    out = [
        "| file | MB | ingest CPU s | ingest wall s | peak RSS MB (tree) | floor CPU s | floor wall s | ratio CPU | load1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        i, j = r["lake"], r["read_json"]
        out.append(
            f"| {r['file']} | {r['mb']} | {i['cpu_s']:.2f} | {i['wall_s']:.2f} | {i['tree_rss_mb']:.0f} | "
            f"{j['cpu_s']:.2f} | {j['wall_s']:.2f} | {r['ratio_cpu']} | {i['load1']} |"
        )
    return "\n".join(out)


def markdown(rows: list[dict[str, object]]) -> str:
    """The results as a Markdown table (one line per size, shape and store)."""
    out = [
        "| shape | attempts | steps | files | MB | store | ingest wall s | ingest CPU s | peak RSS MB (tree) "
        "| peak RSS MB (one process) | floor wall s | floor CPU s | ratio wall | ratio CPU | load1 |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        j: Any = r["read_json"]
        for kind in ("lake", "file"):
            if kind not in r:
                continue
            i: Any = r[kind]
            out.append(
                f"| {r['shape']} | {r['attempts']:,} | {r['steps']:,} | {r['files']} | {r['mb']} | {kind} | "
                f"{i['wall_s']:.1f} | {i['cpu_s']:.1f} | {i['tree_rss_mb']:.0f} | {i['max_rss_mb']:.0f} | "
                f"{j['wall_s']:.1f} | {j['cpu_s']:.1f} | {i['ratio_wall']} | {i['ratio_cpu']} | {i['load1']} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "runlens-bench")
    parser.add_argument(
        "--keep-db", action="store_true", help="keep the stores written (bench-N.duckdb, bench-SHAPE-N.lake, ...)"
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--jobs", type=int, help="passed to python -m ingest --jobs (default: its own)")
    parser.add_argument("--shape", choices=("default", "short-tools"), default="default", help="see gen_logs.py")
    parser.add_argument("--stores", nargs="+", choices=("lake", "file"), default=["lake", "file"])
    parser.add_argument("--nice", type=int, default=0, help="run the timed commands under nice -n NICE")
    parser.add_argument("--archive", action="store_true", help="ingest the logs packed in one .tar.gz")
    parser.add_argument(
        "--per-file",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="instead of --sizes: each FILE alone, its floor and its ingest into a fresh lake, each in a fresh process",
    )
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    info = machine()
    print(json.dumps(info), file=sys.stderr)
    if args.per_file:
        print(per_file_markdown(per_file(args.work, args.per_file, nice=args.nice)))
        return 0
    rows = []
    for n in args.sizes:
        rows.append(
            bench_size(
                args.work,
                n,
                runs=args.runs,
                keep_db=args.keep_db,
                jobs=args.jobs,
                shape=args.shape,
                stores=tuple(args.stores),
                nice=args.nice,
                archive=args.archive,
            )
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

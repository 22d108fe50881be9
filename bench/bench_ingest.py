"""Ingest throughput against DuckDB's own read_json of the same files.

``python bench/bench_ingest.py --sizes 10000 100000 1000000 --work /tmp/rl_bench [--json OUT.json]``

For each size: generate the logs with bench/gen_logs.py (seeded; reused when present), then time, each in a
fresh subprocess under ``/usr/bin/time -v`` (wall, user+sys CPU, peak RSS):

* ``python -m ingest --no-progress --db FRESH.duckdb DIR`` -- the full pipeline (parse, validate, write,
  publish the read snapshot);
* ``CREATE TABLE raw AS SELECT * FROM read_json('DIR/*.jsonl', ...)`` into a fresh DuckDB file -- the floor for
  this stack (DuckDB's C++ JSON reader doing no validation and no normalisation).

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


def ensure_logs(work: Path, n_attempts: int, *, runs: int) -> Path:
    """The generated logs of one size (generated once; a marker file says generation finished)."""
    out = work / f"logs-{n_attempts}"
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
            ],
            check=True,
            cwd=ROOT,
        )
        done.write_text("ok")
    return out


READ_JSON = """
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE raw AS SELECT * FROM read_json(?, format = 'newline_delimited', union_by_name = true, "
            "maximum_object_size = 67108864, sample_size = -1)", [sys.argv[2] + '/*.jsonl'])
print(con.execute("SELECT count(*) FROM raw").fetchall()[0][0])
"""


def bench_size(work: Path, n_attempts: int, *, runs: int, keep_db: bool, jobs: int | None = None) -> dict[str, object]:
    """Ingest and read_json timings for one size."""
    logs = ensure_logs(work, n_attempts, runs=runs)
    files = sorted(logs.glob("*.jsonl"))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    db = work / f"bench-{n_attempts}.duckdb"
    for stale in (db, Path(str(db) + ".read"), Path(str(db) + ".wal")):
        stale.unlink(missing_ok=True)
    jobs_flag = ["--jobs", str(jobs)] if jobs else []
    ingest = timed([sys.executable, "-m", "ingest", "--no-progress", *jobs_flag, "--db", str(db), str(logs)])
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        n_att, n_steps = con.execute("SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM steps)").fetchall()[
            0
        ]
    raw_db = work / f"raw-{n_attempts}.duckdb"
    raw_db.unlink(missing_ok=True)
    raw = timed([sys.executable, "-c", READ_JSON, str(raw_db), str(logs)])
    raw_db.unlink(missing_ok=True)
    if not keep_db:
        for f in (db, Path(str(db) + ".read")):
            f.unlink(missing_ok=True)
    return {
        "attempts": int(n_att),
        "steps": int(n_steps),
        "files": len(files),
        "mb": round(size_mb, 1),
        "ingest": ingest,
        "read_json": raw,
        "attempts_per_s": round(n_att / ingest["wall_s"]),
        "steps_per_s": round(n_steps / ingest["wall_s"]),
        "attempts_per_cpu_s": round(n_att / max(ingest["cpu_s"], 1e-9)),
        "ratio_wall": round(ingest["wall_s"] / raw["wall_s"], 2),
        "ratio_cpu": round(ingest["cpu_s"] / max(raw["cpu_s"], 1e-9), 2),
    }


def markdown(rows: list[dict[str, object]]) -> str:
    """The results as a Markdown table."""
    out = [
        "| attempts | steps | MB | ingest wall s | ingest CPU s | peak RSS MB (all processes) | attempts/s (wall) "
        "| steps/s (wall) | read_json wall s | read_json CPU s | ratio wall | ratio CPU | load1 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        i, j = r["ingest"], r["read_json"]  # type: ignore[index]
        out.append(
            f"| {r['attempts']:,} | {r['steps']:,} | {r['mb']} | {i['wall_s']:.1f} | {i['cpu_s']:.1f} | "
            f"{i['tree_rss_mb']:.0f} | {r['attempts_per_s']:,} | {r['steps_per_s']:,} | {j['wall_s']:.1f} | "
            f"{j['cpu_s']:.1f} | {r['ratio_wall']} | {r['ratio_cpu']} | {i['load1']} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "runlens-bench")
    parser.add_argument("--keep-db", action="store_true", help="keep bench-N.duckdb for bench_pages.py")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--jobs", type=int, help="passed to python -m ingest --jobs (default: its own)")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    info = machine()
    print(json.dumps(info), file=sys.stderr)
    rows = []
    for n in args.sizes:
        rows.append(bench_size(args.work, n, runs=args.runs, keep_db=args.keep_db, jobs=args.jobs))
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

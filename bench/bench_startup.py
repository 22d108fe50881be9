"""Start-up cost of the command-line entry points (issue 15) and of the app on a given store (issue 33).

    .venv/bin/python bench/bench_startup.py [--repeat 5] [--json out.json]
    .venv/bin/python bench/bench_startup.py --app STORE [--app STORE ...] [--repeat 3] [--json out.json]

Without ``--app``: runs each command ``--repeat`` times in a fresh interpreter (the median wall time is reported)
and, once, with ``-X importtime`` to list the modules that cost the most (cumulative microseconds). The commands:
``--help`` of ``python -m ingest`` and ``python -m analytics``, a 100-attempt ingest into a new database, and
``python -m analytics leaderboard --json`` on that database.

With ``--app STORE`` (a DuckDB file or a ``ducklake:`` location; the store is only read): the app's start, in a
fresh interpreter each time, as a new server's first visitor meets it: the imports, then the first run of app.py
(AppTest: the database check, the sidebar, the landing page), with the seconds of each cached read it made (the
sidebar's and the landing page's). Medians of ``--repeat`` runs, wall and CPU (all threads) seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_logs import generate  # noqa: E402

HEAVY = ("torch", "sentence_transformers", "py_irt", "pyro", "plotly", "streamlit", "sklearn", "scipy", "pandas")


def _run(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def _heavy_imports(args: list[str]) -> dict[str, float]:
    """Import milliseconds of each heavy package this command loads: the sum of the self times of its modules
    (absent packages are not listed)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=ROOT, capture_output=True, text=True)
    out: dict[str, float] = {}
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[0].isdigit():
            root = parts[2].split(".")[0]
            if root in HEAVY:
                out[root] = out.get(root, 0.0) + int(parts[0]) / 1000
    return out


APP_START = """
import json, os, sys, time
start_wall, start_cpu = time.perf_counter(), time.process_time()
os.environ["RUNLENS_DB"] = sys.argv[1]
from streamlit.testing.v1 import AppTest
import ui.common
reads = []
plain_cached = ui.common.cached
def timed(fn, **kwargs):
    t = time.perf_counter()
    try:
        return plain_cached(fn, **kwargs)
    finally:
        reads.append((fn.__qualname__, round(time.perf_counter() - t, 3)))
ui.common.cached = timed
import ui.shell
ui.shell.common.cached = timed
at = AppTest.from_file("app.py", default_timeout=1800)
imported_wall, imported_cpu = time.perf_counter(), time.process_time()
at.run()
end_wall, end_cpu = time.perf_counter(), time.process_time()
print(json.dumps({
    "imports_s": round(imported_wall - start_wall, 3),
    "first_run_s": round(end_wall - imported_wall, 3),
    "total_s": round(end_wall - start_wall, 3),
    "total_cpu_s": round(end_cpu - start_cpu, 3),
    "reads": reads,
    "problems": [str(e.value)[:200] for e in at.exception],
}))
"""


def app_start(location: str, *, repeat: int) -> dict[str, object]:
    """The app's start on ``location`` in ``repeat`` fresh interpreters: medians, and the reads of the median run."""
    runs = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", APP_START, location], cwd=ROOT, check=True, capture_output=True, text=True
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    runs.sort(key=lambda r: r["total_s"])
    median = runs[len(runs) // 2]
    keys = ("imports_s", "first_run_s", "total_s", "total_cpu_s")
    return {
        "store": location,
        **{k: statistics.median(float(r[k]) for r in runs) for k in keys},
        "runs": [{k: r[k] for k in keys} for r in runs],
        "reads_of_median_run": median["reads"],
        "problems": median["problems"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--app", action="append", help="a store whose app start to time (repeatable)")
    args = parser.parse_args(argv)
    if args.app:
        results = [app_start(location, repeat=args.repeat) for location in args.app]
        for res in results:
            reads = ", ".join(f"{name} {s:.2f}" for name, s in res["reads_of_median_run"])  # type: ignore[attr-defined]
            print(
                f"{res['store']}: {res['total_s']:.2f} s (imports {res['imports_s']:.2f}, first run "
                f"{res['first_run_s']:.2f}; CPU {res['total_cpu_s']:.2f}); reads: {reads}"
            )
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        files = generate(Path(tmp) / "logs", n_attempts=100, n_runs=2, seed=15)
        db = str(Path(tmp) / "startup.duckdb")
        commands = {
            "ingest --help": ["-m", "ingest", "--help"],
            "analytics --help": ["-m", "analytics", "--help"],
            "ingest 100 attempts": ["-m", "ingest", "--db", db, *map(str, files)],
            "analytics leaderboard --json": ["-m", "analytics", "leaderboard", "--db", db, "--json"],
        }
        rows = []
        for name, cmd in commands.items():
            if name == "ingest 100 attempts":  # a new database each time: the ingest is real, not a duplicate
                times = []
                for i in range(args.repeat):
                    fresh = str(Path(tmp) / f"startup-{i}.duckdb")
                    times.append(_run(["-m", "ingest", "--db", fresh, *map(str, files)]))
                _run(cmd)
            else:
                times = [_run(cmd) for _ in range(args.repeat)]
            heavy = _heavy_imports(cmd if name != "ingest 100 attempts" else [*cmd[:3], db + ".x", *cmd[4:]])
            rows.append(
                {
                    "command": f"python {' '.join(name.split())}",
                    "median_s": statistics.median(times),
                    "heavy_imports_ms": heavy,
                }
            )
    for r in rows:
        heavy = ", ".join(f"{k} {v:.0f}" for k, v in sorted(r["heavy_imports_ms"].items(), key=lambda kv: -kv[1]))
        print(f"{r['command']:<40} {r['median_s']:6.2f} s   {heavy or '-'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

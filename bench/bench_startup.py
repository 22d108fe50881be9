"""Start-up cost of the command-line entry points: wall time and the heaviest imports (issue 15).

    .venv/bin/python bench/bench_startup.py [--repeat 5] [--json out.json]

Runs each command ``--repeat`` times in a fresh interpreter (the median wall time is reported) and, once, with
``-X importtime`` to list the modules that cost the most (cumulative microseconds). The commands: ``--help`` of
``python -m ingest`` and ``python -m analytics``, a 100-attempt ingest into a new database, and
``python -m analytics leaderboard --json`` on that database.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
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

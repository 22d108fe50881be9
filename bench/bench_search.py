"""Transcript search times: ``python bench/bench_search.py --db DB [--repeat 5]``.

Runs a fixed set of queries (phrase hits, phrase without a hit, a long phrase, words, RE2 regex) through
``analytics.search.search`` on the database's read snapshot, each ``--repeat`` times after one warm-up, and prints
one line per query: hits, best and median wall seconds, process CPU seconds (all DuckDB threads), and the load
average when it started. The DB is made by ``bench/gen_logs.py`` + ``python -m ingest``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics.search import search  # noqa: E402
from store import reader  # noqa: E402

QUERIES = [
    ("budget week growth", "phrase"),
    ("zzqq nothing", "phrase"),
    ("video budget week growth total", "phrase"),
    ("threshold creative", "words"),
    (r"budget \d+", "regex"),
]


def main(argv: list[str] | None = None) -> int:
    """Print the timing table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with reader(args.db) as con:
        n = con.execute("SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM steps)").fetchall()[0]
        print(f"{args.db}: {n[0]:,} attempts, {n[1]:,} steps")
        for query, mode in QUERIES:
            load = os.getloadavg()[0]
            search(con, query=query, mode=mode)  # warm-up: the snapshot's pages into the OS cache
            walls, cpus = [], []
            for _ in range(args.repeat):
                w0, c0 = time.perf_counter(), time.process_time()
                res = search(con, query=query, mode=mode)
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
            print(
                f"{mode:6} {query!r:34} attempts {res.n_attempts:>9,} hits {res.n_hits:>9,} "
                f"wall best {min(walls):6.2f} median {statistics.median(walls):6.2f} s "
                f"cpu median {statistics.median(cpus):6.2f} s load1 {load:5.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

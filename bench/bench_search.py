"""Transcript search times: ``python bench/bench_search.py --db DB [--repeat 5] [--build] [--scan-only] [--mode M]``.

Runs two query sets through ``analytics.search.search`` on the database's read snapshot, each ``--repeat`` times
after one warm-up, and prints one line per query and path: hits, best and median wall seconds, process CPU seconds
(all DuckDB threads), and the load average when it started. The path is ``index`` (the search index,
``python -m analytics search-index``) or ``scan`` (``use_index=False``); for every query the two results are
compared (counts, hits, snippets) and a difference is reported and makes the exit status 1.

* ``generator``: phrases of common words (the generator's texts come from a 22-word vocabulary, so every word is
  in almost every attempt: a worst case for any word index), words and a regex;
* ``realistic``: rare strings that exist in the data: an account identifier of the tool arguments, quoted and as
  a substring.

``--build`` first (re)builds the index (``DB.search``, a file beside DB; DB itself is only read) and prints the
build's wall and CPU time and the index file's size. The DB is made by ``bench/gen_logs.py`` + ``python -m ingest``.
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

from analytics.search import SearchResult, index_coverage, search  # noqa: E402
from store import reader  # noqa: E402

QUERIES = [
    ("generator", "budget week growth", "phrase"),
    ("generator", "zzqq nothing", "phrase"),
    ("generator", "video budget week growth total", "phrase"),
    ("generator", "threshold creative", "words"),
    ("generator", r"budget \d+", "regex"),
    ("realistic", '"a123"', "phrase"),
    ("realistic", "a77", "phrase"),
]


def build(db: str) -> None:
    """Rebuild the index of ``db`` and print its cost."""
    from jobs.search_index import refresh

    load = os.getloadavg()[0]
    c0 = time.process_time()
    done = refresh(db, rebuild=True)
    print(
        f"index build: {done.attempts_added:,} attempts, {done.rows:,} texts, {done.text_chars:,} characters; "
        f"wall {done.seconds:.1f} s, cpu (this process, all DuckDB threads) {time.process_time() - c0:.1f} s, "
        f"load1 {load:.1f}; index file {done.index_bytes / 1e6:,.0f} MB beside a DB file of "
        f"{os.path.getsize(db) / 1e6:,.0f} MB"
    )


def _timed(con: object, query: str, mode: str, *, use_index: bool, repeat: int) -> tuple[SearchResult, str]:
    load = os.getloadavg()[0]
    search(con, query=query, mode=mode, use_index=use_index)  # type: ignore[arg-type]  # warm-up
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        res = search(con, query=query, mode=mode, use_index=use_index)  # type: ignore[arg-type]
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return res, (
        f"wall best {min(walls):6.2f} median {statistics.median(walls):6.2f} s "
        f"cpu median {statistics.median(cpus):6.2f} s load1 {load:5.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    """Print the timing table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--build", action="store_true", help="(re)build the index in DB first (writes DB)")
    parser.add_argument("--scan-only", action="store_true", help="time only the scan")
    parser.add_argument("--mode", action="append", help="only queries of this mode (repeatable; default all)")
    args = parser.parse_args(argv)
    if args.build:
        build(args.db)
    status = 0
    with reader(args.db) as con:
        n = con.execute("SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM steps)").fetchall()[0]
        coverage = index_coverage(con)
        state = "no index" if coverage is None else f"index: {coverage[1]:,} attempts not covered"
        print(f"{args.db}: {n[0]:,} attempts, {n[1]:,} steps; {state}")
        for qset, query, mode in QUERIES:
            if args.mode and mode not in args.mode:
                continue
            paths = [False] if args.scan_only else [True, False]
            results = []
            for use_index in paths:
                res, times = _timed(con, query, mode, use_index=use_index, repeat=args.repeat)
                results.append(res)
                print(
                    f"{qset:9} {mode:6} {query!r:34} {'index' if use_index else 'scan':5} "
                    f"attempts {res.n_attempts:>9,} hits {res.n_hits:>9,} {times}",
                    flush=True,
                )
            a, b = results[0], results[-1]
            if (a.n_attempts, a.n_hits) != (b.n_attempts, b.n_hits) or not a.hits.equals(b.hits):
                print(f"DIFFERENT results with and without the index for {query!r}")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Transcript search times: ``python bench/bench_search.py --db DB [--repeat 5] [--build] [--scan-only] [--mode M]
[--fresh] [--query Q]``.

Runs the queries below through ``analytics.search.search`` on the database's read snapshot, each ``--repeat``
times after one warm-up, and prints one line per query and path: hits, best and median wall seconds, process CPU
seconds (all DuckDB threads), and the load average when it started. The path is ``index`` (the search index,
``python -m analytics search-index``) or ``scan`` (``use_index=False``); for every query the two results are
compared (counts, hits, snippets) and a difference is reported and makes the exit status 1. ``--fresh`` also
times each indexed query as the first search of a new process (``first``: opening the store, attaching the
index's segments and the search; Python's imports excluded).

The generator's texts (bench/gen_logs.py) come from a 22-word vocabulary, so every word is in almost every text:
the classes below are ``word`` (one token: the postings answer alone), ``phrase`` (several tokens: candidates from
the postings, checked on the text; with only common words that is every text, the worst case of any word index),
``identifier`` (an account id of the tool arguments, bare, quoted, inside a JSON pair, or a part of one; a tool
name) and ``absent``. (A tool's name is not searched: only answers, contents, arguments, results, errors.)

``--build`` first (re)builds the index (``DB.search/``, a folder beside DB; DB itself is only read) and prints the
build's wall and CPU time, the peak RSS of this process, the postings and vocabulary and the index's size beside
the characters it indexes. The DB is made by ``bench/gen_logs.py`` + ``python -m ingest``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics.search import SearchResult, index_coverage, search  # noqa: E402
from store import reader  # noqa: E402

QUERIES = [
    ("word", "budget", "phrase"),
    ("word", "threshold creative", "words"),
    ("phrase", "budget week growth", "phrase"),
    ("phrase", "video budget week growth total", "phrase"),
    ("absent", "zzqq nothing", "phrase"),
    ("identifier", "a123", "phrase"),
    ("identifier", '"a123"', "phrase"),
    ("identifier", '"account_id":"a123"', "phrase"),
    ("identifier", "a77", "phrase"),
    ("identifier", "account_id", "phrase"),
    ("identifier", "t000123", "phrase"),
    ("regex", r"budget \d+", "regex"),
]


def build(db: str) -> None:
    """Rebuild the index of ``db`` and print its cost."""
    from jobs.search_index import refresh

    load = os.getloadavg()[0]
    c0 = time.process_time()
    done = refresh(db, rebuild=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"index build: {done.attempts_added:,} attempts, {done.text_chars:,} characters indexed, "
        f"{done.rows:,} postings, {done.vocabulary:,} tokens, {done.segments} segment(s); "
        f"wall {done.seconds:.1f} s, cpu (this process, all DuckDB threads) {time.process_time() - c0:.1f} s, "
        f"peak RSS {rss:.2f} GB, load1 {load:.1f}; index {done.index_bytes / 1e6:,.0f} MB "
        f"({done.index_bytes / max(done.text_chars, 1):.2f} bytes per character indexed) beside a DB file of "
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


def first_search(db: str, query: str, mode: str) -> dict[str, float]:
    """The first search of this process: open the store, attach the index, search (imports already done)."""
    w0, c0 = time.perf_counter(), time.process_time()
    with reader(db) as con:
        res = search(con, query=query, mode=mode)
    return {
        "wall": time.perf_counter() - w0,
        "cpu": time.process_time() - c0,
        "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        "n_hits": res.n_hits,
        "indexed": res.is_indexed,
    }


def _fresh(db: str, query: str, mode: str) -> str:
    cmd = [sys.executable, __file__, "--db", db, "--one", json.dumps([query, mode])]
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return f"first (new process) wall {out['wall']:6.2f} cpu {out['cpu']:6.2f} s peak RSS {out['rss_gb']:.2f} GB"


def _same(a: SearchResult, b: SearchResult) -> bool:
    """The scan's hits listed; its counts when the indexed search counted everything, else a lower bound."""
    if not a.hits.equals(b.hits):
        return False
    if a.is_count_exact:
        return (a.n_attempts, a.n_hits) == (b.n_attempts, b.n_hits)
    return a.n_attempts <= b.n_attempts and a.n_hits <= b.n_hits


def main(argv: list[str] | None = None) -> int:
    """Print the timing table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--build", action="store_true", help="(re)build the index beside DB first")
    parser.add_argument("--scan-only", action="store_true", help="time only the scan")
    parser.add_argument("--no-scan", action="store_true", help="time only the index (no comparison)")
    parser.add_argument("--fresh", action="store_true", help="also time each query as a new process's first")
    parser.add_argument("--mode", action="append", help="only queries of this mode (repeatable; default all)")
    parser.add_argument("--kind", action="append", help="only queries of this class: word, phrase, identifier...")
    parser.add_argument("--query", action="append", help="only this query of the list (repeatable)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(first_search(args.db, *json.loads(args.one))))
        return 0
    if args.build:
        build(args.db)
    status = 0
    with reader(args.db) as con:
        n = con.execute("SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM steps)").fetchall()[0]
        coverage = index_coverage(con)
        state = "no index" if coverage is None else f"index: {coverage[1]:,} attempts not covered"
        print(f"{args.db}: {n[0]:,} attempts, {n[1]:,} steps; {state}")
        for qset, query, mode in QUERIES:
            if (args.mode and mode not in args.mode) or (args.kind and qset not in args.kind):
                continue
            if args.query and query not in args.query:
                continue
            paths = [False] if args.scan_only else [True] if args.no_scan else [True, False]
            results = []
            for use_index in paths:
                res, times = _timed(con, query, mode, use_index=use_index, repeat=args.repeat)
                if use_index and args.fresh:
                    times += " " + _fresh(args.db, query, mode)
                results.append(res)
                path = "index" if res.is_indexed else "scan"
                counted = "=" if res.is_count_exact else ">="
                about = f" (about {res.n_attempts_estimate:,})" if res.n_attempts_estimate is not None else ""
                print(
                    f"{qset:10} {mode:6} {query!r:32} {path:5} attempts {counted}{res.n_attempts:,}{about} "
                    f"hits {counted}{res.n_hits:,} checked {res.n_checked:,} {times}",
                    flush=True,
                )
            a, b = results[0], results[-1]
            if not _same(a, b):
                print(f"DIFFERENT results with and without the index for {query!r}")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

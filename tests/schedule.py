"""The order test files are handed to the two workers of ``bash run.sh test`` (``-n 2 --dist loadfile
--no-loadscope-reorder``): longest first.

Each worker runs a file whole, and pytest-xdist's own order puts the files with the most tests first, so the long
files of few tests (the browser tests, the writers' concurrency tests) came last: the run ended on one of them while
the other worker had nothing left. Longest first, the short files fill the end on both workers.

``FILE_SECONDS``: each listed file's seconds (setup, call and teardown of its tests) on a quiet two-core machine, from
the README command's run (``pytest ... --junitxml`` or the per-file table this conftest prints). Only the order they
give matters: refresh them when a file's time changes by more than a few tens of seconds. A file not listed comes
after the listed ones, in pytest-xdist's order (most tests first).
"""

from __future__ import annotations

from collections.abc import Sequence

FILE_SECONDS: dict[str, float] = {
    # the README run of 2026-11-28 19:57-20:18 UTC (pytest 21:27 with other work beside, all passed): its slowest
    # files as measured (test_browser_history.py since cut to one visit a page: about 60); the others from the runs
    # before
    "test_bench_smoke.py": 62,
    "test_browser_pages.py": 92,
    "test_aggregates.py": 126,
    "test_search_index.py": 105,
    "test_browser_tables.py": 94,
    "test_browser_history.py": 60,
    "test_clusters.py": 114,
    "test_browser_links.py": 70,
    "test_browser_tables_uploaded.py": 66,
    "test_lake_concurrency.py": 67,
    "test_scale_equal.py": 80,
    "test_lake_local.py": 75,
    "test_judge_counts.py": 52,
    "test_browser_plaintext.py": 49,
    "test_lake.py": 52,
    "test_reliability_crash.py": 41,
    "test_sql_console.py": 48,
    "test_leaderboard_codes.py": 40,
    "test_page_sql.py": 33,
    "test_otlp_split_files.py": 40,
    "test_inspect_variants.py": 34,
    "test_lake_pages.py": 40,
    "test_ingest_batches.py": 35,
    "test_ingest_archives.py": 35,
    "test_pages.py": 35,
    "test_scale_check.py": 37,
    "test_browser_tmf.py": 33,
    "test_errors_review_reads.py": 25,
    "test_ingest_batch_sizes.py": 25,
    "test_irt_swebench.py": 17,
    "test_browser_failure_analysis.py": 15,
    "test_browser_drilldown.py": 15,
    "test_browser_leaderboard.py": 15,
    "test_browser_offline.py": 15,
    "test_browser_upload_budget.py": 15,
    "test_gem_browser.py": 15,
}


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(nodeids: Sequence[str]) -> list[int]:
    """The indices of ``nodeids`` (in collection order) with whole files moved: the files of ``FILE_SECONDS`` first,
    longest first, then the others, most tests first; the order within a file, and between equals, kept."""
    first: dict[str, int] = {}
    count: dict[str, int] = {}
    for i, nodeid in enumerate(nodeids):
        name = file_of(nodeid)
        first.setdefault(name, i)
        count[name] = count.get(name, 0) + 1

    def key(i: int) -> tuple[int, float, int]:
        name = file_of(nodeids[i])
        base = name.rsplit("/", 1)[-1]
        if base in FILE_SECONDS:
            return (0, -FILE_SECONDS[base], first[name])
        return (1, -count[name], first[name])

    return sorted(range(len(nodeids)), key=lambda i: (*key(i), i))

"""Where an indexed search's seconds go: ``python bench/profile_search.py DB QUERY [QUERY ...]``.

Opens DB once (prints its cost), then searches each QUERY twice in that process (a ``words:`` prefix: words mode;
otherwise phrase) and prints the second, warm search: process CPU and wall seconds, the attempts found and checked,
the peak RSS so far, and every statement analytics/search/load.py ran, timed (process CPU, all DuckDB threads; wall)
and labelled by the first line of its SQL file, heaviest first; then the CPU outside them (pandas, Python).
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analytics import search as sr  # noqa: E402
from analytics.search import load as search_load  # noqa: E402
from store import reader  # noqa: E402

RECORDS: list[tuple[str, float, float]] = []


def _timed(fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
    def timed(con: Any, sql: str, *args: Any, **kwargs: Any) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn(con, sql, *args, **kwargs)
        text = " ".join(str(sql).split())
        RECORDS.append((f"{kind}: {text[:80]}", time.process_time() - c0, time.perf_counter() - w0))
        return out

    return timed


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    search_load._run = _timed(search_load._run, "frame")  # type: ignore[assignment]
    search_load.query_rows = _timed(search_load.query_rows, "rows")  # type: ignore[assignment]
    c0, w0 = time.process_time(), time.perf_counter()
    with reader(sys.argv[1]) as con:
        print(f"open: {time.process_time() - c0:.2f} CPU s, {time.perf_counter() - w0:.2f} s wall")
        for arg in sys.argv[2:]:
            mode = "words" if arg.startswith("words:") else "phrase"
            query = arg.removeprefix("words:")
            for _ in range(2):
                RECORDS.clear()
                c0, w0 = time.process_time(), time.perf_counter()
                result = sr.search(con, query=query, mode=mode)
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
            print(
                f"== {query!r} ({mode}) warm {cpu:.2f} CPU s, {wall:.2f} s wall; attempts {result.n_attempts:,} "
                f"(estimate {result.n_attempts_estimate}), checked {result.n_checked:,}; peak RSS {rss:.2f} GB"
            )
            totals: dict[str, list[float]] = {}
            for label, c, w in RECORDS:
                t = totals.setdefault(label, [0, 0.0, 0.0])
                t[0], t[1], t[2] = t[0] + 1, t[1] + c, t[2] + w
            for label, (n, c, w) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
                if c >= 0.01 or w >= 0.05:
                    print(f"   {c:6.2f} CPU s {w:6.2f} s wall  x{int(n):<3d} {label}")
            print(f"   {cpu - sum(t[1] for t in totals.values()):6.2f} CPU s outside the statements")


if __name__ == "__main__":
    main()

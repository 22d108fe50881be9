"""The Leaderboard's and Progress's analytics calls in a fresh process: CPU seconds of the imports, of the first and
second ``lb.leaderboard`` call and of the first and second ``prog.progress_view`` call, whether scipy.special was
imported, and with ``--profile`` the cProfile of each first call (cumulative, top 30).

``python bench/bench_page_calls.py --db ducklake:sqlite:DIR/store.lake [--benchmark bench-0] [--profile]``

Run it once per tree (an exported old tree and this one), alternated: the first call of a fresh process is what a
server's first visitor pays when the module imports are done in it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _timed(fn, profile: bool) -> tuple[float, str]:  # noqa: ANN001 -- a call without arguments
    prof = cProfile.Profile() if profile else None
    start = time.process_time()
    if prof is not None:
        prof.enable()
    fn()
    if prof is not None:
        prof.disable()
    spent = time.process_time() - start
    if prof is None:
        return spent, ""
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(30)
    return spent, text.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--benchmark", default="bench-0")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    start = time.process_time()
    import store as rdb
    from analytics import leaderboard as lb
    from analytics import progress as prog
    from store import RunFilter

    out: dict[str, object] = {"imports_cpu_s": round(time.process_time() - start, 3)}
    profiles = []
    with rdb.reader(args.db) as con:

        def board() -> None:
            lb.leaderboard(con, RunFilter(benchmark=args.benchmark), slices=("all", "level"))

        def progress() -> None:
            prog.progress_view(con, benchmark=args.benchmark)

        for name, fn in (("leaderboard", board), ("progress_view", progress)):
            first, text = _timed(fn, args.profile)
            second, _ = _timed(fn, False)
            out[f"{name}_cpu_s"] = [round(first, 3), round(second, 3)]
            profiles.append(text)
    out["scipy_special_imported"] = "scipy.special" in sys.modules
    print(json.dumps(out))
    for text in profiles:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

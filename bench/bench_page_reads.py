"""CPU seconds of the reads behind the first render of the sidebar, the SQL page, the version diff, the Errors and
Review pages and the drilldown's steps, on one store, with the code of one checkout (issue 33).

    python bench/bench_page_reads.py --db STORE [--benchmark bench-0] [--json OUT.json]
    python bench/bench_page_reads.py --sign-flip 6667 20000 66667
    python bench/bench_page_reads.py --db STORE --profile views/diff.py views/errors.py   # where a page's time goes

Each read runs on a reader of the store, best of three by CPU seconds (all threads of the process; on a shared
machine wall time is inflated by other work, CPU time much less), after SciPy is imported as the app does before any
page. Run the same file from another checkout (its ``bench/`` folder) to compare code.

``--sign-flip N ...``: the gate's exact sign-flip tail (``compare._exact_tail``) on N seeded per-task differences of
three-sample pass rates, the shape of one pair of runs with N tasks.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _best(fn: Callable[[], Any], n: int = 3) -> dict[str, float]:
    best: tuple[float, float] | None = None
    for _ in range(n):
        cpu, wall = time.process_time(), time.perf_counter()
        fn()
        took = (time.process_time() - cpu, time.perf_counter() - wall)
        best = took if best is None or took[0] < best[0] else best
    assert best is not None
    return {"cpu_s": round(best[0], 3), "wall_s": round(best[1], 3)}


def page_reads(db: str, benchmark: str) -> dict[str, dict[str, float]]:
    import scipy.stats  # noqa: F401 -- imported by the app before any page: not counted

    import analytics.ppi  # noqa: F401
    import store as rdb
    from analytics import catalog as cat
    from analytics import diff as rd
    from analytics import gate
    from analytics import review as rv
    from analytics import sql_console as sb

    out: dict[str, dict[str, float]] = {}
    with rdb.open(db).reader() as con:
        flt = rdb.RunFilter(benchmark=benchmark)
        pair = rd.default_pair(rd.run_pairs(con, benchmark=benchmark))
        assert pair is not None, f"{benchmark} has fewer than two runs"
        a, b = pair
        out["sidebar: catalog"] = _best(lambda: cat.catalog(con))
        counts = getattr(cat, "filtered_run_count", None) or cat.filtered_counts  # the older checkout's count
        out["sidebar: the view's counts"] = _best(lambda: counts(con, flt))
        out["sql: schema browser"] = _best(lambda: sb.schema_objects(con), n=1)
        out["diff: compare_runs"] = _best(lambda: rd.compare_runs(con, run_a=a, run_b=b, basis="sample0"))
        out["diff: sequential gate"] = _best(lambda: gate.gate(con, baseline=a, candidate=b, sequential=True))
        out["review: judge's corrected figures"] = _best(lambda: rv.judge_corrections(con, flt), n=1)
        if hasattr(gate, "changes_of"):  # the page's diff, gate and task changes (older checkouts lack it)

            def page_diff() -> Any:
                return gate.changes_of(gate.diff_and_gate(con, run_a=a, run_b=b, basis="sample0"))

            out["diff: the page's diff, gate and changes"] = _best(page_diff)
        out["drilldown: a page of steps with long results"] = _steps_reads(con, b)
        out["drilldown: the first render's reads"] = _best(_drilldown_first(con, b))
        from analytics import errors as er

        out["errors: failed attempts behind a bar"] = _best(lambda: er.error_attempts(con, run_id=b))
        out["errors/review: current reviews"] = _best(lambda: rv.current_reviews(con, flt))
        out["review: failed queue"] = _best(lambda: rv.review_queue(con, flt, queue="failed", reviewer="me"))
        out["errors/review: agreement"] = _best(lambda: rv.agreement(con, flt), n=1)
    return out


def _drilldown_first(con: Any, run: str) -> Callable[[], Any]:
    """The reads of the drilldown's first render of the run's attempt with the most steps, on one reader (the page
    opens a reader per cached call besides): this checkout's, or the former set when it has no ``task_attempts``
    (the panels read at first render: judge verdicts, findings, reviews, the other runs, the failed neighbours)."""
    from analytics import rules
    from analytics import trajectory as tr
    from store import query_rows

    task, sample, attempt_id, bench = query_rows(
        con,
        "SELECT a.task_id, a.sample, a.attempt_id, r.benchmark FROM attempts a JOIN runs r USING (run_id) "
        "WHERE a.run_id = ? ORDER BY a.n_steps DESC, a.attempt_id LIMIT 1",
        [run],
    )[0]

    def first() -> None:
        tr.runs_of(con)
        tr.task_marks_of(con, run_id=run)
        if hasattr(tr, "task_attempts"):
            shown = tr.task_attempts(con, run_id=run, task_id=task)[sample]
            reference = tuple(shown["reference_trajectory"] or ())
            tr.alignment_rows(tr.tool_calls_of(con, attempt_id=attempt_id), reference)
        else:
            from analytics import review as rv

            tr.attempts_of(con, run_id=run, task_id=task)
            tr.failed_around(con, run_id=run, task_id=task, sample=sample)
            tr.runs_with_task(con, benchmark=bench, task_id=task)
            d = tr.attempt_detail(con, run_id=run, task_id=task, sample=sample)
            assert d is not None
            tr.judge_verdicts_of(con, attempt_id=attempt_id)
            tr.alignment_frame(con, attempt_id=attempt_id, reference=tuple(d["reference_trajectory"] or ()))
            rules.attempt_findings(con, attempt_id=attempt_id)
            rv.reviews_of(con, attempt_id=attempt_id)
        tr.steps_page(con, attempt_id=attempt_id, offset=0, limit=25)

    return first


def _steps_reads(con: Any, run: str) -> dict[str, float]:
    """``trajectory.steps_page`` of the run's first three attempts that have a long step result (texts looked up by
    hash), best of three each; the figure is the slowest of the three."""
    from analytics import trajectory as tr
    from store import query_rows

    rows = query_rows(
        con,
        "SELECT DISTINCT s.attempt_id FROM steps s SEMI JOIN (SELECT attempt_id FROM attempts WHERE run_id = ?) a "
        "USING (attempt_id) WHERE s.result_hash IS NOT NULL ORDER BY 1 LIMIT 3",
        [run],
    )

    def page(attempt_id: int) -> Callable[[], Any]:
        return lambda: tr.steps_page(con, attempt_id=attempt_id, offset=0, limit=200)

    took = [_best(page(int(r[0]))) for r in rows]
    return max(took, key=lambda t: t["cpu_s"]) if took else {"cpu_s": float("nan"), "wall_s": float("nan")}


def profile_pages(db: str, pages: list[str], top: int = 40) -> None:
    """cProfile of each page's first render (AppTest, the data cache cleared, after one bootstrap run as in
    bench_pages.py), printed by cumulative time, the project's functions only. The profiler runs in the script's
    own thread (AppTest runs a page in another thread than the caller's); its times are wall times."""
    import cProfile
    import io
    import os
    import pstats

    import streamlit as st
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.testing.v1 import AppTest

    from bench.bench_pages import PAGES, one_attempt

    current: dict[str, cProfile.Profile] = {}
    run_script = script_runner.ScriptRunner._run_script

    def profiled(self: Any, *args: Any, **kwargs: Any) -> Any:
        prof = current.get("profile")
        if prof is None:
            return run_script(self, *args, **kwargs)
        prof.enable()
        try:
            return run_script(self, *args, **kwargs)
        finally:
            prof.disable()

    script_runner.ScriptRunner._run_script = profiled  # type: ignore[method-assign]
    os.environ["RUNLENS_DB"] = db
    AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800).run()
    for page in pages:
        st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
        if page == "views/drilldown.py":
            for key, value in one_attempt(db).items():  # type: ignore[arg-type]  # a location as a string
                at.query_params[key] = value
        if page != PAGES[0]:
            at.switch_page(page)
        current["profile"] = cProfile.Profile()
        cpu = time.process_time()
        at.run()
        took = time.process_time() - cpu
        prof = current.pop("profile")
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(r"(analytics|views|ui|store)/", top)
        print(f"=== {page}: first render {took:.2f} CPU s (profiled)\n{text.getvalue()}")


def sign_flip(sizes: list[int]) -> dict[str, dict[str, float]]:
    import numpy as np

    from analytics import compare

    rng = np.random.default_rng(33)
    out = {}
    for n in sizes:
        d = (rng.binomial(3, 0.5, n) - rng.binomial(3, 0.52, n)) / 3
        w = compare._lattice(d[np.abs(d) > 1e-12])
        assert w is not None
        out[f"{n} tasks ({w.size} non-zero)"] = _best(functools.partial(compare._exact_tail, w))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a DuckDB file or a ducklake: location (only read)")
    parser.add_argument("--benchmark", default="bench-0")
    parser.add_argument("--sign-flip", type=int, nargs="+", metavar="N")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--profile", nargs="+", metavar="PAGE", help="instead: cProfile each page's first render (views/diff.py ...)"
    )
    args = parser.parse_args(argv)
    if args.profile:
        profile_pages(args.db, args.profile)
        return 0
    result: dict[str, Any] = {}
    if args.db:
        result["reads"] = page_reads(args.db, args.benchmark)
    if args.sign_flip:
        result["sign_flip_tail"] = sign_flip(args.sign_flip)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

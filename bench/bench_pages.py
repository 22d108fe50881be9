"""First-render time of every page (AppTest), the drilldown of one attempt, the SQL console's Table 2 query,
and a browser timing of the leaderboard.

``python bench/bench_pages.py --db /tmp/runlens-bench/bench-100000.duckdb [--browser] [--json OUT.json]``

``--pages`` names view files, each with its link's parameters if any (``"views/search.py?q=budget&mode=words"``:
the Search page's first render with that query, through the search index when the store has one).

*first* is the page's first render in a server that has already started (the app's bootstrap ran once) but whose
data cache is empty -- what the first visitor after an ingest sees, since new data changes the cache key.
*warm* is a rerun of the same session (cached aggregates). Wall and CPU (process time, all threads) are both
recorded: on a shared machine wall time is inflated by other processes, CPU time much less so.

The pages timed start no background job: ``RUNLENS_AUTO_FIT=0`` is set for them and for the browser's server,
whatever the environment says. Otherwise the Progress page's first visit would start an IRT fit (and the Failure
clusters page its job) in a process that opens a writer on the store being measured, migrating it and storing
the fit there, and its CPU would run beside the timed renders. Only ``--irt`` writes (a fit it times, stored).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = [
    "views/leaderboard.py",
    "views/errors.py",
    "views/tmf.py",
    "views/progress.py",
    "views/drilldown.py",
    "views/diff.py",
    "views/gem.py",
    "views/sql.py",
    "views/upload.py",
]


def _clock() -> tuple[float, float]:
    """Wall time, and CPU time of this process plus its finished children (the SQL sandbox runs in a worker)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), time.process_time() + kids.ru_utime + kids.ru_stime


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return round(wall - start[0], 3), round(cpu - start[1], 3)


def one_attempt(db: Path) -> dict[str, str]:
    """Deep-link parameters of the attempt with the most steps (the drilldown's worst case)."""
    import store as rdb

    with rdb.reader(db) as con:
        run, task, sample = rdb.query_rows(
            con, "SELECT run_id, task_id, sample FROM attempts ORDER BY n_steps DESC, attempt_id LIMIT 1"
        )[0]
    return {"run": str(run), "task": str(task), "sample": str(sample)}


def render_pages(db: Path, pages: list[str]) -> list[dict[str, object]]:
    """AppTest first and warm render of each page (data cache cleared before each first render)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["RUNLENS_DB"] = str(db)
    boot = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    start = _clock()
    boot.run()  # bootstrap (cache_resource) once, as a running server has
    boot_wall, boot_cpu = _since(start)
    out = []
    for page in pages:
        st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
        path, _, link = page.partition("?")  # a page with its link's parameters: views/search.py?q=budget&mode=words
        for key, value in parse_qsl(link):
            at.query_params[key] = value
        if path == "views/drilldown.py" and not link:
            for key, value in one_attempt(db).items():
                at.query_params[key] = value
        if path != PAGES[0]:
            at.switch_page(path)
        start = _clock()
        at.run()
        first = _since(start)
        start = _clock()
        at.run()
        warm = _since(start)
        problems = [str(e.value)[:200] for e in at.exception] + [str(e.value)[:200] for e in at.error]
        out.append(
            {
                "page": page,
                "first_wall_s": first[0],
                "first_cpu_s": first[1],
                "warm_wall_s": warm[0],
                "warm_cpu_s": warm[1],
                "problems": problems,
            }
        )
        print(json.dumps(out[-1]), file=sys.stderr)
    out.insert(
        0,
        {
            "page": "(app bootstrap, once per server)",
            "first_wall_s": boot_wall,
            "first_cpu_s": boot_cpu,
            "warm_wall_s": None,
            "warm_cpu_s": None,
            "problems": [],
        },
    )
    return out


def drilldown_queries(db: Path, *, repeats: int = 5) -> dict[str, float]:
    """The per-attempt analytics calls of the drilldown page, uncached (median of ``repeats``): the run's
    attempt list, the header, the first page of steps, the alignment with the reference and the findings."""
    import store as rdb
    from analytics import rules
    from analytics import trajectory as tr

    link = one_attempt(db)
    sample = int(link["sample"])
    walls, cpus = [], []
    for _ in range(repeats):
        start = _clock()
        with rdb.reader(db) as con:
            tr.attempts_of(con, run_id=link["run"])
            detail = tr.attempt_detail(con, run_id=link["run"], task_id=link["task"], sample=sample)
            assert detail is not None
            attempt_id = int(detail["attempt_id"])
            tr.steps_page(con, attempt_id=attempt_id)
            tr.alignment_frame(con, attempt_id=attempt_id, reference=tuple(detail.get("reference_trajectory") or ()))
            rules.attempt_findings(con, attempt_id=attempt_id)
        wall, cpu = _since(start)
        walls.append(wall)
        cpus.append(cpu)
    return {"wall_s": sorted(walls)[len(walls) // 2], "cpu_s": sorted(cpus)[len(cpus) // 2]}


def sql_table2(db: Path) -> dict[str, object]:
    """The SQL console's AD-Bench Table 2 query (queries/ad_bench_table2.sql) through the sandbox, as shipped and
    with its filter pointed at a generated benchmark (``bench-0``, all dates) so it aggregates real rows."""
    from analytics import sql_console as sb

    shipped = (ROOT / "queries" / "ad_bench_table2.sql").read_text(encoding="utf-8")
    variants = {
        "shipped": shipped,
        "bench-0": shipped.replace("benchmark = 'ad-bench' AND eval_date = DATE '2026-01-15'", "benchmark = 'bench-0'"),
    }
    out: dict[str, object] = {}
    for name, sql in variants.items():
        start = _clock()
        outcome = sb.try_query(sql, db=db)
        wall, cpu = _since(start)
        rows = outcome.result.n_rows if outcome.result is not None else None
        out[name] = {"wall_s": wall, "cpu_s": cpu, "rows": rows, "error": outcome.error}
    return out


def irt_fit(db: Path, *, benchmark: str = "bench-0") -> dict[str, object]:
    """Time a fresh 1PL fit of one benchmark with the shipped defaults (analytics/irt.py; it writes the fit)."""
    import store as rdb
    from jobs.irt import fit_and_store

    with rdb.writer(db) as con:
        for table in ("irt_abilities", "irt_items", "irt_fits"):  # force a real fit, not the cached one
            con.execute(
                f"DELETE FROM {table} WHERE fit_key IN (SELECT fit_key FROM irt_fits WHERE benchmark = ?)", [benchmark]
            )
        n_obs = rdb.query_rows(con, "SELECT count(*) FROM v_attempts WHERE benchmark = ?", [benchmark])[0][0]
        start = _clock()
        fit = fit_and_store(con, benchmark=benchmark)
        wall, cpu = _since(start)
    return {
        "benchmark": benchmark,
        "observations": int(n_obs),
        "wall_s": wall,
        "cpu_s": cpu,
        "reported_fit_s": round(float(getattr(fit, "seconds", 0.0) or 0.0), 3),
    }


def browser_leaderboard(db: Path) -> dict[str, float]:
    """Seconds until the leaderboard's table is drawn in Chromium: first visit (server just started), then a
    second visit in a new tab (new session, warm data cache)."""
    from tests.browser_support import chromium_page, streamlit_server

    out = {}
    with streamlit_server(db, timeout_s=600) as url, chromium_page() as page:
        for label in ("first_visit_s", "second_visit_s"):
            start = time.perf_counter()
            page.goto(url + "/leaderboard", timeout=600_000)  # type: ignore[attr-defined]
            page.wait_for_selector("[data-testid='stDataFrame']", timeout=600_000)  # type: ignore[attr-defined]
            out[label] = round(time.perf_counter() - start, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a DuckDB file, a Parquet folder or a ducklake: location")
    parser.add_argument("--pages", nargs="+", default=PAGES)
    parser.add_argument("--browser", action="store_true", help="also time the leaderboard in Chromium")
    parser.add_argument(
        "--irt", action="store_true", help="also time a 1PL IRT fit of bench-0 (writes the fit: the only writer)"
    )
    parser.add_argument("--skip-pages", action="store_true", help="only the drilldown, SQL, browser and IRT timings")
    parser.add_argument("--pages-only", action="store_true", help="only the pages (no drilldown calls, no SQL query)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    os.environ["RUNLENS_AUTO_FIT"] = "0"  # no page starts a job that would write to the store it times
    result: dict[str, object] = {"db": str(args.db), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    result["pages"] = [] if args.skip_pages else render_pages(args.db, args.pages)
    if not args.pages_only:
        result["drilldown_queries"] = drilldown_queries(args.db)
        result["sql_table2"] = sql_table2(args.db)
    if args.browser:
        result["browser_leaderboard"] = browser_leaderboard(args.db)
    if args.irt:
        result["irt_fit"] = irt_fit(args.db)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

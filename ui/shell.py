"""The shared chrome of every page: database bootstrap, demo banner, global filters kept in the URL.

app.py draws it before running the chosen page. A page that Streamlit runs without app.py (its legacy
multipage mode; see ``ui.common.page_setup``) draws it itself, so every page always has it.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import streamlit as st

from analytics import catalog as cat
from analytics import db as rdb
from ui import common


@st.cache_resource(show_spinner="Preparing the database (first start loads the demo dataset)...")
def _bootstrap(path: str) -> None:
    """Create the database, and load the demo dataset when it holds no runs."""
    if rdb.is_parquet_folder(Path(path)):
        return  # an exported Parquet folder is read-only (docs/scale.md)
    current = False
    if rdb.snapshot_path(Path(path)).exists():
        # Read the published snapshot: opening a writer would republish it (a full copy of the database)
        # on every server start. Only an older schema needs the writer (which migrates and republishes).
        with rdb.reader(path) as con:
            current = rdb.schema_version(con) >= rdb.latest_version()
            empty = current and rdb.query_rows(con, "SELECT count(*) FROM runs")[0][0] == 0
    if not current:
        with rdb.writer(path) as con:
            empty = rdb.query_rows(con, "SELECT count(*) FROM runs")[0][0] == 0
    if empty and not os.environ.get("RUNLENS_SKIP_DEMO"):
        from data.demo.build import load_demo

        load_demo(path)


def _init_filters_from_url(catalog: cat.Catalog) -> None:
    ss = st.session_state
    qp = st.query_params
    ss.flt_init = True
    bench = qp.get("benchmark")
    ss.flt_benchmark = bench if bench in catalog.benchmarks else (catalog.benchmarks[0] if catalog.benchmarks else None)
    ss.flt_agents = [a for a in (qp.get("agents") or "").split(",") if a]
    try:
        ss.flt_dates = tuple(dt.date.fromisoformat(qp[k]) for k in ("from", "to") if qp.get(k))
    except ValueError:
        ss.flt_dates = ()


def _sidebar(catalog: cat.Catalog) -> None:
    """Global filters, initialised from the URL once per session and written back to it."""
    ss = st.session_state
    if "flt_init" not in ss:
        _init_filters_from_url(catalog)
    with st.sidebar:
        st.selectbox("Benchmark", catalog.benchmarks, key="flt_benchmark")
        options = catalog.agents.get(ss.flt_benchmark or "", ())
        ss.flt_agents = [a for a in ss.get("flt_agents", []) if a in options]
        st.multiselect("Agents", options, key="flt_agents", placeholder="All agents")
        if catalog.date_min and catalog.date_max:
            if not ss.get("flt_dates"):
                ss.flt_dates = ()  # the widget's value lives in session state only (no second default)
            st.date_input(
                "Evaluation dates",
                key="flt_dates",
                min_value=catalog.date_min,
                max_value=catalog.date_max,
                format="YYYY-MM-DD",
            )
        st.caption(f"{catalog.n_runs:,} runs · {catalog.n_attempts:,} attempts")
    dates = ss.get("flt_dates") or ()
    wanted = {
        "benchmark": ss.flt_benchmark or "",
        "agents": ",".join(ss.flt_agents),
        "from": dates[0].isoformat() if len(dates) > 0 else "",
        "to": dates[1].isoformat() if len(dates) > 1 else "",
    }
    qp = st.query_params
    for key, value in wanted.items():
        if value and qp.get(key) != value:
            qp[key] = value
        elif not value and key in qp:
            del qp[key]


def run_app() -> None:
    """The router (app.py): page configuration, the app's navigation, the shared chrome (database, demo banner,
    filters), then the chosen page."""
    st.set_page_config(page_title="Runlens", page_icon=":material/query_stats:", layout="wide")
    nav = st.navigation(navigation_pages())
    render_shell()
    nav.run()


def navigation_pages() -> dict[str, list[st.Page]]:
    """The app's pages in their sidebar sections; every page file is listed (tests/test_pages.py reads this list).
    Paths are relative to app.py, the main script."""
    return {
        "Results": [
            st.Page(
                "pages/leaderboard.py",
                title="Leaderboard",
                icon=":material/leaderboard:",
                url_path="home",
                default=True,
            ),  # served at the root URL
            # the same page at /leaderboard too (a link people type), not listed twice in the sidebar
            st.Page("pages/leaderboard.py", title="Leaderboard", url_path="leaderboard", visibility="hidden"),
            st.Page("pages/progress.py", title="Progress", icon=":material/trending_up:", url_path="progress"),
            st.Page("pages/tmf.py", title="Tech-Market-Fit", icon=":material/paid:", url_path="tmf"),
        ],
        "Analysis": [
            st.Page("pages/errors.py", title="Errors", icon=":material/bug_report:", url_path="errors"),
            st.Page("pages/drilldown.py", title="Drilldown", icon=":material/manage_search:", url_path="drilldown"),
            st.Page("pages/search.py", title="Search", icon=":material/search:", url_path="search"),
            st.Page("pages/clusters.py", title="Failure clusters", icon=":material/hub:", url_path="clusters"),
            st.Page("pages/review.py", title="Review", icon=":material/rate_review:", url_path="review"),
            st.Page("pages/diff.py", title="Version diff", icon=":material/compare_arrows:", url_path="diff"),
            st.Page("pages/gem.py", title="GEM-Bench", icon=":material/campaign:", url_path="gem"),
        ],
        "Data": [
            st.Page("pages/sql.py", title="SQL", icon=":material/terminal:", url_path="sql"),
            st.Page("pages/upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"),
        ],
    }


def render_shell() -> None:
    """Bootstrap the database, show the demo banner and the sidebar filters."""
    try:
        _bootstrap(common.db_path())
        catalog = common.cached(cat.catalog)
    except rdb.RunlensError as exc:
        st.error(f"The database could not be opened: {exc}")
        st.stop()
    if catalog.is_demo:
        st.warning(
            "**Demo data.** These runs are generated from the published tables of the four "
            "benchmark papers (see the README); they are not real evaluations. Ingest your own logs "
            "with `python -m ingest PATH`.",
            icon=":material/science:",
        )
    _sidebar(catalog)

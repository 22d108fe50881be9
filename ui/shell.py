"""The shared chrome of every page: database bootstrap, demo banner, global filters kept in the URL.

app.py (the entry script, which lists the pages) hands its page list to ``run_app``, which draws the chrome
before running the chosen page.
"""

from __future__ import annotations

import datetime as dt
import gc
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import streamlit as st

import store as rdb
from analytics import catalog as cat
from analytics import formatting as fmt
from ingest import workers
from ui import common, last_used


@st.cache_resource(show_spinner="Preparing the database (a first start without run.sh loads the demo dataset)...")
def _bootstrap(path: str) -> None:
    """Create the database, and load the demo dataset when it holds no runs (never into a team store). ``bash run.sh
    app`` has done this before the server started (data/demo/prepare.py), so this finds nothing to do there."""
    from data.demo.prepare import prepare_store

    prepare_store(path)


@st.cache_resource(show_spinner=False)
def _last_used() -> dict[str, str]:
    """The benchmark last shown per store by this server process: spares a read of the file kept by
    ``ui.last_used`` (which outlives the process) on every rerun; the file is written only when it changes."""
    return {}


def start_benchmark(catalog: cat.Catalog, last_used: str | None = None) -> str | None:
    """Where a visit without a benchmark in its link opens: the benchmark last used on this store (while it is
    still there), else the one with the most recent runs; never merely the alphabetically first."""
    if last_used in catalog.benchmarks:
        return last_used
    ordered = catalog.newest_first or catalog.benchmarks
    return ordered[0] if ordered else None


def url_filters(
    params: dict[str, str], catalog: cat.Catalog, *, last_used: str | None = None
) -> tuple[str | None, list[str], tuple[dt.date, ...], list[str]]:
    """The sidebar filters a link asks for, checked against the data: (benchmark, agents, dates, notices).

    A stale or hand-edited link (a benchmark or agent no longer stored, a date past the newest run, a malformed
    date) never raises: each value that cannot be used is replaced or dropped, and a notice says so. Without a
    benchmark in the link: ``start_benchmark``.
    """
    notices: list[str] = []
    default = start_benchmark(catalog, last_used)
    bench = params.get("benchmark") or None
    if bench is not None and bench not in catalog.benchmarks:
        notices.append(f"The link's benchmark {bench!r} is not in this database; showing {default!r} instead.")
        bench = None
    bench = bench or default
    asked = [a for a in (params.get("agents") or "").split(",") if a]
    known = set(catalog.agents.get(bench or "", ()))
    agents = [a for a in asked if a in known]
    if len(agents) < len(asked):
        missing = ", ".join(repr(a) for a in asked if a not in known)
        notices.append(f"The link's agents not found on {bench!r} were left out of the filter: {missing}.")
    return bench, agents, _url_dates(params, catalog, notices), notices


def _url_dates(params: dict[str, str], catalog: cat.Catalog, notices: list[str]) -> tuple[dt.date, ...]:
    """The link's date range clamped to the stored evaluation dates (the date widget refuses values outside)."""
    raw = [params.get("from") or "", params.get("to") or ""]
    if not any(raw):
        return ()
    try:
        lo, hi = (dt.date.fromisoformat(v) if v else None for v in raw)
    except ValueError:
        notices.append(f"The link's dates {raw[0]!r} to {raw[1]!r} are not YYYY-MM-DD dates; showing all dates.")
        return ()
    if catalog.date_min is None or catalog.date_max is None:
        return ()
    lo, hi = lo or catalog.date_min, hi or catalog.date_max
    if lo > hi:
        lo, hi = hi, lo
    if hi < catalog.date_min or lo > catalog.date_max:
        notices.append(
            f"No run was evaluated between {lo} and {hi} (stored runs span {catalog.date_min} to "
            f"{catalog.date_max}); showing all dates."
        )
        return ()
    clamped = (max(lo, catalog.date_min), min(hi, catalog.date_max))
    if clamped != (lo, hi):
        notices.append(
            f"The link's dates {lo} to {hi} were narrowed to the stored runs' span: {clamped[0]} to {clamped[1]}."
        )
    return clamped


FILTER_PARAMS = ("benchmark", "agents", "from", "to")
START_KEY = "flt_start"  # session key: the benchmark the visit opened on when its link named none (else None)
LINK_KEY = "flt_link"  # session key: the sidebar's filters as URL parameters, for links to other pages


def linked_run_benchmark(run_id: str | None) -> str | None:
    """The benchmark of the run a link opens (``drilldown?run=<id>``), None when the link names no stored run."""
    if not run_id:
        return None
    # imported here: analytics.diff brings SciPy (about 1 s), which the shell itself does not need at start-up
    from analytics.diff import run_benchmark

    try:
        return str(common.cached(run_benchmark, run_id=run_id)[0])
    except rdb.RunlensError:  # a stale link: the drilldown says so; the sidebar opens where it would
        return None


def _init_filters_from_url(catalog: cat.Catalog) -> None:
    ss = st.session_state
    params = {key: st.query_params.get(key) or "" for key in FILTER_PARAMS}
    if not params["benchmark"]:  # a link to a run without its benchmark: the sidebar and banner follow the run's
        params["benchmark"] = linked_run_benchmark(st.query_params.get("run")) or ""
    if not params["benchmark"] and "flt_init" in ss:  # Back to the session's first view, which named no benchmark
        params["benchmark"] = ss.get(START_KEY) or ""
    last = last_used.last_benchmark(common.db_path()) or _last_used().get(common.db_path())
    ss.flt_benchmark, ss.flt_agents, ss.flt_dates, ss.flt_notices = url_filters(params, catalog, last_used=last)
    if "flt_init" not in ss:
        # the benchmark a visit opened on without naming one (the start rule, or the linked run's): the URL is left
        # as the link was until the user changes it (writing it in would be a second history entry for one view)
        ss[START_KEY] = None if st.query_params.get("benchmark") else ss.flt_benchmark
    ss.flt_init = True


def _sidebar(catalog: cat.Catalog) -> None:
    """Global filters, initialised from the URL once per session and written back to it."""
    ss = st.session_state
    in_url = {key: st.query_params.get(key) or "" for key in FILTER_PARAMS}
    # first run, or the browser's Back/Forward put an earlier view's filters in the URL (every link between pages,
    # the sidebar's menu included, carries the filters; only the session's first view may have none)
    if "flt_init" not in ss or in_url != ss.get("flt_written", in_url):
        _init_filters_from_url(catalog)
    for notice in ss.pop("flt_notices", None) or []:
        st.warning(common.plain(notice), icon=":material/link_off:")
    with st.sidebar:
        st.selectbox("Benchmark", catalog.benchmarks, key="flt_benchmark")
        options = catalog.agents.get(ss.flt_benchmark or "", ())
        ss.flt_agents = [a for a in ss.get("flt_agents", []) if a in options]
        if len(options) > 1 and len(set(ss.flt_agents)) == len(options):
            # every agent picked ("Select all", or a link naming each one) is the view without an agent filter: the
            # same runs, so the same cached results and a short URL (a list of every agent was a new filter to
            # compute, a leaderboard of every run from scratch)
            ss.flt_agents = []
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
        flt = common.current_filters()
        # runs-level counts only: counting the view's attempts read every one of them at each start (the store's
        # total comes from the table's row count). A view without dates counts from the catalog's rows: no statement
        # (the landing view's, and each agent change's); with dates, from the runs table
        if flt.date_from is None and flt.date_to is None:
            n_runs = catalog.run_count(flt.benchmark, flt.agents)
        else:
            n_runs = common.cached(cat.filtered_run_count, run_filter=flt)
        in_view = "in this view" if flt.agents or flt.date_from else f"in {flt.benchmark}"
        st.caption(
            f"{fmt.plural(n_runs, 'run')} {common.plain(in_view)} "
            f"(the store: {fmt.plural(catalog.n_runs, 'run')}, {fmt.plural(catalog.n_attempts, 'attempt')})"
        )
        where = common.store_caption()
        if where:
            st.caption(common.plain(where))
    dates: tuple[dt.date, ...] = ss.get("flt_dates") or ()
    wanted = {
        "benchmark": ss.flt_benchmark or "",
        "agents": ",".join(ss.flt_agents),
        "from": dates[0].isoformat() if len(dates) > 0 else "",
        "to": dates[1].isoformat() if len(dates) > 1 else "",
    }
    ss[LINK_KEY] = {k: v for k, v in wanted.items() if v}
    if not any(in_url.values()) and ss.flt_benchmark == ss.get(START_KEY) and not any(list(wanted.values())[1:]):
        wanted["benchmark"] = ""  # the view the visit opened on, untouched: its URL stays as the link was
    if wanted != in_url:  # one change of the URL (one history entry), only when the user changed a filter
        common.set_url({k: v for k, v in wanted.items() if v}, replace=FILTER_PARAMS)
    ss.flt_written = wanted
    if ss.flt_benchmark and _last_used().get(common.db_path()) != ss.flt_benchmark:
        _last_used()[common.db_path()] = ss.flt_benchmark
        last_used.remember(common.db_path(), ss.flt_benchmark)


PAGE_ICON = Path(__file__).resolve().parent / "assets" / "runlens-icon.svg"


def is_streamlit_server() -> bool:
    """True in a server started by ``streamlit run`` (its bootstrap is loaded); False under AppTest, whose script
    runs inside the test process (that memory is the test suite's, not a server's)."""
    return "streamlit.web.bootstrap" in sys.modules


_FROZEN_AT = {"modules": 0}  # how many modules were imported when the server's heap was last frozen


def freeze_long_lived() -> bool:
    """Keep what the server holds for its whole life (the imported modules: Streamlit, pandas, Plotly's
    validators, SciPy, the analytics) out of the full garbage collection Streamlit runs after every script run
    (``runner.postScriptGC``). That collection walked about 180,000 objects each time: 0.1 CPU s of a 0.25 s rerun
    on the demo, holding the interpreter lock while the run's answer waited to be sent. Called as a run starts; it
    collects and freezes again only when modules were imported since the last time (a page's first visit), so
    garbage is collected before it is frozen. Returns whether it froze."""
    n_modules = len(sys.modules)
    if n_modules == _FROZEN_AT["modules"]:
        return False
    gc.collect()
    gc.freeze()
    _FROZEN_AT["modules"] = n_modules
    return True


def skip_bare_script_check() -> None:
    """Spare Streamlit's check, made once per process at the first element drawn, of whether the script runs in a
    Python REPL rather than by ``streamlit run`` (to print a warning): it is ``inspect.stack()``, which reads the source
    line of every frame and resolves the file of every loaded module (1,300 with the landing page's imports): 0.02-0.035
    CPU s of the app's first run, for a warning that never applies to it (a server or AppTest runs it, never a REPL).
    Streamlit keeps "already shown" in a module flag; were it renamed, the check simply runs again."""
    from streamlit import delta_generator

    if hasattr(delta_generator, BARE_SCRIPT_FLAG):
        setattr(delta_generator, BARE_SCRIPT_FLAG, True)


BARE_SCRIPT_FLAG = "_use_warning_has_been_displayed"  # streamlit/delta_generator.py (1.67)


def run_app(pages: Mapping[str, Sequence[st.Page]]) -> None:
    """The router: page configuration, the app's navigation over ``pages`` (app.py's ``PAGES``: sidebar section ->
    pages), the shared chrome (database, demo banner, filters), then the chosen page."""
    skip_bare_script_check()
    # an icon file served by the app: a ":material/...:" page icon makes every page fetch it from fonts.gstatic.com
    st.set_page_config(page_title="Runlens", page_icon=str(PAGE_ICON), layout="wide")
    if is_streamlit_server():  # this server and its SQL and upload workers share one memory budget (ingest/workers.py)
        workers.use_budget()
        freeze_long_lived()
    # the app draws its own menu (below): st.navigation's clears the URL on a page switch, so the sidebar's filters
    # had to be written back, a second history entry for one view (Back then stopped on the same view)
    nav = st.navigation(pages, position="hidden")
    _undo_leaked_params(nav.url_path)
    menu = st.sidebar.container(key="rl_nav")
    try:
        render_shell()
    finally:
        draw_menu(menu, pages)
    try:
        nav.run()
    finally:
        _remember_page_url(nav.url_path)


def draw_menu(menu: st.delta_generator.DeltaGenerator, pages: Mapping[str, Sequence[st.Page]]) -> None:
    """The app's pages by section, each a link that carries the sidebar's filters: a page switch is one history
    entry holding the whole view, so Back and Forward restore it from the URL alone."""
    params = common.link_params()
    with menu:
        for section, entries in pages.items():
            st.caption(section)
            for page in entries:
                if page.visibility != "hidden":
                    st.page_link(page, label=page.title, icon=page.icon or None, query_params=params, width="stretch")


PAGE_URLS = "_page_urls"  # session key: each page's parameters as its last run left them in the URL
SHARED_PARAMS = (*FILTER_PARAMS, "as_of")


def _own(params: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in params.items() if k not in SHARED_PARAMS}


def _remember_page_url(page: str) -> None:
    st.session_state[PAGE_URLS] = {**st.session_state.get(PAGE_URLS, {}), page: st.query_params.to_dict()}
    st.session_state["_last_page"] = page


def _undo_leaked_params(page: str) -> None:
    """Back from one page to another (e.g. Search -> a hit in the drilldown -> Back) reruns the earlier page with the
    later page's parameters, not with the URL the browser went back to (Streamlit's frontend keeps its last query
    parameters across that history step). When a page change arrives with exactly the parameters the previous page
    left, this page's own last parameters are put back, so its view (query, pair of runs, settings) returns.
    Links between pages carry their own parameters and are left alone."""
    ss = st.session_state
    last, pages = ss.get("_last_page"), ss.get(PAGE_URLS, {})
    arrived = _own(st.query_params.to_dict())
    if not last or last == page or page not in pages or not arrived or arrived != _own(pages.get(last, {})):
        return
    shared = {k: v for k, v in st.query_params.to_dict().items() if k in SHARED_PARAMS}
    st.query_params.from_dict({**_own(pages[page]), **shared})


FILTER_NAMES = {"benchmark": "Benchmark", "agents": "Agents", "dates": "Evaluation dates"}


def page_setup(title: str, caption: str | None = None, *, unused: tuple[str, ...] = ()) -> common.Filters:
    """Title, caption and the global filters (drawn by the router) for a page; the sidebar says which of them
    (``unused``: names of ``FILTER_NAMES``) the page does not apply, so no filter is silently ignored.
    """
    if unused:
        names = ", ".join(FILTER_NAMES[u] for u in unused)
        st.sidebar.caption(f":material/filter_alt_off: Not used on this page: {names}.")
    st.title(title)
    if caption:
        st.caption(caption)
    return common.current_filters()


def render_shell() -> None:
    """Bootstrap the database, show the demo banner and the sidebar filters."""
    try:
        _bootstrap(common.db_path())
        notice = common.pin_version()
        catalog = common.cached(cat.catalog)
    except rdb.RunlensError as exc:
        st.error(common.plain(f"The database could not be opened: {exc}"))
        st.stop()
    if notice:
        st.info(common.plain(notice), icon=":material/history:")
    _sidebar(catalog)
    flt = common.current_filters()
    if catalog.shows_demo(flt.benchmark, flt.agents):  # only while demo runs are in view
        st.warning(
            "**Demo data.** These runs are generated from the published tables of the four "
            "benchmark papers (see the README); they are not real evaluations. Ingest your own logs "
            "with `python -m ingest PATH`.",
            icon=":material/science:",
        )

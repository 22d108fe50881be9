"""Tech-Market-Fit: cost vs performance, optimal supply curve, human cost curve, value per task and stage."""

import datetime as dt
from typing import Any

import streamlit as st

from analytics import export, tmf
from analytics.catalog import catalog as catalog_of
from analytics.figures import plain_figure
from ui.common import (
    UrlField,
    cached,
    cached_then,
    drilldown_url,
    empty_state,
    from_url,
    keep_in_url,
    plain,
    query_param,
    selected_custom_data,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import Col, show_table

filters = page_setup(
    "Tech-Market-Fit",
    "xbench §5.2: where agents are cheaper than people for the same quality. Blue: what technology can "
    "deliver (the optimal supply curve and the region to its right). Green: what the market accepts (left of "
    "the human cost curve). Dark green: their intersection, the value AI adds per task.",
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH`.")
# IRT ability is offered when a fit is stored: asked first when the link or the session names it, else read with
# the first view's runs (``view.has_irt_fit``: no statement of its own), so the options are read before the widgets
asks_irt = "irt" in (st.session_state.get("tmf_perf"), query_param("performance"))
has_irt: bool | None = cached(tmf.has_irt_fit, benchmark=filters.benchmark) if asks_irt else None
perf_options = list(tmf.PERFORMANCES if has_irt is not False else tmf.PERFORMANCES[:2])
# every assumption is kept in the URL, so a shared link (and the exports) carry the same numbers
URL_FIELDS = [
    UrlField("tmf_perf", "performance", perf_options[0], choices=perf_options),
    UrlField("tmf_axis", "axis", list(tmf.AXES)[0], choices=list(tmf.AXES)),
    UrlField("tmf_cost", "cost", list(tmf.COST_SOURCES)[0], choices=list(tmf.COST_SOURCES)),
    UrlField("tmf_reprice", "reprice", False),
    UrlField("tmf_supply", "supply", list(tmf.SUPPLIES)[0], choices=list(tmf.SUPPLIES)),
    UrlField("tmf_hourly", "hourly_usd", tmf.DEFAULT_HOURLY_USD, bounds=(1.0, 10000.0)),
    UrlField("tmf_minutes", "human_minutes", 0.0, bounds=(0.0, 10000.0)),
    UrlField("tmf_hperf", "human_performance", 0.0, bounds=(0.0, 100.0)),
    UrlField("tmf_willing", "willingness", 1.0, bounds=(0.05, 10.0)),
    UrlField("tmf_exp", "acceptance_exponent", 1.0, bounds=(0.0, 5.0)),
    UrlField("tmf_incomplete", "include_incomplete", False),
]
from_url(URL_FIELDS)


def number(col: st.delta_generator.DeltaGenerator, label: str, field: UrlField, **kwargs: Any) -> float:
    lo, hi = field.bounds or (None, None)
    start = {} if field.key in st.session_state else {"value": field.default}
    return float(col.number_input(label, lo, hi, key=field.key, **start, **kwargs))


def options_of(values: dict[str, Any]) -> tmf.TmfOptions:
    """The analysis options of the widgets' values (by widget key)."""
    performance, human_perf = values["tmf_perf"], float(values["tmf_hperf"])
    return tmf.TmfOptions(
        performance=performance,
        axis=values["tmf_axis"],
        cost_source=values["tmf_cost"],
        is_repriced=bool(values["tmf_reprice"]),
        supply=values["tmf_supply"],
        hourly_usd=float(values["tmf_hourly"]),
        human_minutes=float(values["tmf_minutes"]) or None,
        human_performance=(human_perf / 100.0 if performance != "irt" else human_perf) or None,
        willingness=float(values["tmf_willing"]),
        exponent=float(values["tmf_exp"]),
        include_incomplete=bool(values["tmf_incomplete"]),
    )


fields = {f.key: f for f in URL_FIELDS}
assumptions = st.expander("Change the assumptions (performance, cost, human, market)", expanded=False)

FREQ = UrlField("tmf_freq", "period", "quarter", choices=list(tmf.PERIODS))
from_url([FREQ])
freq = st.segmented_control("Period", list(tmf.PERIODS), key="tmf_freq") or "quarter"
keep_in_url([FREQ])


def first_view(opt: tmf.TmfOptions) -> tmf.Overview:
    """What the runs give is prepared once per supply-side choice; a new rate, human figure or market curve only
    finishes it again (``tmf.finish_overview``), without reading or resampling the tasks. The first view is the
    overall analysis and the periods' labels; every period's analysis (the movie) and the small multiples are
    prepared when asked for (an earlier period picked, an expander opened below)."""
    return cached_then(
        tmf.prepare_current,
        tmf.finish_overview,
        {"options": opt},
        run_filter=filters,
        options=opt.supply_side(),
        freq=freq,
    )


# the options as the widgets hold them (``from_url`` gave every one a value), analysed before the widgets are drawn
opt = options_of({key: st.session_state[key] for key in fields})
view = first_view(opt)
if has_irt is None:
    has_irt = view.has_irt_fit if view.has_irt_fit is not None else cached(tmf.has_irt_fit, benchmark=filters.benchmark)
    perf_options = list(tmf.PERFORMANCES if has_irt else tmf.PERFORMANCES[:2])
with assumptions:
    c1, c2, c3, c4 = st.columns(4)
    performance = c1.selectbox("Performance", perf_options, key="tmf_perf")
    axis = c1.selectbox("X axis", list(tmf.AXES), key="tmf_axis", help="cost per task (USD) or latency per task")
    cost_source = c2.selectbox(
        "Cost", list(tmf.COST_SOURCES), key="tmf_cost", help="logged cost_usd, or tokens x the run's prices"
    )
    reprice = c2.toggle(
        "At current prices",  # whole at 1280 px
        key="tmf_reprice",
        help="Reprice: tokens x the newest prices of the same family (runs without tokens keep their cost)",
    )
    supply = c2.selectbox(
        "Supply curve",
        list(tmf.SUPPLIES),
        key="tmf_supply",
        help="step: Pareto frontier; hull: upper convex hull (routing tasks between two agents)",
    )
    hourly = number(c3, "Human hourly rate (USD)", fields["tmf_hourly"])
    minutes = number(c3, "Human minutes per task when the data has none (0 = none)", fields["tmf_minutes"])
    human_perf = number(c3, "Human performance override (0 = from human runs, else 100%)", fields["tmf_hperf"])
    willing = number(c4, "Willingness to pay (share of human cost)", fields["tmf_willing"])
    exponent = number(c4, "Acceptance curve exponent (1 = linear, 0 = flat)", fields["tmf_exp"])
    with_incomplete = c4.checkbox(
        "Include incomplete runs",
        key="tmf_incomplete",
        help="A run cut short (an unfinished log, samples missing: the Leaderboard's rule) is on other tasks than "
        "the others: it is no point unless asked, as the Leaderboard does not rank it",
    )
    if not has_irt:
        st.caption(
            "IRT ability is not offered: no IRT fit is stored for this benchmark (run the IRT page or "
            "`python -m analytics irt`)."
        )
keep_in_url(URL_FIELDS)
drawn = options_of(
    {
        "tmf_perf": performance,
        "tmf_axis": axis,
        "tmf_cost": cost_source,
        "tmf_reprice": reprice,
        "tmf_supply": supply,
        "tmf_hourly": hourly,
        "tmf_minutes": minutes,
        "tmf_hperf": human_perf,
        "tmf_willing": willing,
        "tmf_exp": exponent,
        "tmf_incomplete": with_incomplete,
    }
)
if drawn != opt:  # a widget gave another value than the session held (not expected): analyse what it shows
    opt, view = drawn, first_view(drawn)
if view.overall is None:
    empty_state(
        f"No runs of **{plain(filters.benchmark)}** match the filters. Widen the agents or dates in the sidebar."
    )


def the_movie() -> list[tuple[str, tmf.TmfResult]]:
    """The analysis as of the end of every period (cached; prepared on the first call)."""
    return list(
        cached_then(
            tmf.prepare_movie,
            tmf.finish_movie,
            {"options": opt},
            run_filter=filters,
            options=opt.supply_side(),
            freq=freq,
        )
    )


labels = list(view.periods) or ["all runs"]
AS_OF = UrlField("tmf_period", "asof", labels[-1], choices=labels)
if st.session_state.get("tmf_period") not in labels:  # the period kind changed: start at the newest period
    st.session_state.pop("tmf_period", None)
from_url([AS_OF])  # a period the link names that this view lacks gives a notice
as_of_label = (
    st.select_slider(
        "As of the end of",
        labels,
        key="tmf_period",
        help="the frontier of the runs evaluated up to the end of that period (undated runs count in every period)",
    )
    if len(labels) > 1
    else labels[-1]
)
keep_in_url([AS_OF])
as_of = None if as_of_label in ("all runs", labels[-1]) else tmf.period_end(as_of_label, freq)
# the newest period is the overall analysis, which carries the task bootstrap; earlier periods are estimates
result = view.overall if as_of is None else (dict(the_movie()).get(as_of_label) or view.overall)

val = result.value
m1, m2, m3, m4 = st.columns([1.4, 1, 1, 1])  # "Stage 2 (100%)" whole at 1280 px
m1.metric(
    "TMF stage",
    "n/a" if val is None else tmf.stage_label(result).split(" · ")[0],
    None if val is None else tmf.stage_label(result).split(" · ")[1],
    help="In brackets: the share of paired task-bootstrap replicates in that stage (newest period only).",
    delta_color="off",
    delta_arrow="off",
)
m2.metric(
    "AI value per task (area)",
    "n/a" if val is None else tmf.fmt_x(val.area, result.unit),
    help=tmf.DOLLAR_DEFINITIONS["area"],
)
m3.metric(
    "Best saving per task",
    "n/a" if val is None else tmf.fmt_x(val.best_saving, result.unit),
    help=tmf.DOLLAR_DEFINITIONS["saving"],
)
m4.metric(
    "Human cost per task",
    tmf.fmt_x(result.human.x if result.human else None, result.unit),
    None if result.human is None else "at " + tmf.fmt_perf(result.human.performance, performance),
    delta_color="off",
    delta_arrow="off",
    help=tmf.DOLLAR_DEFINITIONS["human"],
)
reading, arithmetic = tmf.reconciliation(result)
if reading:  # one line for executives, then how each dollar figure follows from the others
    st.success(plain(f"In one line: {reading}"), icon=":material/lightbulb:")
st.info(plain(tmf.headline(result)), icon=":material/info:")  # no auto-linked bare URLs either
if arithmetic:
    st.caption("How the dollar figures add up")
    st.text("\n".join(arithmetic))
st.caption(
    plain(tmf.assumptions_sentence(result)) + " Change them under 'Change the assumptions' above; the link keeps them."
)
st.caption(plain(tmf.comparison_caption(result)))
is_demo = cached(catalog_of).shows_demo(filters.benchmark, list(filters.agents))
if not result.frontier:
    empty_state(
        "No run of these has both a cost and a performance, so there is no cost-performance chart to draw. Log "
        "`cost_usd` per attempt, or tokens with the run's prices (`price_input_per_mtok`), then ingest again."
    )

fig = tmf.fig_tmf(result, title=f"{filters.benchmark}: cost vs performance ({as_of_label})")
table = tmf.points_table(result)
table["open"] = [drilldown_url(r) for r in table["run_id"]]
event = show_fig(fig, key="tmf_fig", data=table, name=f"tmf-{filters.benchmark}", select=True)
for picked in selected_custom_data(event):
    run_id = picked[0] if isinstance(picked, list) else picked
    st.markdown(f":material/open_in_new: [Open run {plain(run_id)}]({drilldown_url(run_id)})")
if result.assumptions["runs_without_cost"]:
    st.warning(
        plain(
            "Runs without a cost (listed in the table, not on the chart): "
            + ", ".join(result.assumptions["runs_without_cost"])
        )
    )

st.subheader("Runs")
st.caption(
    "Frontier runs first. Bootstrap shares: of the bootstrap replicates over tasks, the share in which the run is "
    "on the frontier, or gives the best operating point (exact ties share a replicate); how stable the estimate "
    "is, not the probability that a run is best. The download has every column as numbers."
)
shown_runs = tmf.runs_display(table, result)
show_table(
    shown_runs,
    [Col(str(c), str(c), "shown") for c in shown_runs.columns if c not in ("open", "run_id")]
    + [Col("open", "Open", "link", link_text="open run")],
    key="tmf_table",
    name=f"tmf-{filters.benchmark}",
    download=table,
)

with st.expander("By level or category", key="tmf_multi_open", on_change="rerun") as multi_box:
    if multi_box.open:  # prepared only when opened (each slice has its own task bootstrap)
        kind = st.segmented_control("Small multiples by", ["level", "category"], default="level", key="tmf_multi")
        multi = cached_then(
            tmf.prepare_slice_results,
            tmf.finish_slices,
            {"options": opt},
            run_filter=filters,
            kind=kind or "level",
            options=opt.supply_side(),
            as_of=as_of,
        )
        if multi:
            show_fig(
                tmf.fig_small_multiples(multi),
                key="tmf_multiples",
                data=tmf.stage_table(multi),
                name=f"tmf-{filters.benchmark}-by-{kind}",
            )
        else:
            st.caption(f"The tasks of {plain(filters.benchmark)} carry no {kind}.")

with st.expander("Over time: a movie, not a photograph", key="tmf_movie_open", on_change="rerun") as movie_box:
    if movie_box.open:  # every period's analysis, prepared only when opened
        movie = the_movie()
        show_fig(
            tmf.fig_movie(movie), key="tmf_movie", data=tmf.period_table(movie), name=f"tmf-{filters.benchmark}-movie"
        )
        periods = tmf.period_table(movie)
        money = "usd" if result.unit == "USD" else "number"  # the latency axis measures seconds
        show_table(
            periods,
            [
                Col("period", "Period"),
                Col("n_runs", "Runs so far", "count"),
                Col("stage", "Stage", "count"),
                # short headers (their tooltips say "per task"), so the frontier's names read whole at 1280 px
                Col("value_per_task", "AI value" + ("" if money == "usd" else " (s)"), money, help="AI value per task"),
                Col(
                    "best_saving",
                    "Best saving" + ("" if money == "usd" else " (s)"),
                    money,
                    help="Best saving per task",
                ),
                Col("frontier", "Frontier (cheapest first)", max_px=430),  # with the others, within 790 px
            ],
            key="tmf_periods",
            name=f"tmf-{filters.benchmark}-periods",
        )

st.subheader("Export for slides")
st.caption("Every export prints the assumptions above" + (" and the demo-data caveat." if is_demo else "."))


def printed(kind: str) -> bytes:
    """The chart with its assumptions printed on it, as ``kind``: built only when a download is clicked."""
    page = tmf.export_figure(fig, result, is_demo=is_demo)
    return export.fig_to_images(page, formats=[kind], height=int(page.layout.height))[kind]


stamp = dt.date.today().isoformat()
e1, e2, e3 = st.columns(3)
e1.download_button(
    "Chart PNG",
    lambda: printed("png"),
    f"tmf-{filters.benchmark}-{stamp}.png",
    "image/png",
    key="tmf_png",
    icon=":material/image:",
    on_click="ignore",
)
e2.download_button(
    "Chart SVG",
    lambda: printed("svg"),
    f"tmf-{filters.benchmark}-{stamp}.svg",
    "image/svg+xml",
    key="tmf_svg",
    icon=":material/draw:",
    on_click="ignore",
)
benchmark = filters.benchmark  # a name here (the page stopped above without one), also inside the lambda
e3.download_button(
    "Page HTML",
    lambda: tmf.page_export(result, plain_figure(fig), benchmark, is_demo=is_demo),
    f"tmf-{filters.benchmark}-{stamp}.html",
    "text/html",
    key="tmf_html",
    icon=":material/web:",
    on_click="ignore",
)

with st.expander("Definitions", expanded=False):
    st.markdown(tmf.DEFINITIONS_MD)

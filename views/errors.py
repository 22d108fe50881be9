"""Errors: error-type distributions per run (AD-Bench Table 3), shares, co-occurrence, a run diff, and the
attempts behind any bar or cell (each opening the drilldown page). Deep link: ``errors?err_run=&err_code=``."""

import dataclasses

import streamlit as st

from analytics import errors as err
from analytics import formatting as fmt
from analytics import judge as jg
from analytics import llm
from analytics import review as rv
from ui.common import (
    UrlField,
    cached,
    drilldown_url,
    empty_state,
    from_url,
    keep_in_url,
    link_params,
    new_selection,
    plain,
    pop_url,
    query_param,
    set_url,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import Col, show_table

MARK_CSS = {"best": "font-weight: bold", "second": "text-decoration: underline"}  # AD-Bench's convention
DIFF_NAMES = {"n_errors": "#Error", "n_total": "#Total", "n_failed": "Failed attempts"}
filters = page_setup(
    "Errors",
    "Error codes on failed attempts; a code counts once per attempt whichever source reports it. "
    "#Error = TE+PE+DE+CE+HAL+LC (AD-Bench Table 3), #Total = every code. Counts grow with a run's size: "
    "compare runs by the rates per attempt, with their intervals.",
)
ss = st.session_state
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")

cfg = llm.llm_config()
if cfg is None:
    st.info(llm.ENABLE_HELP, icon=":material/smart_toy:")
else:
    status = cached(jg.judge_status, benchmark=filters.benchmark)
    st.caption(
        f"LLM judge: model `{cfg.model}`; "
        f"{fmt.plural(int(status['n_verdicts'].sum()) if not status.empty else 0, 'verdict')} "
        f"stored for {plain(filters.benchmark)}. Run `python -m analytics judge --benchmark "
        f"{plain(filters.benchmark)} --failed-only` to add judge labels."
    )

# how far the judge can be trusted, before its distributions (agreement with human reviews, views/review.py)
judged = cached(rv.trust, run_filter=filters)  # agreement and corrected figures from one read of the reviews
trust, corrected = judged.agreement, judged.corrections
st.info(plain(rv.trust_sentence(trust.verdicts, trust.n_reviewed)), icon=":material/balance:")
if not corrected.empty:
    with st.expander("Judge figures corrected by human reviews (PPI++, 95% intervals)", expanded=trust.n_reviewed > 0):
        show_table(
            rv.corrections_table(corrected),
            key="err_corrected",
            name=f"judge-corrected-{filters.benchmark}",
            download=corrected,
            is_display=True,
        )
st.page_link(
    "views/review.py",
    label="Review attempts; see where judge and humans disagree",
    icon=":material/rate_review:",
    query_params=link_params(),  # the sidebar's filters: the review opens on the same view, in one history entry
)

if "err_sources" not in ss:  # shareable choices start from the URL: errors?err_sources=label,judge&err_facet=level
    asked = [s for s in (query_param("err_sources") or "").split(",") if s]
    unknown = [repr(s) for s in asked if s not in err.SOURCES]
    if unknown:  # a hand-edited link: say what is left out, never fail
        st.info(plain(f"The link's {', '.join(unknown)}: not a label source here; left out."))
    ss.err_sources = [s for s in asked if s in err.SOURCES] or list(err.SOURCES)
FACET = UrlField("err_facet", "err_facet", "all", choices=("all", "level", "category"))
from_url([FACET])  # a facet change is a history entry; Back returns to the last one
left, right = st.columns([2, 1])
sources = left.multiselect(
    "Label sources",
    err.SOURCES,
    key="err_sources",
    help="label: from the log; rule: tool-graph rules; judge: the LLM judge",
)
facet = right.segmented_control("Facet", ["all", "level", "category"], key="err_facet") or "all"
keep_in_url([FACET])
if not sources:
    empty_state("Pick at least one label source.")
table = cached(err.error_table, run_filter=filters, sources=tuple(sources))
if table.empty:
    empty_state(
        f"No runs of **{plain(filters.benchmark)}** match the filters. Widen the agents or dates in the sidebar."
    )
slice_name = "all"
if facet != "all":
    values = sorted(s.split("=", 1)[1] for s in table["slice"].unique() if s.startswith(f"{facet}="))
    if not values:
        empty_state(f"The tasks of **{plain(filters.benchmark)}** carry no {facet}.")
    linked = query_param("err_slice")
    value = st.selectbox(
        facet.capitalize(), values, index=values.index(linked) if linked in values else 0, key="err_slice_value"
    )
    slice_name = f"{facet}={value}"

st.subheader(f"Error types per run ({plain(fmt.slice_label(slice_name))})")
t3 = err.table3(table, slice_name=slice_name)
if int(t3["#Total"].sum()) == 0:
    st.info(
        "No failed attempt of these runs carries an error label from the chosen sources. Labels come from "
        "the logs (`errors`), from `python -m analytics rules`, or from the LLM judge."
    )
rates = err.rate_table(table, slice_name=slice_name)
st.caption(
    "Share of each run's attempts that failed, and that carry each code, in % with a Wilson 95% interval over the "
    "run's attempts, so that runs of different sizes compare fairly here."
)
show_table(rates, key="err_rates", name=f"error-rates-{filters.benchmark}-{slice_name}", is_display=True)
with st.expander(
    "Counts in AD-Bench Table 3's layout (fewest in bold, second underlined: fair only between runs of the same size)",
    expanded=len(set(rates["Attempts"])) == 1,
):
    counts = list(err.TABLE3_COLUMNS.values())
    show_table(
        t3,
        [Col("Model", "Model"), *(Col(c, c, "count") for c in counts), Col("run_id", kind="id")],
        key="err_t3",
        name=f"errors-{filters.benchmark}-{slice_name}",
        css=err.rank_marks(t3, counts).replace(MARK_CSS),
    )
part = table[table["slice"] == slice_name]
with st.expander("Every code, failed attempts and errors per failed case"):
    full = part.drop(columns=["benchmark", "kind"])
    show_table(
        full.assign(slice=full["slice"].map(fmt.slice_label)),
        [Col("agent", "Agent"), Col("agent_version", "Version"), Col("slice", "Slice")],
        key="err_full",
        name=f"errors-full-{filters.benchmark}",
        download=full,
    )

long = err.shares(table, slice_name=slice_name)
show_fig(err.fig_error_shares(long), key="err_shares", data=long, name="error-shares", select=True)
run_ids = part["run_id"].tolist()
labels = dict(zip(run_ids, err.run_labels(part), strict=True))

# a click on a bar (run, code) or on a heatmap cell (code, code) picks the attempts listed right under the chart
if bar := new_selection("err_shares"):
    set_url({"err_run": str(bar[0][0])})  # (each call one change of the address, as the page always made them)
    set_url({"err_code": str(bar[0][1])})
    pop_url("err_code_b")
if (cell := new_selection("err_co")) and ss.get("err_co_run"):
    set_url({"err_run": str(ss.err_co_run)})
    set_url({"err_code": str(cell[0][0])})
    set_url({"err_code_b": str(cell[0][1])})

st.subheader("Attempts behind a bar or cell")
st.caption(
    "Click a bar above or a cell of the co-occurrence heatmap below, or pick here; each row opens the attempt in "
    "the drilldown page."
)
codes = err.codes_of(table)
link = (query_param("err_run"), query_param("err_code"), query_param("err_code_b"))
if ss.get("err_link") != link or "err_pick_run" not in ss:  # a click, a deep link, or a return to the page
    ss.err_link = link
    for param, value, known in zip(("err_run", "err_code", "err_code_b"), link, (run_ids, codes, codes), strict=True):
        if value is not None and value not in known:  # a stale or hand-edited link: say so, never swap silently
            st.info(
                plain(
                    f"The link's {param} {value!r} is not among these runs' {'runs' if param == 'err_run' else 'codes'}"
                    f"; showing {'the first run' if param == 'err_run' else 'any code'}."
                ),
                icon=":material/link_off:",
            )
    if link[0] in run_ids:
        ss.err_pick_run = link[0]
    ss.err_pick_code = link[1] if link[1] in codes else None
    ss.err_pick_code_b = link[2] if link[2] in codes else None
if any(link):  # a click on a bar or cell, or a deep link, asks for the attempts
    ss.err_list_attempts = True


def list_attempts() -> None:
    ss.err_list_attempts = True


c1, c2, c3 = st.columns(3)
pick_run = c1.selectbox("Run", run_ids, format_func=labels.__getitem__, key="err_pick_run", on_change=list_attempts)
pick_code = c2.selectbox(
    "Code", codes, index=None, placeholder="any code", key="err_pick_code", on_change=list_attempts
)
pick_b = c3.selectbox("With code", codes, index=None, placeholder="-", key="err_pick_code_b", on_change=list_attempts)
# below the first screen: read when asked (a click, a pick, a link or the button), not on every first visit
attempts = (
    cached(
        err.error_attempts,
        run_id=pick_run,
        code=pick_code,
        code_b=pick_b,
        slice_name=slice_name,
        sources=tuple(sources),
    )
    if ss.get("err_list_attempts")
    else None
)
if attempts is None:
    st.button("List the failed attempts", key="err_list", on_click=list_attempts, icon=":material/list:")
elif attempts.empty:
    st.info("No failed attempt matches.")
else:
    attempts = attempts.assign(
        open=[
            drilldown_url(r, t, int(s))
            for r, t, s in zip(attempts["run_id"], attempts["task_id"], attempts["sample"], strict=True)
        ]
    )
    show_table(
        attempts,
        [
            Col("task_id", "Task"),
            Col("sample", "Sample", "count"),
            Col("codes", "Codes"),
            Col("open", "Open", "link", link_text="drilldown"),
            Col("level", "Level"),
            Col("category", "Category"),
            Col("sources", "Sources"),
            Col("status", "Status"),
            Col("answer", "Answer"),
        ],
        key="err_attempts",
        name=f"errors-attempts-{pick_run}",
    )

# far below the first screen: read when opened (open at once when a link names a cell's second code)
with st.expander(
    "Co-occurrence within failed attempts", key="err_co_open", on_change="rerun", expanded=bool(link[2])
) as co_box:
    if co_box.open:
        co_run = st.selectbox("Run", run_ids, format_func=labels.__getitem__, key="err_co_run")
        co = cached(
            err.cooccurrence, run_filter=dataclasses.replace(filters, run_ids=(co_run,)), sources=tuple(sources)
        )
        if co.empty:
            st.info("This run has no labelled failed attempt.")
        else:
            show_fig(err.fig_cooccurrence(co), key="err_co", data=co, name="error-cooccurrence", select=True)

if len(run_ids) > 1:
    st.subheader("Diff between two runs")
    a_col, b_col = st.columns(2)
    run_a = a_col.selectbox("From", run_ids, index=1, format_func=labels.__getitem__, key="err_diff_a")
    run_b = b_col.selectbox("To", run_ids, index=0, format_func=labels.__getitem__, key="err_diff_b")
    diff = err.error_diff(table, run_a, run_b)
    # counts grow with a run's size: the rates per attempt compare runs of different sizes fairly
    size = part.set_index("run_id")["n_attempts"]
    diff = diff.assign(
        name=diff["code"].map(DIFF_NAMES).fillna(diff["code"]),
        rate_a=diff["n_a"] / size[run_a],
        rate_b=diff["n_b"] / size[run_b],
        rate_change=diff["n_b"] / size[run_b] - diff["n_a"] / size[run_a],
        count_change=diff["pct_change"] / 100,  # a fraction, as every signed column takes
    )
    moved = diff[~diff["code"].isin(list(DIFF_NAMES)) & ((diff["count_change"].abs() >= 0.1) | (diff["n_a"] == 0))]
    moved = moved[moved["change"] != 0].sort_values("rate_change", key=abs, ascending=False)
    for r in moved.itertuples():  # the biggest moves in share of attempts first; the counts beside them
        where = f", mostly on {r.mostly_on}" if fmt.text(r.mostly_on) != fmt.MISSING else ""
        st.text(
            f"{err.CODE_NAMES.get(r.code, r.code)} errors ({r.code}): {fmt.pct(r.rate_a)} → {fmt.pct(r.rate_b)} of "
            f"attempts ({fmt.signed(r.rate_change)}; {fmt.count(r.n_a)} → {fmt.count(r.n_b)} attempts) from {labels[run_a]} to "
            f"{labels[run_b]}{where}"
        )
    if moved.empty:
        st.text("No code changed by 10% or more.")
    st.caption(
        f"Per code: the share of each run's attempts that carry it ({fmt.plural(size[run_a], 'attempt')} in "
        f"From, {fmt.plural(size[run_b], 'attempt')} in To), the change in percentage points, and the counts."
    )
    show_table(
        diff,
        [
            Col("name", "Code"),
            Col("rate_a", "From (% of attempts)", "pct"),
            Col("rate_b", "To (% of attempts)", "pct"),
            Col("rate_change", "Change", "pp"),
            Col("n_a", "From (count)", "count"),
            Col("n_b", "To (count)", "count"),
            Col("count_change", "Count change (%)", "signed"),
            Col("mostly_on", "Mostly on level"),
            Col("change", "Count change", "count", is_default=False),
            Col("code", "Code (raw)", is_default=False),
        ],
        key="err_diff",
        name="errors-diff",
        download=diff,
    )

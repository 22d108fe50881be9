"""Version diff: a candidate against a baseline run, task by task -- paired test, regressions, flips, deltas."""

import streamlit as st

from analytics import diff as rd
from analytics import formatting as fmt
from analytics import gate
from analytics import trajectory as tr
from analytics.runs import run_label
from store import RunlensError
from ui.common import (
    UrlField,
    cached,
    cached_then,
    drilldown_url,
    empty_state,
    from_url,
    keep_in_url,
    link_params,
    plain,
    pop_url,
    query_param,
    set_url,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import Col, show_table

filters = page_setup(
    "Version diff",
    "Run A is the baseline (kept in the URL). The paired test is the leaderboard's (its raw p, before the "
    "leaderboard's selection-aware adjustment): the benchmark's metric per task over shared tasks, exact McNemar with one binary sample per task, "
    "else a seeded sign-flip test. Flips and the McNemar test on them use each task's sample 0 (or, if chosen, "
    "'passed in at least half the samples'); deltas carry a seeded paired bootstrap 95% interval over tasks.",
    unused=("agents", "dates"),
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")
# a run a retry superseded is its retry's (the leaderboard's rule): out of the pickers unless a link names it
named = [query_param(n) for n in ("baseline", "candidate", "a", "b")]
runs, superseded = rd.without_superseded(cached(rd.run_pairs, benchmark=filters.benchmark), keep=named)
pair = rd.default_pair(runs)
if pair is None:
    empty_state(
        "A diff needs two runs of this benchmark; the database holds fewer"
        + (f" (not counting {fmt.plural(len(superseded), 'run')} superseded by a retry)." if superseded else ".")
    )

ss = st.session_state
ids = runs["run_id"].tolist()
labels = {r.run_id: f"{run_label(r.agent, r.agent_version, r.eval_date)} · {r.run_id}" for r in runs.itertuples()}
# a link names the pair as baseline=/candidate= (a=/b= still work); a run the link names that is not here
# (deleted, another benchmark) gives a notice, never a silent swap
in_url = (query_param("baseline"), query_param("candidate"))
if in_url != ss.get("df_written", in_url):  # Back/Forward put an earlier pair (or none: the default) in the URL
    ss.df_a, ss.df_b = (run if run in ids else None for run in in_url)
for key, names, fallback in (("df_a", ("baseline", "a"), pair[0]), ("df_b", ("candidate", "b"), pair[1])):
    if ss.get(key) not in ids:
        asked = next((query_param(n) for n in names if query_param(n)), None)
        if asked is not None and asked not in ids:
            st.info(f"The link's {names[0]} run {plain(repr(asked))} is not in this benchmark; showing the default.")
        ss[key] = asked if asked in ids else fallback
left, right, basis_col = st.columns([4, 4, 2])
run_a = left.selectbox("Baseline run A (before)", ids, key="df_a", format_func=labels.__getitem__)
run_b = right.selectbox("Candidate run B (after)", ids, key="df_b", format_func=labels.__getitem__)
if superseded:
    st.caption(
        plain(
            f"{fmt.plural(len(superseded), 'run')} superseded by a retry (a later Inspect log of the same task) "
            f"{'is' if len(superseded) == 1 else 'are'} not offered, as on the Leaderboard: "
            f"{', '.join(superseded)}. A link naming one still opens it."
        )
    )
VIEW_FIELDS = [
    UrlField("df_basis", "basis", rd.BASES[0], choices=rd.BASES),
    UrlField("df_worse", "regressions_only", False),
]
from_url(VIEW_FIELDS)
basis = basis_col.selectbox(
    "Outcome per task",
    rd.BASES,
    key="df_basis",
    format_func={"sample0": "sample 0", "majority": "majority of samples"}.__getitem__,
)
pop_url("a", "b")
if any(in_url) or (run_a, run_b) != pair:  # the default pair stays out of the URL: a first visit adds no entry
    set_url({"baseline": run_a, "candidate": run_b}, if_changed=True)
    ss.df_written = (run_a, run_b)
else:
    ss.df_written = (None, None)
if run_a == run_b:
    empty_state("Pick two different runs.")
try:
    # each run's values read once; the gate's inputs kept with the diff, the gate run when its expander is opened
    both = cached(gate.diff_and_gate, run_a=run_a, run_b=run_b, basis=basis, gated=False)
    result = both.diff
except RunlensError as exc:
    empty_state(plain(f"These runs cannot be compared: {exc}"))

cut_note = rd.incomplete_note(runs, result)  # a run cut short: the Leaderboard does not rank it
if cut_note:
    st.warning(plain(cut_note), icon=":material/warning:")
if not result.is_testable:
    empty_state(
        "These runs share no task: the difference cannot be tested. The IRT Progress page compares runs "
        "across task pools."
    )
m = st.columns(5)
m[0].metric("Matched tasks", f"{len(result.tasks):,}")
m[1].metric("Regressions (A ✓, B ✗)", f"{result.b_regressions:,}")
m[2].metric("Fixes (A ✗, B ✓)", f"{result.c_fixes:,}")
m[3].metric("McNemar exact p", f"{result.p_value:.3g}")
deltas = result.deltas.copy()
paired = result.paired
if paired is not None and result.metric == "pass@1":  # one interval for one change: the paired test's, everywhere
    deltas.loc[deltas["slice"] == "all", ["delta", "lo", "hi"]] = [paired.diff, *paired.ci95]
overall = deltas.set_index("slice").loc["all"]
m[4].metric(
    "Pass@1 change",
    fmt.signed(overall["delta"]),
    f"95% CI {fmt.span(overall['lo'], overall['hi'], scale=100, is_signed=True)} pp",
    delta_color="off",
    delta_arrow="off",  # the interval is not a direction
)
if result.n_only_a or result.n_only_b:
    st.caption(
        f"{fmt.plural(result.n_only_a, 'task')} only in A and {fmt.plural(result.n_only_b, 'task')} only in B "
        "are left out."
    )
st.caption(
    "Flips: significant at 5%."
    if rd.is_significant(result.p_value)
    else "Flips: not significant at 5%, consistent with chance."
)

st.subheader("Paired test and deltas (B - A)")
if paired is not None:
    verdict = "significant" if rd.is_significant(paired.p_value) else "not significant"
    st.text(
        f"{result.metric}: {fmt.signed(paired.diff)} over {fmt.plural(paired.n_shared, 'shared task')} "
        f"(95% CI {fmt.span(paired.ci95[0], paired.ci95[1], scale=100, is_signed=True)} pp), "
        f"p = {paired.p_value:.3g} "
        f"({paired.method}), {verdict} at 5%; B worse on {fmt.plural(paired.n_worse, 'task')}, "
        f"better on {paired.n_better:,}."
    )
if result.measures is not None:
    st.caption(
        "Means over shared tasks (each task's mean over its samples); B − A with a paired bootstrap 95% interval "
        "and the paired test's p."
    )
    show_table(
        rd.measures_table(result.measures),
        key="df_measures",
        name=f"diff-measures-{run_a}-{run_b}",
        download=result.measures,
        is_display=True,
    )

gate_box = st.expander(
    "Sequential gate (anytime-valid: for attempts that arrive over time)", key="df_gate", on_change="rerun"
)
# run and drawn when opened (its test, path and chart are none of the first view), from the cached diff's values
with gate_box:
    if gate_box.open:
        check, gate_error = cached_then(
            gate.diff_and_gate, gate.gate_of, {}, fn_result=both, run_a=run_a, run_b=run_b, basis=basis, gated=False
        )
        if check is None:
            st.info(plain(f"The gate cannot check these runs: {gate_error}"))
        elif check.sequential is None:
            st.info("The two runs share no task with a value in both: nothing to check.")
        else:
            st.text(gate.sequential_text(check))
            st.caption(
                "Tasks in B's log order; the gate may be checked after every task and keeps its 5% false-alarm "
                "rate (docs/statistics.md). `python -m analytics gate --sequential` gives the same verdict in CI."
            )
            show_fig(
                gate.fig_sequential(check.sequential),
                key="df_seq",
                data=gate.sequential_frame(check.sequential),
                name=f"diff-sequential-{run_a}-{run_b}",
            )

TABLE_PAGE = 250  # rows of a task table drawn at once


def _page_slice(n_rows: int, key: str) -> slice:
    """The rows of one page of a long table (a pager under it when there is more than one page)."""
    n_pages = max(1, -(-n_rows // TABLE_PAGE))
    if n_pages == 1:
        return slice(0, n_rows)
    if not 1 <= ss.get(key, 1) <= n_pages:  # fewer rows than when the page was picked
        ss[key] = 1
    st.caption(f"{TABLE_PAGE} rows a page; the downloads hold all {n_rows:,}.")
    page = st.pagination(n_pages, key=key)
    return slice((page - 1) * TABLE_PAGE, page * TABLE_PAGE)


st.subheader("Tasks by change")
slider_col, only_col = st.columns([3, 1])  # "Regressions only" whole at 1280 px
low, high = slider_col.slider(
    "Change of the metric per task (B - A, pp)", -100, 100, (-100, 100), step=5, key="df_change"
)
only_worse = only_col.toggle("Regressions only", key="df_worse", help="Tasks where B's metric is below A's.")
keep_in_url(VIEW_FIELDS)
changes = cached_then(  # the tasks' changes kept with the diff: a rerun does not recompute them per task
    gate.diff_and_gate,
    gate.changes_of,
    {"low": low / 100, "high": high / 100, "regressions_only": only_worse},
    fn_result=both,  # this run's copy of the diff, not another out of the cache
    run_a=run_a,
    run_b=run_b,
    basis=basis,
    gated=False,
)
st.caption(
    f"{len(changes)} of {fmt.plural(len(result.tasks), 'task')}; largest regressions first. Cost, latency, tokens and tool calls: "
    "B − A of the task's mean over its samples; error codes that B's attempts have and A's had not (+), or the "
    "reverse (−)."
)
# one page of rows is formatted and drawn (tens of thousands of tasks at 10M attempts); the downloads hold them all
shown_changes = changes.iloc[_page_slice(len(changes), "df_changes_page")]
show_table(
    rd.changes_table(shown_changes, metric=result.metric),
    key="df_changes",
    name=f"diff-changes-{run_a}-{run_b}",
    download=changes,
    is_display=True,
)

st.subheader("Deltas by level and category")
show_fig(rd.fig_deltas(deltas), key="df_fig", data=deltas, name=f"diff-deltas-{run_a}-{run_b}")
DELTA_COLS = [
    Col("slice", "Slice"),
    Col("n_tasks", "Tasks", "count"),
    Col("pass_a", "Pass@1 A", "pct"),
    Col("pass_b", "Pass@1 B", "pct"),
    Col("delta", "B − A (pp) [95% CI]", "signed", lo="lo", hi="hi", scale=100, is_signed=True),
]
show_table(
    deltas.assign(slice=deltas["slice"].map(fmt.slice_label)),
    DELTA_COLS,
    key="df_deltas",
    name=f"diff-deltas-{run_a}-{run_b}",
    download=deltas,
)

st.subheader("Flipped tasks")
flipped = result.flipped
if flipped.empty:
    st.info("No task changed outcome between these runs.")
    st.stop()
shown_flipped = flipped.iloc[_page_slice(len(flipped), "df_flipped_page")]
shown_flipped = shown_flipped.assign(
    open_a=[
        drilldown_url(run_a, t, s) for t, s in zip(shown_flipped.task_id, shown_flipped.first_sample_a, strict=False)
    ],
    open_b=[
        drilldown_url(run_b, t, s) for t, s in zip(shown_flipped.task_id, shown_flipped.first_sample_b, strict=False)
    ],
)
FLIP_COLS = [
    Col("task_id", "Task"),
    Col("change", "Change"),
    Col("pass_a", "A passed", "flag"),
    Col("pass_b", "B passed", "flag"),
    Col("open_a", "Open A", "link", link_text="open A"),
    Col("open_b", "Open B", "link", link_text="open B"),
    Col("rate_a", "A pass rate", "pct", digits=0),
    Col("rate_b", "B pass rate", "pct", digits=0),
    Col("level", "Level"),
    Col("category", "Category"),
    Col("n_a", "Samples A", "count", is_default=False),
    Col("n_b", "Samples B", "count", is_default=False),
    Col("cost_usd_a", "Cost A", "usd", is_default=False),
    Col("cost_usd_b", "Cost B", "usd", is_default=False),
    Col("latency_s_a", "Latency A (s)", "number", is_default=False),
    Col("latency_s_b", "Latency B (s)", "number", is_default=False),
    Col("codes_a", "Codes A", is_default=False),
    Col("codes_b", "Codes B", is_default=False),
]
event = show_table(
    shown_flipped.assign(**{c: shown_flipped[c].map(fmt.items) for c in ("codes_a", "codes_b")}),
    FLIP_COLS,
    key="df_flipped",
    name=f"diff-flipped-{run_a}-{run_b}",
    download=flipped,
    select=True,
)
rows = event.selection.rows if event and event.selection else []
pick = shown_flipped.iloc[rows[0]] if rows else shown_flipped.iloc[0]
st.subheader("Both trajectories")
st.text(f"Task {pick.task_id} · {pick.change}")
# the two transcripts are read when asked (two attempts, their steps and alignments: most of the first render at
# 10M attempts); the links to the drilldown need only the flipped table's row
shown = st.toggle(
    "Show both transcripts here", key="df_both", help="Selecting a flipped task above shows them too."
) or bool(rows)
if shown:
    task = cached(tr.attempt_detail, run_id=run_a, task_id=pick.task_id, sample=int(pick.first_sample_a)) or {}
    if task.get("query") or task.get("reference_answer"):
        question, reference = st.columns(2)
        question.text(f"Task: {task.get('query') or '–'}")
        reference.text(f"Reference answer: {task.get('reference_answer') or '–'}")


STEP_COLS = [
    Col("step", "Step", "count"),
    Col("tool", "Tool"),
    Col("alignment", "Alignment"),
    Col("kind", "Kind"),
    Col("args", "Arguments"),
    Col("result_preview", "Result"),
    Col("error", "Error"),
    Col("round", "Round", "count", is_default=False),
]


def _drilldown_link(run_id: str, sample: int) -> None:
    st.page_link(
        "views/drilldown.py",
        label="Open in the drilldown",
        query_params=link_params({"run": run_id, "task": str(pick.task_id), "sample": str(int(sample))}),
    )


def _side(col: st.delta_generator.DeltaGenerator, run_id: str, sample: int, label: str) -> None:
    with col:
        if not shown:
            st.markdown(f"**{label}**")
            st.text(f"{labels[run_id]} · sample {int(sample)}")
            _drilldown_link(run_id, sample)
            return
        d = cached(tr.attempt_detail, run_id=run_id, task_id=pick.task_id, sample=int(sample))
        st.markdown(f"**{label}**")
        if d is None:
            st.info("No attempt.")
            return
        st.text(f"{labels[run_id]} · sample {int(sample)} · passed {fmt.flag(d.get('passed'))}")
        st.text(f"answer: {d.get('answer') or '–'}")
        align = cached(
            tr.alignment_frame, attempt_id=int(d["attempt_id"]), reference=tuple(d.get("reference_trajectory") or ())
        )
        steps = cached(tr.steps_page, attempt_id=int(d["attempt_id"]), offset=0, limit=200)
        ops = dict(zip(align["step"].dropna().astype(int), align.loc[align["step"].notna(), "op"], strict=True))
        view = steps[["step", "round", "kind", "tool", "args", "result_preview", "error"]].assign(
            alignment=[ops.get(int(s), "") for s in steps["step"]]
        )
        show_table(view, STEP_COLS, key=f"df_steps_{label}", name=f"steps-{d['attempt_id']}", budget_px=380)
        if int(d["n_steps"]) > len(steps):
            st.caption(f"First {len(steps)} of {int(d['n_steps'])} steps; the drilldown page has them all.")
        _drilldown_link(run_id, sample)


a_col, b_col = st.columns(2)
_side(a_col, run_a, int(pick.first_sample_a), "A")
_side(b_col, run_b, int(pick.first_sample_b), "B")

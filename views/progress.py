"""Progress: IRT ability over time (the xbench-index), frontier, velocity, breakthroughs, Wright map, items."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from analytics import irt, runs
from analytics import progress as prog
from jobs.irt import worker_request
from ui import background, common, shell
from ui.tables import Col, show_table

flt = shell.page_setup(
    "Progress",
    "Agent ability on one IRT scale across evaluation dates, even when the task "
    "set changes (see docs/irt.md). The first visit fits in the background; fits are stored, refitting is explicit. "
    "The scale is fitted on every run of the benchmark; the sidebar's agents and dates choose the versions shown.",
)
if not flt.benchmark:
    common.empty_state("No benchmark in the database yet: ingest runs first.")
MODEL_FIELD = common.UrlField("irt_model", "model", irt.MODELS[0], choices=irt.MODELS)
common.from_url([MODEL_FIELD])
model = st.radio(
    "Model",
    irt.MODELS,
    horizontal=True,
    key="irt_model",
    help="1pl is the validated default; 2pl (wide priors) adds per-task discrimination.",
)
common.keep_in_url([MODEL_FIELD])


def fit_in_process(kind: str) -> background.Job:
    """The fit of the current data in a process of its own (``python -m jobs.irt``): the server never imports torch,
    which a thread of it would show half-imported to every other session (ui/background.py). One job per store,
    benchmark, model and data version; every visitor meanwhile sees the same job."""
    key = f"irt-{kind}|{common.db_path()}|{flt.benchmark}|{model}|{common.db_version()}"
    return background.start_process(
        key, "jobs.irt", worker_request(common.db_path(), benchmark=str(flt.benchmark), model=model)
    )


def refit(label: str) -> None:
    """A button that fits (or refits) on the current data, with progress, then reruns the page."""
    if not st.button(label, key="irt_refit", icon=":material/refresh:"):
        return
    bar = st.progress(0.0, text="Fitting...")
    job = fit_in_process("refit")
    started = time.monotonic()
    while not job.is_done:
        bar.progress(job.fraction, text=job.message)
        time.sleep(0.25)
    background.forget(job.key)  # a later click fits again (a retry after a failure, or new data)
    if job.error is not None:
        st.error(f"The fit failed: {common.plain(job.error)}")
        return
    bar.progress(1.0, text=f"Done in {time.monotonic() - started:.1f} s")
    st.rerun()


view = common.cached(prog.progress_view, benchmark=flt.benchmark, model=model)
if view.n_superseded:  # the leaderboard's rule (store.retries): a retried run is its retry's
    st.caption(
        f"{fmt.plural(view.n_superseded, 'run')} superseded by a retry (a later Inspect log of the same task) "
        f"{'is' if view.n_superseded == 1 else 'are'} left out of the fit and the raw scores, as on the Leaderboard."
    )
if view.incomplete:  # the leaderboard's rule: a run cut short would weigh its part of the tasks in its version
    st.caption(
        common.plain(
            f"{fmt.plural(len(view.incomplete), 'incomplete run')} (an unfinished log, samples missing) "
            f"{'is' if len(view.incomplete) == 1 else 'are'} left out of the fit and the raw scores, as the "
            f"Leaderboard does not rank {'it' if len(view.incomplete) == 1 else 'them'}: {', '.join(view.incomplete)}."
        )
    )
if view.fit is None and (view.n_subjects_in_data < 2 or view.n_tasks_in_data < 2):
    common.empty_state(
        f"Too little data for an ability index on **{common.plain(flt.benchmark)}**: it has "
        f"{fmt.plural(view.n_subjects_in_data, 'agent version')} and {fmt.plural(view.n_tasks_in_data, 'task')}; IRT needs at "
        "least 2 of each (and about 20 answered tasks per agent to rank it)."
    )
if view.fit is None:
    missing = (
        f"No {model} fit of **{common.plain(flt.benchmark)}** yet ({view.n_subjects_in_data:,} agent versions, "
        f"{view.n_tasks_in_data:,} tasks)"
    )
    if not background.is_enabled():
        st.info(
            f"{missing}. An IRT fit places agents and tasks on one scale; it needs at least 2 agents and 2 tasks "
            "and takes seconds to minutes (RUNLENS_AUTO_FIT=0: fits start only from here)."
        )
        refit("Fit now")
        st.stop()
    # the first visit fits in the background (once per store, benchmark, model and data version), with progress;
    # every visitor meanwhile sees the same job, and the page shows the fit as soon as it is stored
    job = fit_in_process("fit")
    key = job.key
    st.info(
        f"{missing}: fitting now, in the background. An IRT fit places agents and tasks on one scale; it takes "
        "seconds to minutes, and is stored for every later visit."
    )
    if job.error is not None:
        st.error(f"The fit failed: {common.plain(job.error)}")
        refit("Try again")
        st.stop()

    @st.fragment(run_every=1.0)
    def wait_for_fit() -> None:
        current = background.get(key)
        if current is None or current.is_done:
            st.rerun(scope="app")
        st.progress(current.fraction, text=current.message)

    wait_for_fit()
    st.stop()
fit = view.fit
everything = view
view = prog.shown(view, flt)
if len(view.abilities) < len(everything.abilities):
    st.caption(
        f"Showing {len(view.abilities)} of the fit's {len(everything.abilities)} agent versions (the sidebar's agents "
        "and dates); the fit, the tasks and the refit log cover them all."
    )
if view.abilities.empty:
    common.empty_state("No agent version of this fit matches the sidebar's agents and dates: widen them.")
if not fit.is_current:
    st.warning(
        "The data changed since this fit (shown below). Refit to include the new runs; old agents stay "
        "on the same scale through anchor tasks."
    )
refit("Refit" if fit.is_current else "Refit on the current data")

info = fit.info
# one run-label rule (analytics.runs.run_label): "o3", not "o3 o3"; the fit's subject ids stay in the downloads
names = {r.subject: runs.run_label(r.agent, r.agent_version) for r in everything.abilities.itertuples()}


def relabel(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    return df.assign(**{c: df[c].map(lambda v: names.get(v, v)) for c in cols})


LOGITS: dict[str, Any] = {"kind": "number", "digits": 2}
ABILITY_COLS = [
    Col("subject", "Agent version"),
    Col("ability", "Ability (logits) [90% CI]", lo="ability_lo", hi="ability_hi", **LOGITS),
    Col("raw_score", "Raw pass rate", "pct"),
    Col("n_items", "Tasks answered", "count"),
    Col("family", "Family"),
    Col("first_eval_date", "First evaluated", "date"),
    Col("is_flagged", "Too few tasks", "flag"),
]
VELOCITY_COLS = [
    Col("family", "Family"),
    Col("ability_per_month", "Per month (logits)", help="least-squares slope over the family's versions", **LOGITS),
    Col("ability_gain", "Gained (logits)", **LOGITS),
    Col("n_versions", "Versions", "count"),
    Col("first_date", "First version", "date", is_default=False),
    Col("last_date", "Last version", "date", is_default=False),
]
BREAK_COLS = [
    Col("to_subject", "Version"),
    Col("ability_gain", "Gained (logits)", **LOGITS),
    Col("from_subject", "After"),
    Col("date", "Date", "date"),
    Col("months", "Months apart", "number"),
    Col("family", "Family", is_default=False),
    Col("ability", "Ability (logits)", is_default=False, **LOGITS),
]
ITEM_COLS = [
    Col("task_id", "Task"),
    Col("difficulty", "Difficulty (logits)", **LOGITS),
    Col("discrimination", "Discrimination", **LOGITS),
    Col("pass_rate", "Pass rate", "pct"),
    Col("n_subjects", "Agent versions", "count"),
    Col("flag", "Flag"),
]
LOG_COLS = [
    Col("created_at", "Fitted (UTC)", "datetime"),
    Col("model", "Model"),
    Col("n_agents", "Agent versions", "count"),
    Col("n_tasks", "Tasks", "count"),
    Col("seconds", "Seconds", "number"),
    Col("scale_shift", "Scale shift (logits)", **LOGITS),
    Col("link", "Linked by"),
    Col("anchor_tasks", "Anchor tasks", "count"),
    Col("old_agents_moved", "Old agents moved", "number", digits=2),
]
c = st.columns(5)
c[0].metric("Agent versions", len(fit.abilities))
c[1].metric("Tasks", len(fit.items))
c[2].metric("Fit time", f"{fit.seconds:.1f} s")
c[3].metric("Scale shift", f"{info.get('scale_shift', 0.0):+.2f}", help=str(info.get("link_method", "")))
c[4].metric("Flagged (too few tasks)", int(fit.abilities["is_flagged"].sum()))

left, right = st.columns(2)
drawn = dataclasses.replace(
    view, abilities=relabel(view.abilities, "subject"), frontier=relabel(view.frontier, "subject")
)
with left:
    common.show_fig(prog.fig_ability_over_time(drawn), key="fig_ability", data=view.abilities, name="abilities")
with right:
    common.show_fig(prog.fig_raw_over_time(drawn), key="fig_raw", data=view.abilities, name="raw_scores")

st.subheader("Velocity and breakthroughs")
left, right = st.columns(2)
with left:
    st.caption("Ability gained per month (least-squares slope over a family's versions).")
    show_table(view.velocity, VELOCITY_COLS, key="tbl_velocity", name="velocity", budget_px=380)
with right:
    st.caption("Consecutive versions whose 90% intervals do not overlap.")
    show_table(
        relabel(view.breakthroughs, "from_subject", "to_subject"),
        BREAK_COLS,
        key="tbl_breakthroughs",
        name="breakthroughs",
        download=view.breakthroughs,
        budget_px=380,
    )

st.subheader("Abilities")
ranked = view.abilities.sort_values("ability", ascending=False)
show_table(relabel(ranked, "subject"), ABILITY_COLS, key="tbl_abilities", name="irt_abilities", download=ranked)

st.subheader("Tasks")
left, right = st.columns(2)
with left:
    common.show_fig(prog.fig_wright_map(view), key="fig_wright")
with right:
    tasks = list(fit.items.sort_values("difficulty")["task_id"])
    wanted = common.query_param("task")
    task = st.selectbox("Task", tasks, key="irt_task", index=tasks.index(wanted) if wanted in tasks else 0)
    common.show_fig(prog.fig_icc(view, task), key="fig_icc")
flags = st.multiselect("Show flags", ["saturated", "dead", "negative"], key="irt_flags", placeholder="all tasks")
items = fit.items[fit.items["flag"].isin(flags)] if flags else fit.items
show_table(items, ITEM_COLS, key="tbl_items", name="irt_items")

with st.expander("Refit log (every stored fit and how far the scale moved)"):
    show_table(view.log, LOG_COLS, key="tbl_log", name="irt_fit_log")

"""Progress: IRT ability over time (the xbench-index), frontier, velocity, breakthroughs, Wright map, items."""

from __future__ import annotations

import streamlit as st

import store as rdb
from analytics import irt
from analytics import progress as prog
from jobs.irt import fit_and_store
from ui import background, common, shell

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


def refit(label: str) -> None:
    """A button that fits (or refits) on the current data, with progress, then reruns the page."""
    if not st.button(label, key="irt_refit", icon=":material/refresh:"):
        return
    bar = st.progress(0.0, text="Fitting...")
    try:
        fit = common.write(
            fit_and_store,
            benchmark=flt.benchmark,
            model=model,
            progress=lambda frac, msg: bar.progress(min(frac, 1.0), text=msg),
        )
    except rdb.RunlensError as exc:
        st.error(f"The fit failed: {common.plain(exc)}")
        return
    bar.progress(1.0, text=f"Done in {fit.seconds:.1f} s")
    st.rerun()


view = common.cached(prog.progress_view, benchmark=flt.benchmark, model=model)
if view.fit is None and (view.n_subjects_in_data < 2 or view.n_tasks_in_data < 2):
    common.empty_state(
        f"Too little data for an ability index on **{common.plain(flt.benchmark)}**: it has "
        f"{view.n_subjects_in_data} agent version(s) and {view.n_tasks_in_data} task(s); IRT needs at "
        "least 2 of each (and about 20 answered tasks per agent to rank it)."
    )
if view.fit is None:
    missing = (
        f"No {model} fit of **{common.plain(flt.benchmark)}** yet ({view.n_subjects_in_data} agent versions, "
        f"{view.n_tasks_in_data} tasks)"
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
    key = f"irt-fit|{common.db_path()}|{flt.benchmark}|{model}|{common.db_version()}"
    job = background.start(
        key, common.write, fit_and_store, store=common.db_path(), benchmark=flt.benchmark, model=model
    )
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
view = prog.shown(view, agents=flt.agents, date_from=flt.date_from, date_to=flt.date_to)
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
N2 = {"format": "%.2f"}
COLUMNS = {  # what each table column means, in words (the downloads keep the raw names)
    "subject": st.column_config.TextColumn("Agent version"),
    "family": st.column_config.TextColumn("Family"),
    "first_eval_date": st.column_config.DateColumn("First evaluated", format="YYYY-MM-DD"),
    "first_date": st.column_config.DateColumn("First version", format="YYYY-MM-DD"),
    "last_date": st.column_config.DateColumn("Last version", format="YYYY-MM-DD"),
    "date": st.column_config.DateColumn("Date", format="YYYY-MM-DD"),
    "ability": st.column_config.NumberColumn("Ability (logits)", **N2),
    "ability_lo": st.column_config.NumberColumn("90% low", **N2),
    "ability_hi": st.column_config.NumberColumn("90% high", **N2),
    "n_items": st.column_config.NumberColumn("Tasks answered"),
    "raw_score": st.column_config.NumberColumn("Raw pass rate", format="%.3f"),
    "is_flagged": st.column_config.CheckboxColumn("Too few tasks"),
    "n_versions": st.column_config.NumberColumn("Versions"),
    "ability_per_month": st.column_config.NumberColumn(
        "Ability gained per month (logits)", help="least-squares slope over the family's versions", **N2
    ),
    "ability_gain": st.column_config.NumberColumn("Ability gained (logits)", **N2),
    "from_subject": st.column_config.TextColumn("From version"),
    "to_subject": st.column_config.TextColumn("To version"),
    "months": st.column_config.NumberColumn("Months apart", format="%.1f"),
    "task_id": st.column_config.TextColumn("Task"),
    "difficulty": st.column_config.NumberColumn("Difficulty (logits)", **N2),
    "discrimination": st.column_config.NumberColumn("Discrimination", **N2),
    "pass_rate": st.column_config.NumberColumn("Pass rate", format="%.3f"),
    "n_subjects": st.column_config.NumberColumn("Agent versions"),
    "flag": st.column_config.TextColumn("Flag"),
}
c = st.columns(5)
c[0].metric("Agent versions", len(fit.abilities))
c[1].metric("Tasks", len(fit.items))
c[2].metric("Fit time", f"{fit.seconds:.1f} s")
c[3].metric("Scale shift", f"{info.get('scale_shift', 0.0):+.2f}", help=str(info.get("link_method", "")))
c[4].metric("Flagged (too few tasks)", int(fit.abilities["is_flagged"].sum()))

left, right = st.columns(2)
with left:
    common.show_fig(prog.fig_ability_over_time(view), key="fig_ability", data=view.abilities, name="abilities")
with right:
    common.show_fig(prog.fig_raw_over_time(view), key="fig_raw", data=view.abilities, name="raw_scores")

st.subheader("Velocity and breakthroughs")
left, right = st.columns(2)
with left:
    st.caption("Ability gained per month (least-squares slope over a family's versions).")
    st.dataframe(view.velocity, hide_index=True, key="tbl_velocity", column_config=COLUMNS)
    common.download_buttons(view.velocity, "velocity", key="dl_velocity")
with right:
    st.caption("Consecutive versions whose 90% intervals do not overlap.")
    st.dataframe(view.breakthroughs, hide_index=True, key="tbl_breakthroughs", column_config=COLUMNS)
    common.download_buttons(view.breakthroughs, "breakthroughs", key="dl_breakthroughs")

st.subheader("Abilities")
ranked = view.abilities.sort_values("ability", ascending=False)
st.dataframe(
    ranked[
        [
            "subject",
            "family",
            "first_eval_date",
            "ability",
            "ability_lo",
            "ability_hi",
            "n_items",
            "raw_score",
            "is_flagged",
        ]
    ],
    hide_index=True,
    key="tbl_abilities",
    column_config=COLUMNS,
)
common.download_buttons(ranked, "irt_abilities", key="dl_abilities")

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
st.dataframe(items, hide_index=True, key="tbl_items", column_config=COLUMNS)
common.download_buttons(items, "irt_items", key="dl_items")

with st.expander("Refit log (every stored fit and how far the scale moved)"):
    st.dataframe(view.log, hide_index=True, key="tbl_log")
    common.download_buttons(view.log, "irt_fit_log", key="dl_log")

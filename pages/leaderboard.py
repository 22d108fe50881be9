"""Leaderboard: runs ranked on their shared tasks by the benchmark's metric, with paired tests against the leader."""

import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from analytics import leaderboard as lb
from analytics import run_health as rh
from ui.common import (
    UrlField,
    cached,
    empty_state,
    from_url,
    keep_in_url,
    plain,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import show_table

filters = page_setup(
    "Leaderboard",
    "Runs are ranked only against runs evaluated on the same tasks (the comparison set), by the benchmark's own "
    "metric: Pass@1 for binary scoring, mean score for graded and continuous. Each row is compared with the leader "
    "by a paired test over shared tasks (exact McNemar with one binary sample per task, else a seeded sign-flip "
    "test), Holm-adjusted within the slice: 'tied' means not significantly different at 5%. Pass@1 intervals are "
    "Wilson with the task-clustered effective sample size; Pass@k (k > 1) plain Wilson over tasks.",
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")

health = cached(rh.run_health, benchmark=filters.benchmark)
n_errored = int(health["n_errored"].sum()) if not health.empty else 0
leave_out = n_errored > 0 and st.toggle(
    f"Leave errored attempts out, as Inspect does ({n_errored} in this benchmark)",
    key="lb_errors_out",
    help="Errored attempts (status crashed: the sample raised an error) count as failures by default. Left out, "
    "every rate, interval, test and rank below is computed without them.",
)
df = cached(lb.leaderboard, **filters.as_kwargs(), exclude_errored=leave_out)
if df.empty:
    empty_state(
        f"No runs of **{plain(filters.benchmark)}** match the filters. Widen the agents or dates in the sidebar."
    )

overall = df[df["slice"] == "all"]
metric_name = "Pass@1" if overall["metric"].iloc[0] == "pass@1" else "mean score"
ranked = overall[overall["rank"].notna()]
apart = overall[overall["rank"].isna() & (overall["kind"] != "human")]
humans = overall[overall["kind"] == "human"]
left, mid, right = st.columns(3)
left.metric("Runs ranked", f"{len(ranked)} of {len(overall)}")
mid.metric(
    "Comparison set",
    f"{int(overall['comparison_set_size'].iloc[0])} tasks",
    help="The task set most runs were evaluated on (ties go to the larger set); only runs on exactly these "
    "tasks are ranked.",
)
leader = ranked[ranked["is_leader"]]
if not leader.empty:
    top = leader.sort_values("run_id").iloc[0]
    right.metric(
        f"Leader: {plain(top['agent'], max_chars=80)}",
        f"{100 * top['metric_value']:.1f}% {metric_name}",
        help=f"{fmt.plural(int(ranked['is_tied'].eq(True).sum()), 'other ranked run')} not significantly different "
        "(paired test, Holm-adjusted, 5%)",
    )
st.caption(
    f"Ranked by {metric_name} on {int(overall['comparison_set_size'].iloc[0])} shared tasks. "
    "Δ vs leader: the paired mean difference over shared tasks with its 95% bootstrap interval."
)

st.subheader("Agents")
ordered = ranked.sort_values(["rank", "run_id"])
summary = lb.summary_table(ordered)
show_table(summary, key="lb_summary", name=f"leaderboard-{filters.benchmark}-summary", is_display=True)
table = lb.display_table(ordered)
with st.expander("Every column (Pass@k, pass^k, steps, attempts, raw p-values)"):
    show_table(table, key="lb_table", name=f"leaderboard-{filters.benchmark}", is_display=True, show_ids=True)
if not apart.empty:
    st.subheader("Shown apart")
    st.caption(
        "Runs evaluated on other tasks, or marked as baselines (`gem_role: baseline` or `role: baseline`), are "
        "not ranked; their test against the leader uses only the tasks they share. Comparing across task pools "
        "is what the IRT Progress page is for."
    )
    st.page_link("pages/progress.py", label="Open IRT Progress (compares runs across task pools)")
    apart_table = lb.summary_table(apart).drop(columns=["Rank"])
    apart_table.insert(1, "Why apart", [lb.apart_reason(r) for _, r in apart.iterrows()])
    show_table(
        apart_table,
        key="lb_apart",
        name=f"leaderboard-{filters.benchmark}-apart",
        download=lb.display_table(apart).assign(why_apart=[lb.apart_reason(r) for _, r in apart.iterrows()]),
        is_display=True,
    )
st.caption(
    "Errored attempts are left out here, as Inspect's own accuracy does."
    if leave_out
    else "Errored attempts count as failures here (Inspect's own accuracy leaves them out)."
)
if not health.empty and not health["is_complete"].all():
    st.subheader("Runs that are not complete")
    incomplete = rh.incomplete_table(health, errors_excluded=leave_out)
    show_table(incomplete, key="lb_incomplete", name=f"leaderboard-{filters.benchmark}-incomplete", is_display=True)
if not humans.empty:
    st.subheader("Human baseline")
    st.caption("Human rows are ranked apart: they are the reference, not a competitor.")
    human_table = lb.summary_table(humans).drop(columns=["Rank"])
    show_table(
        human_table,
        key="lb_humans",
        name=f"leaderboard-{filters.benchmark}-human",
        download=lb.display_table(humans),
        is_display=True,
    )

show_fig(lb.fig_pass_at_1(pd.concat([ranked, humans])), key="lb_fig", data=table, name=f"ranking-{filters.benchmark}")

st.subheader("Cost vs accuracy")
costed = ranked[ranked["is_pareto_optimal"].notna()]
if costed.empty:
    st.info(
        "No ranked run of this benchmark logs a cost (or tokens with prices), so there is no cost-accuracy view. "
        "Give `cost_usd` per attempt, or `input_tokens`/`output_tokens` with the run's prices."
    )
else:
    n_optimal = int(costed["is_pareto_optimal"].astype(bool).sum())
    st.caption(
        f"{n_optimal} of {len(costed)} ranked runs with a cost are Pareto-optimal: no other run is as cheap or "
        f"cheaper AND as good or better on {metric_name} (one strictly). The line is the best {metric_name} "
        "reachable at each cost. Runs without a cost are left out"
        + (f" ({len(ranked) - len(costed)} here)." if len(ranked) > len(costed) else ".")
    )
    pareto_data = costed[["run_id", "agent", "agent_version", "eval_date", "mean_cost_usd", "is_pareto_optimal"]]
    show_fig(lb.fig_cost_accuracy(costed), key="lb_pareto", data=pareto_data, name=f"pareto-{filters.benchmark}")

st.subheader("Breakdowns")
BREAKDOWN = UrlField("lb_breakdown", "by", "level", choices=("level", "category"))
from_url([BREAKDOWN])
kind = st.segmented_control("Break down by", ["level", "category"], key="lb_breakdown")
keep_in_url([BREAKDOWN])
pivot = lb.slice_pivot(df, kind or "level")
if pivot.empty:
    st.info(f"The tasks of **{plain(filters.benchmark)}** carry no {kind or 'level'}.")
else:
    st.caption(f"Pass@1 (%) per {kind}; each cell's interval and n are in the table below.")
    show_table(pivot, key="lb_pivot", name=f"leaderboard-{filters.benchmark}-by-{kind}", is_display=True)
    values = sorted(s.split("=", 1)[1] for s in df["slice"].unique() if s.startswith(f"{kind}="))
    if st.session_state.get("lb_slice_value") not in values:  # another benchmark or breakdown: start at the first
        st.session_state.pop("lb_slice_value", None)
    chosen = st.selectbox(f"Detail for one {kind}", values, key="lb_slice_value")
    detail = df[df["slice"] == f"{kind}={chosen}"]
    st.caption(f"Comparison set of this slice: {fmt.plural(int(detail['comparison_set_size'].iloc[0]), 'task')}.")
    in_order = detail.sort_values(["rank", "run_id"], na_position="last")
    show_table(
        lb.summary_table(in_order),
        key="lb_detail",
        name=f"leaderboard-{filters.benchmark}-{kind}-{chosen}",
        download=lb.display_table(in_order),
        is_display=True,
    )

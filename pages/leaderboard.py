"""Leaderboard: Pass@k, pass^k, score, steps and cost per run, with intervals and statistical ties."""

import streamlit as st

from analytics import leaderboard as lb
from ui.common import cached, download_buttons, empty_state, page_setup, plain, show_fig

filters = page_setup(
    "Leaderboard",
    "Pass@k is the unbiased estimator (Chen et al.); pass^k is the chance that k samples all succeed. "
    "Intervals are 95%: Wilson over tasks for rates, a seeded bootstrap over tasks otherwise. "
    "Rows whose Pass@1 interval overlaps the leader's are marked as statistically tied.",
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")

df = cached(lb.leaderboard, **filters.as_kwargs())
if df.empty:
    empty_state(
        f"No runs of **{plain(filters.benchmark)}** match the filters. Widen the agents or dates in the sidebar."
    )

overall = df[df["slice"] == "all"]
machines, humans = overall[overall["kind"] != "human"], overall[overall["kind"] == "human"]
left, mid, right = st.columns(3)
left.metric("Runs", len(overall))
mid.metric("Tasks", int(overall["n_tasks"].max()))
leader = machines[machines["is_leader"]]
if not leader.empty:
    top = leader.iloc[0]
    right.metric(
        f"Leader: {plain(top['agent'], max_chars=80)}",
        f"{100 * top['pass_at_1']:.1f}% Pass@1",
        help=f"{int(machines['is_tied'].sum())} other run(s) statistically tied with the leader",
    )

st.subheader("Agents")
table = lb.display_table(machines.sort_values("rank"))
st.dataframe(table, hide_index=True, key="lb_table", width="stretch")
download_buttons(table, f"leaderboard-{filters.benchmark}", key="lb_dl")
if not humans.empty:
    st.subheader("Human baseline")
    st.caption("Human rows are ranked apart: they are the reference, not a competitor.")
    human_table = lb.display_table(humans).drop(columns=["Rank", "Tied with leader"])
    st.dataframe(human_table, hide_index=True, key="lb_humans", width="stretch")
    download_buttons(human_table, f"leaderboard-{filters.benchmark}-human", key="lb_dl_h")

show_fig(lb.fig_pass_at_1(overall), key="lb_fig", data=table, name=f"pass-at-1-{filters.benchmark}")

st.subheader("Breakdowns")
kind = st.segmented_control("Break down by", ["level", "category"], default="level", key="lb_breakdown")
pivot = lb.slice_pivot(df, kind or "level")
if pivot.empty:
    st.info(f"The tasks of **{plain(filters.benchmark)}** carry no {kind or 'level'}.")
else:
    st.caption(f"Pass@1 (%) per {kind}; each cell's interval and n are in the table below.")
    st.dataframe(pivot, hide_index=True, key="lb_pivot", width="stretch")
    download_buttons(pivot, f"leaderboard-{filters.benchmark}-by-{kind}", key="lb_dl_pivot")
    values = sorted(s.split("=", 1)[1] for s in df["slice"].unique() if s.startswith(f"{kind}="))
    chosen = st.selectbox(f"Detail for one {kind}", values, key="lb_slice_value")
    detail = df[df["slice"] == f"{kind}={chosen}"]
    detail_table = lb.display_table(detail.sort_values("rank", na_position="last"))
    st.dataframe(detail_table, hide_index=True, key="lb_detail", width="stretch")
    download_buttons(detail_table, f"leaderboard-{filters.benchmark}-{kind}-{chosen}", key="lb_dl_detail")

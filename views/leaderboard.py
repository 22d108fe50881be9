"""Leaderboard: runs ranked on their shared tasks by the benchmark's metric, with paired tests against the leader."""

import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from analytics import leaderboard as lb
from analytics import runs
from analytics import scorers as sc
from ui.common import (
    UrlField,
    cached,
    empty_state,
    from_url,
    keep_in_url,
    link_params,
    plain,
    show_fig,
)
from ui.shell import page_setup
from ui.tables import show_table

filters = page_setup(
    "Leaderboard",
    "Runs are ranked only against runs evaluated on the same tasks (the comparison set), by the benchmark's own "
    "metric: Pass@1 for binary scoring, mean score for graded and continuous. Each row is compared with the leader "
    "over the tasks they share. The verdict of a ranked run allows for the leader being chosen by the data (a "
    "max-gap permutation test over the ranked runs): 'tied' means not distinguishable from the leader at 5%, and "
    "the tied runs with the leader are the top group. MDE80 is the gap to the leader a row's test detects with 80% "
    "power ('–' where unknown: a row identical to the leader on every task gives no spread to size it by). Rows "
    "shown apart get their own tests (Holm among themselves). Pass@1 intervals are Wilson with the task-clustered "
    "effective sample size; Pass@k (k > 1) plain Wilson over tasks. docs/statistics.md says more.",
)
if not filters.benchmark:
    empty_state("The database holds no benchmark yet. Ingest logs with `python -m ingest PATH` or on the Upload page.")

health = cached(runs.run_health, benchmark=filters.benchmark)
n_errored = int(health["n_errored"].sum()) if not health.empty else 0
leave_out = n_errored > 0 and st.toggle(
    f"Leave errored attempts out, as Inspect does ({n_errored} in this benchmark)",
    key="lb_errors_out",
    help="Errored attempts (status crashed: the sample raised an error) count as failures by default. Left out, "
    "every rate, interval, test and rank below is computed without them.",
)
HEADLINE = "headline (each attempt's score)"
scorer_names = cached(sc.available_scorers, benchmark=filters.benchmark)
picked = (
    st.selectbox(
        "Score",
        [HEADLINE, *scorer_names],
        key="lb_scorer",
        help="The attempts' headline score, or one scorer of their logs (every Inspect scorer, and every key of a "
        "dict score, is kept). A scorer on its own scale (a 0-10 rating) is ranked by its mean and has no pass rate.",
    )
    if scorer_names
    else HEADLINE
)
scorer = None if picked == HEADLINE else picked
# the breakdown shown below (level or category): only its slices are computed with the whole board, so the first
# render pays no tests for the breakdown nobody has opened (each slice's results do not depend on the others)
BREAKDOWN = UrlField("lb_breakdown", "by", "level", choices=("level", "category"))
from_url([BREAKDOWN])
shown_kind = st.session_state.get("lb_breakdown") or "level"
df = cached(lb.leaderboard, run_filter=filters, exclude_errored=leave_out, scorer=scorer, slices=("all", shown_kind))
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
    f"{int(overall['comparison_set_size'].iloc[0]):,} tasks",
    help="The tasks more than half of the ranked runs have; every run with at least 80% of them is ranked on the "
    "ones it has (its n is in the table), a run on more tasks on these only.",
)
leader = ranked[ranked["is_leader"]]
if not leader.empty:
    top = leader.sort_values("run_id").iloc[0]
    right.metric(
        f"Leader: {plain(top['agent'], max_chars=80)}",
        f"{top['metric_value']:.3g} {metric_name} ({plain(str(scorer))}, raw scale)"
        if top["scale"] == "raw"
        else f"{100 * top['metric_value']:.1f}% {metric_name}",
        help=f"Top group: {fmt.plural(int(ranked['top_group'].eq(True).sum()), 'run')} not distinguishable from the best "
        "(selection-aware max-gap permutation test over the ranked runs, 5%)",
    )
top_group = ranked[ranked["top_group"].eq(True)]
top_labels = runs.unique_run_labels(top_group)
st.caption(
    f"Ranked by {metric_name} on {int(overall['comparison_set_size'].iloc[0]):,} shared tasks. "
    "Δ vs leader: the paired mean difference over shared tasks with its 95% bootstrap interval. "
    f"Top group ({len(top_group)} of {len(ranked)}, not distinguishable from the best at 5%): "
    + ", ".join(plain(top_labels[str(r)], max_chars=60) for r in top_group.sort_values("rank")["run_id"])
    + ". MDE80: the gap to the leader a row's test finds with 80% power."
)

st.subheader("Agents")
ordered = ranked.sort_values(["rank", "run_id"])
summary = lb.summary_table(ordered)
show_table(summary, key="lb_summary", name=f"leaderboard-{filters.benchmark}-summary", is_display=True)
table = lb.display_table(ordered)
if not table.empty:  # the run first, as in the table above: without it the default columns name no run
    table.insert(1, "Run", summary["Run"].to_numpy())
with st.expander("Every column (Pass@k, pass^k, steps, attempts, raw p-values)"):
    # the test behind the p-values is one sentence for the table, not a long cell cut off on every row
    methods = sorted({str(m) for m in table.get("p method", pd.Series(dtype=str)) if m})
    if methods:
        st.caption(f"p vs leader (adjusted): {'; '.join(methods)}.")  # the analytics' own wording, not log text
    show_table(
        table.drop(columns=["p method"], errors="ignore"),
        key="lb_table",
        name=f"leaderboard-{filters.benchmark}",
        download=table,
        is_display=True,
        show_ids=True,
    )
if not apart.empty:
    st.subheader("Shown apart")
    st.caption(
        "Runs evaluated on other tasks, incomplete runs (an interrupted or failed log, samples missing), or runs "
        "marked as baselines (`gem_role: baseline` or `role: baseline`), are not ranked; their test against the leader uses only the tasks they share. Comparing across task pools "
        "is what the IRT Progress page is for."
    )
    st.page_link(
        "views/progress.py", label="Open IRT Progress (compares runs across task pools)", query_params=link_params()
    )
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
measured = overall[overall["inspect_metrics"].notna()]
if not measured.empty:
    with st.expander("Inspect's own metrics (per epoch reducer: mean, mode, median, max, ...)"):
        own = pd.DataFrame(
            [{"Run": runs.row_label(r), **r["inspect_metrics"], "run_id": r["run_id"]} for _, r in measured.iterrows()]
        )
        st.caption("As the log's results give them for this score; Runlens's Pass@k above is computed from samples.")
        show_table(own, key="lb_inspect_metrics", name=f"leaderboard-{filters.benchmark}-inspect-metrics")
if not health.empty and not health["is_complete"].all():
    st.subheader("Runs that are not complete")
    incomplete = runs.incomplete_table(health, errors_excluded=leave_out)
    if "Partial traces" in incomplete:
        st.caption(
            "Partial traces: attempts stored from a trace whose root span was not received (unscored unless a score "
            "was found); they are completed if the rest of the trace arrives."
        )
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

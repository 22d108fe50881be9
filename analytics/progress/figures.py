"""Progress index figures: ability and raw pass rate over time, the Wright map, item characteristic curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analytics.progress.compute import ProgressView, icc


def _family_traces(fig: go.Figure, ab: pd.DataFrame, *, y: str, with_interval: bool, max_legend: int = 12) -> None:
    """One line per family with several versions; single-version agents share one marker trace (building
    hundreds of Plotly traces costs seconds on every rerun)."""
    sizes = ab.groupby("family")["subject"].transform("size")
    groups = [(str(fam), g) for fam, g in ab[sizes > 1].groupby("family", sort=True)]
    if (sizes == 1).any():
        groups.append(("single-version agents", ab[sizes == 1]))
    for n, (name, g) in enumerate(groups):
        g = g.sort_values("first_eval_date")
        is_line = name != "single-version agents"
        err = (
            dict(
                type="data",
                symmetric=False,
                array=g["ability_hi"] - g[y],
                arrayminus=g[y] - g["ability_lo"],
                thickness=1,
            )
            if with_interval
            else None
        )
        fig.add_trace(
            go.Scatter(
                x=g["first_eval_date"],
                y=g[y],
                name=name,
                mode="lines+markers" if is_line else "markers",
                error_y=err,
                legendgroup=name,
                showlegend=n < max_legend or not is_line,
                marker=dict(symbol=np.where(g["is_flagged"], "circle-open", "circle")),
                customdata=np.stack([g["subject"], g["n_items"]], axis=1),
                hovertemplate="%{customdata[0]}<br>%{x|%Y-%m-%d}<br>" + y + " %{y:.2f}<br>%{customdata[1]} tasks"
                "<extra></extra>",
            )
        )


def fig_ability_over_time(view: ProgressView) -> go.Figure:
    """Ability (with 90% interval) per version over time, families joined, frontier as a step line,
    breakthroughs annotated."""
    fig = go.Figure()
    ab = view.abilities
    if ab.empty:
        return fig
    _family_traces(fig, ab, y="ability", with_interval=True)
    fr = view.frontier
    if not fr.empty:
        end = ab["first_eval_date"].max()
        fig.add_trace(
            go.Scatter(
                x=list(fr["first_eval_date"]) + [end],
                y=list(fr["ability"]) + [fr["ability"].iloc[-1]],
                name="frontier (best to date)",
                mode="lines",
                line=dict(shape="hv", dash="dash", color="black", width=2),
                hoverinfo="skip",
            )
        )
    for b in view.breakthroughs.itertuples():
        fig.add_annotation(
            x=b.date,
            y=b.ability,
            text=f"breakthrough +{b.ability_gain:.2f}",
            showarrow=True,
            arrowhead=2,
            ay=-30,
            font=dict(size=10),
        )
    fig.update_layout(
        title=f"IRT ability over time ({view.model}, 90% intervals)",
        xaxis_title="evaluation date",
        yaxis_title="ability (logits)",
        legend_title="family",
        margin=dict(t=50),
    )
    return fig


def fig_raw_over_time(view: ProgressView) -> go.Figure:
    """Raw pass rate per version over time: misleading when the task set changes between dates."""
    fig = go.Figure()
    ab = view.abilities
    if ab.empty:
        return fig
    _family_traces(fig, ab.assign(raw_pct=100 * ab["raw_score"]), y="raw_pct", with_interval=False)
    fig.update_layout(
        title="Raw pass rate over time (tasks differ between dates)",
        xaxis_title="evaluation date",
        yaxis_title="pass rate (%)",
        showlegend=False,
        margin=dict(t=50),
    )
    return fig


def fig_wright_map(view: ProgressView) -> go.Figure:
    """Abilities (left) and task difficulties (right) on one logit scale."""
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.02,
        subplot_titles=("agents (ability)", "tasks (difficulty)"),
    )
    if view.fit is None:
        return fig
    ab, items = view.abilities, view.fit.items
    fig.add_trace(go.Histogram(y=ab["ability"], name="agents", nbinsy=30, marker_color="#1f77b4"), 1, 1)
    fig.add_trace(go.Histogram(y=items["difficulty"], name="tasks", nbinsy=40, marker_color="#ff7f0e"), 1, 2)
    fig.update_xaxes(autorange="reversed", row=1, col=1, title_text="agents")
    fig.update_xaxes(title_text="tasks", row=1, col=2)
    fig.update_layout(title="Wright map", yaxis_title="logits", showlegend=False, bargap=0.05, margin=dict(t=60))
    return fig


def fig_icc(view: ProgressView, task_id: str) -> go.Figure:
    """Item characteristic curve of one task with every agent placed on it (filled = passed some sample)."""
    fig = go.Figure()
    if view.fit is None or task_id not in set(view.fit.items["task_id"]):
        return fig
    item = view.fit.items.set_index("task_id").loc[task_id]
    ab = view.abilities
    lo, hi = min(ab["ability"].min(), item["difficulty"]) - 1, max(ab["ability"].max(), item["difficulty"]) + 1
    grid = np.linspace(lo, hi, 200)
    fig.add_trace(
        go.Scatter(x=grid, y=icc(grid, item["difficulty"], item["discrimination"]), mode="lines", name="P(pass)")
    )
    fig.add_trace(
        go.Scatter(
            x=ab["ability"],
            y=icc(ab["ability"].to_numpy(), item["difficulty"], item["discrimination"]),
            mode="markers",
            name="agents",
            customdata=ab[["subject"]],
            hovertemplate="%{customdata[0]}<br>ability %{x:.2f}<br>P %{y:.2f}<extra></extra>",
        )
    )
    fig.add_vline(x=item["difficulty"], line_dash="dot", annotation_text="difficulty")
    fig.update_layout(
        title=f"Item characteristic curve: {task_id} (pass rate {item['pass_rate']:.0%}, "
        f"flag {item['flag'] or 'none'})",
        xaxis_title="ability",
        yaxis_title="P(pass)",
        yaxis_range=[0, 1],
        margin=dict(t=50),
    )
    return fig

"""The leaderboard's figures (Plotly): the ranking metric with its interval per run, and cost against accuracy
with the Pareto frontier. Run ids in custom_data, so a click can drill down."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.figures import axis_fraction, axis_range, place_labels, step_boxes
from analytics.runs import unique_run_labels


def fig_pass_at_1(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Horizontal dot-and-whisker chart of the ranking metric per run (Pass@1 with its clustered Wilson interval,
    or mean score with its bootstrap interval); humans drawn apart; run ids in custom_data."""
    by_score = "metric" in df and not df.empty and str(df["metric"].iloc[0]) == "mean_score"
    value, ci_key, name = ("mean_score", "mean_score", "Mean score") if by_score else ("pass_at_1", "pass@1", "Pass@1")
    part = df.sort_values(value)
    full = unique_run_labels(part)
    fig = go.Figure()
    for is_human, group in part.groupby(part["kind"] == "human", sort=False):
        lo = np.array([c[ci_key][0] for c in group["ci95"]])
        hi = np.array([c[ci_key][1] for c in group["ci95"]])
        p = group[value].to_numpy(dtype=float)
        labels = [full[r] for r in group["run_id"]]
        fig.add_trace(
            go.Scatter(
                x=100 * p,
                y=labels,
                mode="markers",
                name="human baseline" if is_human else "agents",
                marker={
                    "size": 10,
                    "symbol": "diamond" if is_human else "circle",
                    "color": "#7f7f7f" if is_human else "#1f77b4",
                },
                error_x={"type": "data", "symmetric": False, "array": 100 * (hi - p), "arrayminus": 100 * (p - lo)},
                customdata=np.stack([group["run_id"], group["n_tasks"]], axis=1),
                hovertemplate="%{y}<br>" + name + " %{x:.1f}%<br>tasks %{customdata[1]}<br>run %{customdata[0]}"
                "<extra></extra>",
            )
        )
    fig.update_layout(
        title=title or f"{name} with its 95% interval",
        xaxis_title=f"{name} (%)",
        xaxis_range=[0, 100],
        height=120 + 28 * len(part),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def fig_cost_accuracy(df: pd.DataFrame) -> go.Figure:
    """HAL's view: mean cost per task (x) against the ranking metric (y) of the ranked runs with a cost; the
    Pareto-optimal runs (``is_pareto_optimal``) joined by the frontier line and labelled, the dominated ones grey.
    Run ids in custom_data. A log x axis when costs span more than 20x (major ticks only)."""
    part = df[df["is_pareto_optimal"].notna()].copy()
    by_score = not part.empty and str(part["metric"].iloc[0]) == "mean_score"
    name = "Mean score" if by_score else "Pass@1"
    part["x"] = part["mean_cost_usd"].astype(float)
    part["y"] = 100 * part["metric_value"].astype(float)
    labels = unique_run_labels(part)
    part["label"] = [labels[str(r)] for r in part["run_id"]]
    positive = part["x"][part["x"] > 0]
    is_log = len(positive) == len(part) and len(part) > 1 and positive.max() / positive.min() > 20
    # explicit ranges, the labels placed on them: room above the best run for its name
    x_range = axis_range(part["x"], log=is_log, floor=None if is_log else 0.0)
    y_range = axis_range(part["y"], head=0.12)
    part["text"], part["where"] = _frontier_labels(part, x_range, y_range, is_log=is_log)
    fig = go.Figure()
    for is_optimal, group in part.groupby(part["is_pareto_optimal"].astype(bool), sort=True):
        group = group.sort_values("x")
        fig.add_trace(
            go.Scatter(
                x=group["x"],
                y=group["y"],
                mode="lines+markers+text" if is_optimal else "markers",
                line={"color": "#1f77b4", "width": 2, "shape": "hv"} if is_optimal else None,
                text=group["text"] if is_optimal else None,
                textposition=group["where"] if is_optimal else None,
                name="Pareto frontier" if is_optimal else "dominated",
                marker={"size": 11 if is_optimal else 8, "color": "#1f77b4" if is_optimal else "#adb5bd"},
                customdata=np.stack([group["run_id"], group["label"], group["n_tasks"]], axis=1),
                hovertemplate="%{customdata[1]}<br>$%{x:.4f} per task<br>" + name + " %{y:.1f}%<br>"
                "tasks %{customdata[2]}<br>run %{customdata[0]}<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"Cost vs {name}: the Pareto frontier (HAL)",
        xaxis={
            "title": "Mean cost per task (USD)",
            "type": "log" if is_log else "linear",
            "dtick": 1 if is_log else None,
            "rangemode": None if is_log else "nonnegative",  # a cost is never below $0 (one run drew -0.5 to 1)
            "range": list(x_range),
        },
        yaxis={"title": f"{name} (%)", "range": list(y_range)},
        height=480,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


COST_ACCURACY_PLOT_PX = (900.0, 340.0)  # the chart's plot area on the page (480 px high, legend below)


def _frontier_labels(
    part: pd.DataFrame, x_range: tuple[float, float], y_range: tuple[float, float], *, is_log: bool
) -> tuple[list[str], list[str]]:
    """The frontier runs' names placed clear of each other, of every marker and of the frontier's step line
    (``analytics.figures.place_labels``; a label to the left of the cheapest run ran off the chart, one to the
    right of the others crossed the line); the dominated runs unlabelled."""
    xs = axis_fraction(part["x"], log=is_log, span=x_range)
    ys = axis_fraction(part["y"], span=y_range)
    optimal = part["is_pareto_optimal"].astype(bool).to_numpy()
    order = np.argsort(np.where(optimal, xs, np.inf), kind="mergesort")[: int(optimal.sum())]
    line = step_boxes(xs[order], ys[order], plot=COST_ACCURACY_PLOT_PX)
    names = [str(n) if o else "" for n, o in zip(part["label"], optimal, strict=True)]
    return place_labels(xs, ys, names, plot=COST_ACCURACY_PLOT_PX, obstacles=line)

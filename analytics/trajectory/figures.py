"""Trajectory figures: coverage per level for each run (AD-Bench Figure 4) and Pass@1 against coverage (Figure 3)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.trajectory.compute import EXTRA, MATCHED, MISSING, Fit

OP_COLOURS = {MATCHED: "#2e7d32", MISSING: "#c62828", EXTRA: "#ef6c00"}


LEVEL_STYLE = (
    ("#0072B2", "circle"),
    ("#E69F00", "diamond"),
    ("#009E73", "square"),
    ("#CC79A7", "triangle-up"),
    ("#D55E00", "x"),
    ("#56B4E9", "star"),
)


def fig_coverage_by_level(by_level: pd.DataFrame) -> go.Figure:
    """Coverage per level for each run (AD-Bench Figure 4): one row per run (agent · run id), one marker per level,
    so 50 runs stay readable; rows sorted by mean coverage; run ids in custom_data."""
    fig = go.Figure()
    data = by_level.assign(label=by_level["agent"].astype(str) + " · " + by_level["run_id"].astype(str))
    order = data.groupby("label", sort=False)["coverage"].mean().sort_values(kind="stable").index.tolist()
    for i, (level, g) in enumerate(data.groupby("level", sort=True)):
        color, symbol = LEVEL_STYLE[i % len(LEVEL_STYLE)]
        fig.add_scatter(
            x=g["coverage"] * 100,
            y=g["label"],
            mode="markers",
            name=str(level),
            marker={"size": 10, "color": color, "symbol": symbol, "line": {"width": 1, "color": "white"}},
            customdata=np.column_stack([g["run_id"], g["level"]]),
            hovertemplate="%{y}<br>" + str(level) + ": %{x:.1f}%<extra></extra>",
        )
    fig.update_layout(
        xaxis_title="Trajectory coverage (%)",
        xaxis_range=[-2, 102],
        yaxis={"categoryorder": "array", "categoryarray": order, "title": None},
        legend_title="Level",
        height=160 + 24 * len(order),
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
    )
    return fig


def fig_pass_vs_coverage(by_level: pd.DataFrame, fits: Sequence[Fit]) -> go.Figure:
    """Scatter of Pass@1 against coverage per level with fitted lines and r (AD-Bench Figure 3)."""
    fig = go.Figure()
    by_fit = {f.level: f for f in fits}
    if "is_comparable" in by_level:  # the points the fits used
        by_level = by_level[by_level["is_comparable"].astype(bool)]
    for level, g in by_level.groupby("level", sort=True):
        fit = by_fit.get(str(level))
        label = f"{level} (r = {fit.r:.3f})" if fit and np.isfinite(fit.r) else str(level)
        if fit and np.isfinite(fit.r_lo):
            label += f", 95% CI {fit.r_lo:.2f} to {fit.r_hi:.2f}, {fit.n} runs"
        fig.add_scatter(
            x=g["coverage"] * 100,
            y=g["pass_at_1"] * 100,
            mode="markers",
            name=label,
            text=g["agent"],
            customdata=np.column_stack([g["run_id"], g["level"]]),
            hovertemplate="%{text}<br>coverage %{x:.1f}%<br>Pass@1 %{y:.1f}%<extra></extra>",
        )
        if fit and np.isfinite(fit.slope):
            xs = np.array([g["coverage"].min(), g["coverage"].max()])
            fig.add_scatter(
                x=xs * 100,
                y=(fit.intercept + fit.slope * xs) * 100,
                mode="lines",
                name=f"{level} fit",
                showlegend=False,
                hoverinfo="skip",
            )
    fig.update_layout(xaxis_title="Trajectory coverage (%)", yaxis_title="Pass@1 (%)")
    return fig

"""errors, drawn: code shares per run and codes within the same failed attempt (Plotly)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.errors.compute import code_order

# one colour per code, kept across charts, no two alike (Okabe-Ito's colour-blind-safe set, then distinct extras)
CODE_COLORS = {
    "TE": "#0072B2",
    "PE": "#E69F00",
    "DE": "#009E73",
    "CE": "#CC79A7",
    "HAL": "#D55E00",
    "LC": "#56B4E9",
    "TOOL": "#999999",
    "NO_TOOL": "#000000",
    "REDUNDANT": "#F0E442",
}
OTHER_COLORS = ("#8c564b", "#7f3c8d", "#11a579", "#3969ac", "#f2b701", "#e73f74", "#80ba5a", "#e68310")


def fig_error_shares(long: pd.DataFrame, *, title: str = "Share of error labels per run"):  # -> go.Figure
    """Stacked horizontal bars of code shares per run; ``custom_data`` = (run_id, code)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    others = iter(OTHER_COLORS * 8)
    for code in code_order(list(long["code"].unique())):
        part = long[long["code"] == code]
        fig.add_trace(
            go.Bar(
                y=part["run"],
                x=100 * part["share"],
                name=code,
                orientation="h",
                marker={"color": CODE_COLORS.get(code) or next(others)},
                customdata=np.stack([part["run_id"], part["code"], part["n"]], axis=1),
                hovertemplate="%{y}<br>%{customdata[1]}: %{customdata[2]} attempts (%{x:.1f}%)<extra></extra>",
            )
        )
    n_runs = long["run_id"].nunique()
    height = 140 + 30 * n_runs
    fig.update_layout(
        barmode="stack",
        title=title,
        xaxis_title="share of labels on failed attempts (%)",
        height=height,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        # the codes in the bars' order (left to right), 70 px under the plot whatever its height (a fifth of the
        # plot's height left 150 px of white between the axis and the legend with 35 runs)
        legend={"orientation": "h", "y": -70 / (height - 90), "traceorder": "normal"},
    )
    return fig


def fig_cooccurrence(df: pd.DataFrame, *, title: str = "Codes within the same failed attempt"):  # -> go.Figure
    """Heatmap of code pairs (diagonal: attempts with the code); ``custom_data`` = (code_a, code_b)."""
    import plotly.graph_objects as go

    codes = code_order(list(set(df["code_a"]) | set(df["code_b"])))
    matrix = (
        df.pivot_table(index="code_a", columns="code_b", values="n", aggfunc="sum")
        .reindex(index=codes, columns=codes)
        .fillna(0)
        .astype(int)
    )
    custom = np.array([[[a, b] for b in codes] for a in codes], dtype=object)
    fig = go.Figure(
        go.Heatmap(
            z=matrix.to_numpy(),
            x=codes,
            y=codes,
            customdata=custom,
            colorscale="Blues",
            text=matrix.to_numpy(),
            texttemplate="%{text}",
            hovertemplate="%{y} with %{x}: %{z} failed attempts<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        height=220 + 30 * len(codes),
        yaxis_autorange="reversed",
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig

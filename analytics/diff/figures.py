"""Figures of the diff of two runs."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analytics.formatting import slice_label


def fig_deltas(deltas: pd.DataFrame) -> go.Figure:
    """Forest plot of Pass@1 deltas (B - A) per slice with intervals; slice names in custom_data."""
    d = deltas.iloc[::-1]
    fig = go.Figure(
        go.Scatter(
            x=d["delta"] * 100,
            y=d["slice"].map(slice_label),
            mode="markers",
            customdata=d[["slice"]].to_numpy(),
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (d["hi"] - d["delta"]) * 100,
                "arrayminus": (d["delta"] - d["lo"]) * 100,
            },
            hovertemplate="%{y}: %{x:+.1f} pp<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_dash="dot")
    fig.update_layout(
        xaxis_title="Pass@1 change, B - A (percentage points)",
        yaxis_title=None,
        height=max(200, 28 * len(d) + 60),
        margin={"t": 20},  # no title: the page's heading names it (the default 100 px stood empty above the chart)
    )
    return fig

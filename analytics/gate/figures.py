"""The gate's figure (Plotly): both e-values of the sequential test against the tasks read."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from analytics import compare
from analytics.gate.compute import Sequential


def fig_sequential(seq: Sequential, *, alpha: float = compare.ALPHA) -> go.Figure:
    """Both e-values against the tasks read (log scale), with the 1/alpha line where the gate stops."""
    x = np.arange(1, len(seq.path_worse) + 1)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=seq.path_worse, mode="lines", name="evidence B is worse than A"))
    fig.add_trace(
        go.Scatter(
            x=x, y=seq.path_not_worse, mode="lines", name=f"evidence B is not {100 * seq.stop_delta:.3g} pp worse"
        )
    )
    fig.add_hline(y=1.0 / alpha, line_dash="dot", annotation_text=f"stop at {1 / alpha:.3g}")
    fig.update_layout(
        title=f"Sequential gate: {seq.verdict} after {seq.n_used} of {seq.n_total} tasks ({seq.order})",
        xaxis_title="tasks read",
        yaxis={"title": "e-value", "type": "log"},
        height=360,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig

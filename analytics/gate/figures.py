"""The gate's figure (Plotly): both e-values of the sequential test against the tasks read."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from analytics import compare
from analytics.gate.compute import Sequential

MAX_BUCKETS = 1000  # a path longer than this many points is drawn from each bucket's lowest and highest points


def drawn_points(*paths: np.ndarray, buckets: int = MAX_BUCKETS) -> np.ndarray:
    """Positions of the points a chart of ``paths`` (equal lengths) draws: all of them up to ``2 * buckets``, else
    the first, the last and, in each of ``buckets`` equal runs of positions, where each path is lowest and highest
    (min-max decimation: the line keeps its extremes at a width no screen exceeds)."""
    n = len(paths[0]) if paths else 0
    if n <= 2 * buckets:
        return np.arange(n)
    edges = np.linspace(0, n, buckets + 1).astype(int)
    keep = [np.array([0, n - 1])]
    for path in paths:
        y = np.asarray(path, dtype=float)
        for fn in (np.minimum, np.maximum):
            # the position of each bucket's extreme: reduceat gives the value, the first position holding it wins
            best = fn.reduceat(y, edges[:-1])
            at = np.flatnonzero(y == np.repeat(best, np.diff(edges)))
            bucket = np.searchsorted(edges, at, side="right") - 1
            keep.append(at[np.unique(bucket, return_index=True)[1]])
    return np.unique(np.concatenate(keep))


def fig_sequential(seq: Sequential, *, alpha: float = compare.ALPHA) -> go.Figure:
    """Both e-values against the tasks read (log scale), with the 1/alpha line where the gate stops. A path of
    more than 2,000 tasks is drawn by ``drawn_points`` (the download keeps every task: ``sequential_frame``)."""
    worse, not_worse = np.asarray(seq.path_worse, dtype=float), np.asarray(seq.path_not_worse, dtype=float)
    at = drawn_points(worse, not_worse)
    x = at + 1
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=worse[at], mode="lines", name="evidence B is worse than A"))
    fig.add_trace(
        go.Scatter(x=x, y=not_worse[at], mode="lines", name=f"evidence B is not {100 * seq.stop_delta:.3g} pp worse")
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

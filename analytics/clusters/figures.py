"""Failure clusters, drawn: failed attempts per run split by cluster (Plotly)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analytics.clusters.report import cut_at_word

# the largest clusters get a colour each (Okabe-Ito's colour-blind-safe set, then distinct extras); the rest share
# one grey bar, so a chart of 100+ clusters still reads
LEGEND_CHARS = 60  # a legend entry's most characters (cut at a word, the whole name in the hover)
CLUSTER_COLORS = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442",
    "#7f3c8d", "#80ba5a",
)  # fmt: skip
OTHER_CLUSTERS_COLOR = "#c8c8c8"


def fig_clusters_by_run(long: pd.DataFrame, *, max_clusters: int = len(CLUSTER_COLORS)) -> Any:
    """Stacked bars: failed attempts per run, split by cluster (a fix shows as its cluster shrinking). The
    ``max_clusters`` largest clusters are drawn apart, largest at the bottom; the others share one grey bar."""
    import plotly.graph_objects as go

    fig = go.Figure()
    sizes = long.groupby(["cluster_id", "label"])["n_attempts"].sum().sort_values(ascending=False, kind="mergesort")
    top = list(sizes.index[:max_clusters])
    runs = list(dict.fromkeys(long["run_id"]))
    for (cid, label), color in zip(top, CLUSTER_COLORS, strict=False):
        g = long[long["cluster_id"] == cid]
        fig.add_bar(
            x=g["run_id"],
            y=g["n_attempts"],
            name=cut_at_word(f"{cid}: {label}", LEGEND_CHARS),
            marker_color=color,
            customdata=np.column_stack([g["run_id"], np.full(len(g), cid), np.full(len(g), f"{cid}: {label}")]),
            hovertemplate="run %{x}<br>%{y} failed attempts<extra>%{customdata[2]}</extra>",
        )
    rest = long[~long["cluster_id"].isin([cid for cid, _ in top])]
    if not rest.empty:
        per_run = rest.groupby("run_id", sort=False)["n_attempts"].sum().reindex(runs).dropna()
        fig.add_bar(
            x=per_run.index,
            y=per_run.to_numpy(),
            name=f"{len(sizes) - len(top)} smaller clusters",
            marker_color=OTHER_CLUSTERS_COLOR,
            hovertemplate="run %{x}<br>%{y} failed attempts in smaller clusters<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        xaxis={"title": "run", "categoryorder": "array", "categoryarray": runs},
        yaxis_title="failed attempts",
        # above the bars, in rows (Plotly makes room for it): on their right, names of up to 60 characters left the
        # bars half the chart's width for dozens of runs
        legend={"title": "cluster (largest first)", "traceorder": "normal", "orientation": "h", "y": 1.02},
        legend_yanchor="bottom",
        height=540,  # the legend's rows and the runs' names take a third of it
        margin={"l": 10, "r": 10, "t": 20, "b": 40},  # no title: Plotly's default top margin of 100 px is a blank band
    )
    return fig

"""Plotly figures of GEM-Bench: quality against cost, metric densities, people against the LLM judge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.figures import axis_fraction, place_labels
from analytics.gem.formulas import DIMENSIONS
from analytics.gem.report import GemView


def quality_cost(v: GemView) -> pd.DataFrame:
    """Per dataset x solution (k = 1): qualitative and quantitative overall against the cost overall."""
    keys = ["dataset", "solution", "k"]
    q = v.qualitative[keys + ["overall"]].rename(columns={"overall": "qualitative"})
    n = v.quantitative[keys + ["overall"]].rename(columns={"overall": "quantitative"})
    c = v.cost[keys + ["overall", "ittft", "ottft"]].rename(columns={"overall": "cost"})
    df = c.merge(q, on=keys, how="left").merge(n, on=keys, how="left")
    return df[df["k"] == 1].reset_index(drop=True)


QUALITY_COST_PLOT_PX = (700.0, 340.0)  # the chart's plot area on the page (460 px high, the page's width)


def fig_quality_cost(df: pd.DataFrame, *, quality: str = "qualitative") -> go.Figure:
    """Quality (0-100) against cost (0.5 x ITTFT + OTTFT tokens), one marker per solution, one symbol per dataset;
    each solution's name placed clear of the other names and markers (``analytics.figures.place_labels``: two
    solutions of one cost and quality wrote their names over each other), left out where there is no room."""
    fig = go.Figure()
    symbols = ["circle", "square", "diamond", "triangle-up", "x", "star"]
    texts, where = place_labels(
        axis_fraction(df["cost"]),
        axis_fraction(df[quality]),
        df["solution"].astype(str).tolist(),
        plot=QUALITY_COST_PLOT_PX,
    )
    placed = pd.DataFrame({"text": texts, "where": where}, index=df.index)
    for i, (dataset, part) in enumerate(df.groupby("dataset", sort=True)):
        fig.add_trace(
            go.Scatter(
                x=part["cost"],
                y=part[quality],
                mode="markers+text",
                name=str(dataset),
                text=placed.loc[part.index, "text"].tolist(),
                textposition=placed.loc[part.index, "where"].tolist(),
                marker={"size": 12, "symbol": symbols[i % len(symbols)]},
                customdata=np.stack([part["dataset"], part["solution"]], axis=1),
                hovertemplate="%{customdata[1]} on %{customdata[0]}<br>cost %{x:.0f} tokens<br>"
                + quality
                + " %{y:.2f}<extra></extra>",
            )
        )
    fig.update_layout(
        xaxis_title="cost: 0.5 x ITTFT + OTTFT (extra tokens)",
        yaxis_title=f"{quality} overall (0-100)",
        legend_title="dataset",
        margin={"t": 40},
        height=460,
    )
    return fig


def density(v: GemView) -> pd.DataFrame:
    """Scores by k (ads per response) for solutions run with several k on a dataset (Figure 3)."""
    q = v.qualitative
    multi = q.groupby(["dataset", "solution"])["k"].nunique()
    multi = multi[multi > 1].reset_index()[["dataset", "solution"]]
    if multi.empty:
        return pd.DataFrame(columns=["dataset", "solution", "k", *DIMENSIONS, "overall"])
    df = q.merge(multi, on=["dataset", "solution"])
    return df[["dataset", "solution", "k", *DIMENSIONS, "overall"]].sort_values(["dataset", "solution", "k"])


def fig_density(df: pd.DataFrame) -> go.Figure:
    """One line per judge dimension against k."""
    fig = go.Figure()
    for dim in (*DIMENSIONS, "overall"):
        fig.add_trace(
            go.Scatter(
                x=df["k"],
                y=df[dim],
                mode="lines+markers",
                name=dim,
                customdata=np.stack([df["dataset"], df["solution"]], axis=1),
                line={"width": 4 if dim == "overall" else 2},
            )
        )
    title = ", ".join(sorted({f"{s} on {d}" for d, s in zip(df["dataset"], df["solution"], strict=True)}))
    fig.update_layout(
        title=f"Quality-density trade-off: {title}",
        xaxis_title="k (ads per response)",
        yaxis_title="judge score (0-100)",
        xaxis={"dtick": 1},
        margin={"t": 50},
    )
    return fig


def fig_human_llm(df: pd.DataFrame) -> go.Figure:
    """Figure 4: people and the judge per dimension and solution (grouped bars)."""
    fig = go.Figure()
    for solution, part in df.groupby("solution", sort=True):
        for who in ("human", "llm"):
            fig.add_trace(
                go.Bar(
                    x=part["dimension"],
                    y=part[who],
                    name=f"{solution} ({who})",
                    customdata=part[["solution"]].to_numpy(),
                )
            )
    fig.update_layout(barmode="group", yaxis_title="mean score (0-90)", margin={"t": 30})
    return fig

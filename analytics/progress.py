"""Progress index views over a stored IRT fit: frontier, velocity, breakthroughs, and their figures.

Everything here reads a stored fit (analytics.irt) and never fits: the Progress page stays fast on a rerun.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analytics import irt
from store import query_df

DAYS_PER_MONTH = 30.4375

RAW_SQL = (
    irt.SUBJECTS_CTE
    + """
SELECT subject, avg(coalesce(a.passed, false)::INTEGER) AS raw_score, count(DISTINCT a.task_id) AS n_tasks_answered
FROM attempts a JOIN subj USING (run_id)
GROUP BY subject
"""
)


@dataclass(frozen=True)
class ProgressView:
    """What the Progress page draws (all frames empty when ``fit`` is None)."""

    benchmark: str
    model: str
    fit: irt.StoredFit | None
    abilities: pd.DataFrame  # one row per agent version, with raw_score and date
    frontier: pd.DataFrame  # record-setting versions (best ability to date)
    velocity: pd.DataFrame  # per family: ability gained per month
    breakthroughs: pd.DataFrame  # consecutive versions whose 90% intervals do not overlap
    log: pd.DataFrame  # every stored fit of the benchmark (refit log)
    n_subjects_in_data: int
    n_tasks_in_data: int


def progress_view(con: duckdb.DuckDBPyConnection, *, benchmark: str, model: str = "1pl") -> ProgressView:
    """Read the stored fit for ``benchmark`` (current or stale) and derive the progress tables."""
    fit = irt.get_fit(con, benchmark=benchmark, model=model)
    raw = query_df(con, RAW_SQL, [benchmark])
    n_tasks = int(
        query_df(
            con,
            "SELECT count(DISTINCT a.task_id) AS n FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?",
            [benchmark],
        )["n"].iloc[0]
    )
    log = irt.fit_log(con, benchmark=benchmark)
    if fit is None:
        empty = pd.DataFrame()
        return ProgressView(benchmark, model, None, empty, empty, empty, empty, log, len(raw), n_tasks)
    ab = fit.abilities.merge(raw[["subject", "raw_score"]], on="subject", how="left")
    ab["first_eval_date"] = pd.to_datetime(ab["first_eval_date"])
    ab["family"] = ab["family"].fillna(ab["agent"])
    ab = ab.sort_values(["first_eval_date", "subject"]).reset_index(drop=True)
    return ProgressView(
        benchmark, model, fit, ab, frontier(ab), velocity(ab), breakthroughs(ab), log, len(raw), n_tasks
    )


def shown(
    view: ProgressView,
    *,
    agents: Sequence[str] = (),
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> ProgressView:
    """The view restricted to the versions of ``agents`` (all when empty) first evaluated within the dates, with its
    frontier, velocity and breakthroughs recomputed over them. The scale is the fit's, made from every run of the
    benchmark (a scale needs all of them); the filters choose what is shown on it."""
    if view.fit is None or view.abilities.empty or not (agents or date_from or date_to):
        return view
    ab = view.abilities
    keep = ab["agent"].isin(list(agents)) if agents else pd.Series(True, index=ab.index)
    dates = ab["first_eval_date"].dt.date
    if date_from is not None:
        keep &= dates >= date_from
    if date_to is not None:
        keep &= dates <= date_to
    ab = ab[keep.fillna(False)].reset_index(drop=True)
    return dataclasses.replace(
        view, abilities=ab, frontier=frontier(ab), velocity=velocity(ab), breakthroughs=breakthroughs(ab)
    )


def frontier(abilities: pd.DataFrame) -> pd.DataFrame:
    """The versions that set a new best ability (flagged agents are not ranked), in date order."""
    if abilities.empty:
        return abilities.copy()
    ranked = abilities[~abilities["is_flagged"]].sort_values(["first_eval_date", "ability"])
    best = ranked["ability"].cummax()
    out = ranked[ranked["ability"] >= best].copy()
    out = out[out["ability"] > out["ability"].shift(1).cummax().fillna(-np.inf)]
    return out.reset_index(drop=True)


def velocity(abilities: pd.DataFrame) -> pd.DataFrame:
    """Least-squares slope of ability against time (per month) for each family with 2+ dated versions,
    plus a ``(frontier)`` row over the record-setting versions."""
    cols = ["family", "n_versions", "first_date", "last_date", "ability_per_month", "ability_gain"]
    if abilities.empty:
        return pd.DataFrame(columns=cols)
    ranked = abilities[~abilities["is_flagged"] & abilities["first_eval_date"].notna()]
    groups = [(fam, g) for fam, g in ranked.groupby("family", sort=True)]
    groups.append(("(frontier)", frontier(abilities)))
    rows = []
    for fam, g in groups:
        if len(g) < 2 or g["first_eval_date"].nunique() < 2:
            continue
        months = (g["first_eval_date"] - g["first_eval_date"].min()).dt.days / DAYS_PER_MONTH
        slope = float(np.polyfit(months.to_numpy(float), g["ability"].to_numpy(float), 1)[0])
        rows.append(
            {
                "family": fam,
                "n_versions": len(g),
                "first_date": g["first_eval_date"].min().date(),
                "last_date": g["first_eval_date"].max().date(),
                "ability_per_month": slope,
                "ability_gain": float(
                    g.sort_values("first_eval_date")["ability"].iloc[-1]
                    - g.sort_values("first_eval_date")["ability"].iloc[0]
                ),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def breakthroughs(abilities: pd.DataFrame) -> pd.DataFrame:
    """Consecutive versions of a family (by date) whose 90% intervals do not overlap, rising."""
    cols = ["family", "from_subject", "to_subject", "date", "ability_gain", "ability", "months"]
    if abilities.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    ranked = abilities[~abilities["is_flagged"]]
    for fam, g in ranked.sort_values("first_eval_date").groupby("family", sort=True):
        for prev, cur in zip(g.iloc[:-1].itertuples(), g.iloc[1:].itertuples(), strict=True):
            if cur.ability_lo > prev.ability_hi:
                months = (cur.first_eval_date - prev.first_eval_date).days / DAYS_PER_MONTH
                rows.append(
                    {
                        "family": fam,
                        "from_subject": prev.subject,
                        "to_subject": cur.subject,
                        "date": cur.first_eval_date,
                        "ability_gain": cur.ability - prev.ability,
                        "ability": cur.ability,
                        "months": months,
                    }
                )
    return pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------


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


def icc(ability: np.ndarray, difficulty: float, discrimination: float) -> np.ndarray:
    """P(pass) of the 2PL/1PL item characteristic curve."""
    return 1.0 / (1.0 + np.exp(-discrimination * (ability - difficulty)))


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

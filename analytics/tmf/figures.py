"""Plotly figures of a TMF result: the chart (regions, frontier, points, human), small multiples per slice, the movie
over periods, and the chart and page as exported."""

from __future__ import annotations

import datetime as dt
import functools
import html
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.figures import place_labels as shared_place_labels
from analytics.tmf.analysis import TmfResult
from analytics.tmf.model import STAGE_NAMES, supply_cost
from analytics.tmf.report import (
    DEMO_CAVEAT,
    DOLLAR_DEFINITIONS,
    assumptions_sentence,
    fmt_perf,
    fmt_x,
    headline,
    points_table,
)

COLORS = {
    "frontier": "#1f5fbf",
    "other": "#9aa4b2",
    "human": "#d9480f",
    "market": "rgba(47,158,68,0.10)",
    "tech": "rgba(31,95,191,0.10)",
    "value": "rgba(47,158,68,0.55)",
    "accept": "#2f9e44",
    "hull": "#7048e8",
    "no_cost": "#c92a2a",
}


STAGE_COLORS = {1: "#c92a2a", 2: "#e67700", 3: "#2f9e44"}


# them from ``go.Scatter`` objects, ``update_layout``/``update_xaxes`` calls and ``add_trace(row=, col=)`` validated
# every property several times and copied the template on each layout update (0.1-0.2 s per figure at 1M attempts).
Trace = dict[str, Any]


@functools.cache
def _template() -> dict[str, Any]:
    """Plotly's ``plotly_white`` template, keeping only the defaults of the one trace type drawn here (scatter):
    the same look, at half the cost of validating and copying the whole template for every figure."""
    import plotly.io as pio

    white = pio.templates["plotly_white"].to_plotly_json()
    return {"layout": white["layout"], "data": {"scatter": white["data"]["scatter"]}}


def _hover(df: pd.DataFrame, result: TmfResult) -> list[str]:
    u, perf = result.unit, result.performance
    lo, hi = ("cost_lo", "cost_hi") if result.x_col == "cost_per_task_usd" else ("latency_lo", "latency_hi")
    cols = [
        "agent",
        "agent_version",
        "run_id",
        "eval_date",
        result.x_col,
        lo,
        hi,
        "performance",
        "perf_lo",
        "perf_hi",
        "n_tasks",
        "is_repriced",
    ]
    return [
        f"<b>{agent}</b> {'' if pd.isna(version) else version}<br>"
        f"run {run_id} · {date}<br>"
        f"{'cost' if u == 'USD' else 'latency'}/task {fmt_x(x, u)} [{fmt_x(x_lo, u)}, {fmt_x(x_hi, u)}]<br>"
        f"performance {fmt_perf(p, perf)} [{fmt_perf(p_lo, perf)}, {fmt_perf(p_hi, perf)}]"
        f"<br>{int(n_tasks)} tasks{' · repriced' if repriced else ''}"
        for agent, version, run_id, date, x, x_lo, x_hi, p, p_lo, p_hi, n_tasks, repriced in zip(
            *(df[c].tolist() for c in cols), strict=True
        )
    ]


def _rows(result: TmfResult, run_ids: Sequence[str]) -> pd.DataFrame:
    """The points of ``run_ids``, in that order."""
    return result.points.iloc[pd.Index(result.points["run_id"]).get_indexer(list(run_ids))]


def _scale(result: TmfResult) -> float:
    return 1.0 if result.performance == "irt" else 100.0


def _x_range(result: TmfResult) -> tuple[float, float]:
    pts = result.points[result.points["has_cost"] & (result.points["kind"] != "human")]
    xs = list(pts[result.x_col].astype(float))
    if result.human is not None and result.human.x:
        xs.append(result.human.x)
    xs = [v for v in xs if v > 0 and math.isfinite(v)] or [0.01, 1.0]
    return math.log10(min(xs)) - 0.4, math.log10(max(xs)) + 0.4


def _y_range(result: TmfResult) -> tuple[float, float]:
    if result.performance != "irt":
        return 0.0, 1.0
    ys = list(result.points["performance"].dropna()) + ([result.human.performance] if result.human else [])
    ys = [v for v in ys if math.isfinite(v)]
    return (min(ys) - 0.3, max(ys) + 0.3) if ys else (-1.0, 1.0)


def _region_traces(result: TmfResult, row: int | None = None) -> list[Trace]:
    """Market-acceptable region, tech-accessible region and their intersection as filled polygons."""
    acc = result.acceptance
    x0, x1 = (10**v for v in _x_range(result))
    y0, y1 = _y_range(result)
    s = _scale(result)
    p = np.linspace(max(y0, acc.p0) if acc else y0, y1, 240)
    region = {"type": "scatter", "fill": "toself", "mode": "none", "hoverinfo": "skip"}
    traces: list[Trace] = []
    if acc is not None:
        ax = np.clip(acc.cost(p), x0, x1)
        traces.append(
            {
                **region,
                "x": np.concatenate([[x0], ax, [x0]]),
                "y": np.concatenate([[p[0] * s], p * s, [p[-1] * s]]),
                "fillcolor": COLORS["market"],
                "name": "Market-acceptable region",
                "legendgroup": "market",
                "showlegend": row in (None, 1),
            }
        )
    if result.frontier:
        front = _rows(result, result.frontier)
        sx = supply_cost(p, front[result.x_col].to_numpy(float), front["performance"].to_numpy(float), supply="step")
        keep = np.isfinite(sx)
        traces.append(
            {
                **region,
                "x": np.concatenate([sx[keep], [x1, x1]]),
                "y": np.concatenate([p[keep] * s, [p[keep][-1] * s, p[0] * s]]),
                "fillcolor": COLORS["tech"],
                "name": "Tech-accessible region",
                "legendgroup": "tech",
                "showlegend": row in (None, 1),
            }
        )
        if acc is not None:
            traces.extend(_intersection(p, sx, acc.cost(p), s, show=row in (None, 1)))
    return traces


def _intersection(p: np.ndarray, sx: np.ndarray, ax: np.ndarray, s: float, *, show: bool) -> list[Trace]:
    inside = np.isfinite(sx) & (ax > sx)
    out, start, first = [], None, True
    for i, flag in enumerate([*inside, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            seg = slice(start, i)
            out.append(
                {
                    "type": "scatter",
                    "x": np.concatenate([sx[seg], ax[seg][::-1]]),
                    "y": np.concatenate([p[seg] * s, p[seg][::-1] * s]),
                    "fill": "toself",
                    "mode": "none",
                    "fillcolor": COLORS["value"],
                    "hoverinfo": "skip",
                    "name": "AI value (intersection)",
                    "legendgroup": "value",
                    "showlegend": show and first,
                }
            )
            start, first = None, False
    return out


def _frontier_trace(result: TmfResult, x1: float, *, show: bool) -> Trace | None:
    if not result.frontier:
        return None
    pts = _rows(result, result.frontier)
    s = _scale(result)
    y = pts["performance"].to_numpy(float) * s
    return {
        "type": "scatter",
        "x": np.append(pts[result.x_col].to_numpy(float), x1),
        "y": np.append(y, y[-1]),
        "mode": "lines",
        "line": {"shape": "hv", "color": COLORS["frontier"], "width": 3},
        "name": "Optimal supply curve (Pareto frontier)",
        "legendgroup": "frontier",
        "showlegend": show,
        "hoverinfo": "skip",
    }


def _point_traces(result: TmfResult, *, show: bool, labels: bool) -> list[Trace]:
    s = _scale(result)
    pts = result.points[(result.points["kind"] != "human") & result.points["has_cost"]]
    traces: list[Trace] = []
    for on, color, name in ((False, COLORS["other"], "Other runs"), (True, COLORS["frontier"], "Frontier runs")):
        part = pts[pts["on_frontier"] == on]
        if part.empty:
            continue
        trace: Trace = {
            "type": "scatter",
            "x": part[result.x_col].to_numpy(float),
            "y": part["performance"].to_numpy(float) * s,
            "mode": "markers+text" if on and labels else "markers",
            "textfont": {"size": 11, "color": COLORS["frontier"]},
            "marker": {"size": 11 if on else 8, "color": color, "line": {"width": 1, "color": "white"}},
            "customdata": part[["run_id"]].to_numpy(),
            "hovertext": _hover(part, result),
            "hoverinfo": "text",
            "name": name,
            "legendgroup": name,
            "showlegend": show,
        }
        if on and labels:
            trace["text"], trace["textposition"] = place_labels(part, result, frontier_labels(part, result))
        traces.append(trace)
    if result.performance != "irt" and not pts.empty:
        perf = pts["performance"].to_numpy(float)
        traces.append(
            {
                "type": "scatter",
                "x": pts[result.x_col].to_numpy(float),
                "y": perf * s,
                "mode": "markers",
                "marker": {"size": 0, "opacity": 0},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": (pts["perf_hi"].to_numpy(float) - perf) * s,
                    "arrayminus": (perf - pts["perf_lo"].to_numpy(float)) * s,
                    "color": "rgba(80,80,80,0.35)",
                    "thickness": 1,
                    "width": 0,
                },
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
    return traces


def short_labels(names: Sequence[str]) -> list[str]:
    """Agent names without the words they all share at the start (``HAL Generalist Agent (GPT-5)`` -> ``GPT-5``)."""
    names = [str(n) for n in names]
    if len(names) < 2:
        return names
    prefix = 0
    while all(len(n) > prefix and n[prefix] == names[0][prefix] for n in names):
        prefix += 1
    # only a shared scaffold name followed by "(model)" is dropped; "Agent A"/"Agent B" stay whole
    cut = names[0].rfind("(", 0, prefix) + 1
    out = []
    for n in names:
        label = n[cut:].strip() or n
        if label.count(")") > label.count("("):
            label = label[: label.rfind(")")]
        out.append(label)
    return out


def frontier_labels(part: pd.DataFrame, result: TmfResult) -> list[str]:
    """Short agent names for frontier points; a name used twice gets its month; near-coincident points share
    one label ("Gemini-3-Pro / o3") so the chart stays readable."""
    names = short_labels(list(part["agent"]))
    dates = pd.to_datetime(part["eval_date"])
    counts = pd.Series(names).value_counts()
    names = [f"{n} ({d:%Y-%m})" if counts[n] > 1 and pd.notna(d) else n for n, d in zip(names, dates, strict=True)]
    lx = np.log10(part[result.x_col].to_numpy(dtype=float))
    y = part["performance"].to_numpy(dtype=float) * (0.01 * _scale(result))
    order = np.argsort(lx, kind="mergesort")
    out = list(names)
    for a, b in zip(order[:-1], order[1:], strict=True):
        if abs(lx[b] - lx[a]) < 0.08 and abs(y[b] - y[a]) < 0.03:
            out[b] = f"{out[a]} / {out[b]}"
            out[a] = ""
    return out


def place_labels(part: pd.DataFrame, result: TmfResult, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """``analytics.figures.place_labels`` of the frontier labels, each point placed on the chart's axes (a log cost,
    the performance's range). Returns ``(texts, textpositions)``, one per row of ``part``."""
    lx0, lx1 = _x_range(result)
    y0, y1 = _y_range(result)
    xs = (np.log10(part[result.x_col].to_numpy(dtype=float)) - lx0) / (lx1 - lx0)
    ys = (part["performance"].to_numpy(dtype=float) - y0) / (y1 - y0)
    return shared_place_labels(xs, ys, names)


def _human_traces(result: TmfResult, x0: float, *, show: bool) -> list[Trace]:
    acc, hum = result.acceptance, result.human
    if acc is None or hum is None:
        return []
    s = _scale(result)
    y0, y1 = _y_range(result)
    p = np.linspace(max(acc.p0, y0) + 1e-6, y1, 200)
    ax = acc.cost(p)
    keep = ax >= x0
    return [
        {
            "type": "scatter",
            "x": ax[keep],
            "y": p[keep] * s,
            "mode": "lines",
            "name": "Human cost curve (market acceptance)",
            "hoverinfo": "skip",
            "legendgroup": "accept",
            "line": {"color": COLORS["accept"], "dash": "dash", "width": 2},
            "showlegend": show,
        },
        {
            "type": "scatter",
            "x": [hum.x],
            "y": [hum.performance * s],
            "mode": "markers+text",
            "text": ["Human"],
            "textposition": "middle left",
            "textfont": {"color": COLORS["human"], "size": 12},
            "marker": {"symbol": "star", "size": 18, "color": COLORS["human"], "line": {"width": 1, "color": "white"}},
            "hovertext": [
                f"<b>Human</b><br>{fmt_x(hum.x, result.unit)} per task ({hum.x_source})<br>"
                f"performance {fmt_perf(hum.performance, result.performance)} ({hum.performance_source})"
            ],
            "hoverinfo": "text",
            "name": "Human",
            "legendgroup": "human",
            "showlegend": show,
        },
    ]


def _panel_traces(result: TmfResult, *, row: int | None, labels: bool) -> list[Trace]:
    x0, x1 = (10**v for v in _x_range(result))
    show = row in (None, 1)
    traces = _region_traces(result, row)
    front = _frontier_trace(result, x1, show=show)
    traces += [front] if front is not None else []
    traces += _human_traces(result, x0, show=show)
    traces += _point_traces(result, show=show, labels=labels)
    return traces


def _axis_titles(result: TmfResult) -> tuple[str, str]:
    x_title = "Cost per task (USD, log scale)" if result.unit == "USD" else "Latency per task (s, log scale)"
    y_title = {"pass@1": "Pass@1 (%)", "mean_score": "Mean score (%)", "irt": "IRT ability (logits)"}
    return x_title, y_title[result.performance]


def fig_tmf(result: TmfResult, *, title: str | None = None, height: int = 620) -> go.Figure:
    """The executive chart: regions, intersection, frontier step, human point and curve, stage badge."""
    x_title, y_title = _axis_titles(result)
    y0, y1 = _y_range(result)
    s = _scale(result)
    annotations: list[dict[str, Any]] = []
    stage = result.value.stage if result.value else None
    if stage:
        annotations.append(
            {
                "text": f"<b>{STAGE_NAMES[stage]}</b>",
                "xref": "paper",
                "yref": "paper",
                "x": 0.01,
                "y": 0.99,
                "xanchor": "left",
                "yanchor": "top",
                "showarrow": False,
                "font": {"color": "white", "size": 14},
                "bgcolor": STAGE_COLORS[stage],
                "borderpad": 6,
            }
        )
    annotations += _best_annotation(result)
    if result.value and result.value.area > 0:
        annotations.append(
            {
                "text": f"AI value ≈ {fmt_x(result.value.area, result.unit)} per task",
                "xref": "paper",
                "yref": "paper",
                "x": 0.01,
                "y": 0.90,
                "xanchor": "left",
                "showarrow": False,
                "font": {"color": "#2b8a3e", "size": 13},
                "bgcolor": "rgba(255,255,255,0.8)",
            }
        )
    layout = {
        "xaxis": {
            "type": "log",
            "dtick": 1,  # a label per decade only: 0.001, 0.01, 0.1, 1 (no minor-tick digits)
            "tickformat": "~g",  # 0.0001, not the SI "100μ"
            "title": {"text": x_title},
            "range": list(_x_range(result)),
            "gridcolor": "#eef0f3",
        },
        "yaxis": {
            "title": {"text": y_title},
            "range": [y0 * s - 2 * (s > 1), y1 * s + 4 * (s > 1)],
            "gridcolor": "#eef0f3",
        },
        "annotations": annotations,
        "height": height,
        "template": _template(),
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.15},
        "margin": {"l": 60, "r": 20, "t": 60, "b": 40},
    }
    if title:
        layout["title"] = {"text": title}
    return go.Figure(data=_panel_traces(result, row=None, labels=True), layout=layout)


def _best_annotation(result: TmfResult) -> list[dict[str, Any]]:
    val = result.value
    if val is None or val.best_run_id is None or val.best_saving <= 0:
        return []
    best = _rows(result, [val.best_run_id]).iloc[0]
    x, y = math.log10(float(best[result.x_col])), float(best["performance"])
    ax, ay = _label_offset(_fraction(x, _x_range(result)), _fraction(y, _y_range(result)))
    return [
        {
            "x": x,
            "y": y * _scale(result),
            "text": f"<b>Best operating point</b><br>saves {fmt_x(val.best_saving, result.unit)} per task",
            "showarrow": True,
            "arrowhead": 2,
            "ax": ax,
            "ay": ay,
            "font": {"color": "#2b8a3e", "size": 12},
            "bgcolor": "rgba(255,255,255,0.85)",
            "bordercolor": "#2b8a3e",
        }
    ]


def _fraction(value: float, span: tuple[float, float]) -> float:
    """Where ``value`` lies across the axis range ``span`` (0 at its start, 1 at its end)."""
    lo, hi = span
    return (value - lo) / (hi - lo) if hi > lo else 0.5


def _label_offset(fx: float, fy: float) -> tuple[int, int]:
    """The best operating point's label offset (pixels from the point, plotly's ``ax``/``ay``: ``ay`` > 0 is below)
    for a point at (``fx``, ``fy``) of the plot's width and height: above and to the right of it, except where that
    would cover the stage badge and the AI value in the top-left corner or leave the plot (a point high up: the
    label below it; a point far right: the label to its left). The cheapest agent is often the best, so the point
    is often in that corner."""
    ax = -60 if fx > 0.7 else 60
    ay = 60 if fy > 0.55 else -60
    return ax, ay


def subplot_grid(
    rows: int, cols: int, titles: Sequence[str], *, horizontal_spacing: float = 0.2, vertical_spacing: float = 0.3
) -> dict[str, Any]:
    """The layout ``plotly.subplots.make_subplots`` builds for a plain grid (axes ``x``, ``x2``... row by row from
    the top left, each anchored to its ``y``; one title annotation per panel), without building its figure."""
    width = (1.0 - horizontal_spacing * (cols - 1)) / cols
    height = (1.0 - vertical_spacing * (rows - 1)) / rows
    layout: dict[str, Any] = {}
    annotations = []
    for k in range(rows * cols):
        r, c = divmod(k, cols)
        x0 = c * (width + horizontal_spacing)
        y1 = 1.0 - r * (height + vertical_spacing)
        suffix = "" if k == 0 else str(k + 1)
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": [x0, x0 + width]}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": [max(0.0, y1 - height), y1]}
        if k < len(titles):
            annotations.append(
                {
                    "font": {"size": 16},
                    "showarrow": False,
                    "text": titles[k],
                    "x": x0 + width / 2,
                    "xanchor": "center",
                    "xref": "paper",
                    "y": y1,
                    "yanchor": "bottom",
                    "yref": "paper",
                }
            )
    layout["annotations"] = annotations
    return layout


def fig_small_multiples(results: Sequence[TmfResult], *, height: int = 380) -> go.Figure:
    """One panel per slice (level or category), each with its own stage in the panel title."""
    n = len(results)
    cols = min(n, 3) or 1
    rows = max(1, math.ceil(n / cols))
    titles = [
        f"{r.slice_name.split('=', 1)[-1]} · "
        f"{'stage ' + str(r.value.stage) if r.value else 'no human cost'}"
        + (f" · {fmt_x(r.value.area, r.unit)}/task" if r.value else "")
        for r in results
    ]
    layout = subplot_grid(rows, cols, titles, horizontal_spacing=0.06, vertical_spacing=0.14)
    traces: list[Trace] = []
    for i, res in enumerate(results):
        suffix = "" if i == 0 else str(i + 1)  # panel i sits on axes x{i+1}/y{i+1}, row by row as make_subplots
        traces += [
            {**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
            for trace in _panel_traces(res, row=i + 1, labels=False)
        ]
        y0, y1 = _y_range(res)
        layout[f"xaxis{suffix}"] = {
            **layout.get(f"xaxis{suffix}", {}),
            "type": "log",
            "dtick": 1,
            "range": list(_x_range(res)),
        }
        layout[f"yaxis{suffix}"] = {
            **layout.get(f"yaxis{suffix}", {}),
            "range": [y0 * _scale(res), y1 * _scale(res) + 3],
        }
    layout.update(
        {
            "height": height * rows,
            "template": _template(),
            "legend": {"orientation": "h", "y": -0.08},
            "margin": {"l": 50, "r": 20, "t": 50, "b": 40},
        }
    )
    return go.Figure(data=traces, layout=layout)


def fig_movie(movie: Sequence[tuple[str, TmfResult]], *, height: int = 480) -> go.Figure:
    """The frontier of every period on one chart, older periods lighter."""
    traces: list[Trace] = []
    n = len(movie)
    last: TmfResult | None = None
    for i, (label, res) in enumerate(movie):
        if not res.frontier:
            continue
        alpha = 0.25 + 0.75 * (i + 1) / max(n, 1)
        pts = _rows(res, res.frontier)
        traces.append(
            {
                "type": "scatter",
                "x": pts[res.x_col].to_numpy(float),
                "y": pts["performance"].to_numpy(float) * _scale(res),
                "mode": "lines+markers",
                "name": label,
                "line": {"shape": "hv", "width": 1.5 + 1.5 * (i == n - 1), "color": f"rgba(31,95,191,{alpha:.2f})"},
                "customdata": pts[["run_id"]].to_numpy(),
                "hovertext": _hover(pts, res),
                "hoverinfo": "text",
            }
        )
        last = res
    layout: dict[str, Any] = {
        "height": height,
        "template": _template(),
        "title": {"text": "Optimal supply curve per period (cumulative)"},
    }
    if last is not None:
        traces += _human_traces(last, 10 ** _x_range(last)[0], show=True)
        x_title, y_title = _axis_titles(last)
        layout["xaxis"] = {"type": "log", "dtick": 1, "title": {"text": x_title}}
        layout["yaxis"] = {"title": {"text": y_title}}
    return go.Figure(data=traces, layout=layout)


def page_export(result: TmfResult, fig: go.Figure, benchmark: str, *, is_demo: bool = False) -> str:
    """A standalone HTML page (chart, words, assumptions, runs) for slides."""
    from analytics.export import page_html

    table = points_table(result)
    assumptions = "\n".join(f"{k}: {v}" for k, v in result.assumptions.items())
    caveat = [("Demo data", DEMO_CAVEAT)] if is_demo else []
    return page_html(
        f"Tech-Market-Fit: {benchmark}",
        [
            *caveat,
            ("", headline(result)),
            ("", assumptions_sentence(result)),
            ("", fig),
            ("What the dollar figures mean", "\n".join(f"{k}: {v}" for k, v in DOLLAR_DEFINITIONS.items())),
            ("Assumptions (all)", assumptions),
            ("Runs", table.to_string(index=False)),
        ],
        note=f"Runlens export, {dt.date.today().isoformat()}",
    )


FOOTER_PX = 160  # below the legend: the assumptions and the demo caveat on exported charts


def export_figure(fig: go.Figure, result: TmfResult, *, is_demo: bool) -> go.Figure:
    """The chart as exported (PNG, SVG): the assumptions, and the demo caveat when demo runs are in view, printed
    under the plot so a slide never travels without them."""
    footer = assumptions_sentence(result) + (f" DEMO DATA: {DEMO_CAVEAT}" if is_demo else "")
    out = go.Figure(fig)
    margin = out.layout.margin
    top = margin.t if margin and margin.t is not None else 60
    bottom = margin.b if margin and margin.b is not None else 40
    height = (out.layout.height or 620) + FOOTER_PX  # the plot keeps its size; the footer gets its own band
    plot_px = height - top - (bottom + FOOTER_PX)
    out.update_layout(height=height, margin={"b": bottom + FOOTER_PX})
    out.add_annotation(
        text="<br>".join(textwrap.wrap(html.escape(footer), 180)),
        xref="paper",
        yref="paper",
        x=0,
        y=-(bottom + FOOTER_PX - 8) / plot_px,  # its bottom 8 px above the image's
        xanchor="left",
        yanchor="bottom",
        showarrow=False,
        align="left",
        font={"size": 11, "color": "#444"},
    )
    return out

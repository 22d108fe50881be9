"""Helpers every figure builder shares (Plotly): a figure made safe to show log text in, and labels placed clear
of each other.

The escaping itself is ``analytics.plaintext``'s, the one plain-text helper; this module applies it to a Plotly
figure (the only part of it that needs Plotly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics.plaintext import DATA_KEYS, escape_values, safe_templates


def plain_figure(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` that renders every data value as plain text and no link or style from any label.

    Data values (x, y, text, hovertext, customdata, trace names, ...) are escaped completely; templates,
    titles, annotations and tick texts keep ``<br>``, ``<b>``, ``<i>``, ``<sub>``, ``<sup>`` and lose every other
    tag. Ids read back from a selection go through ``plotly_unplain``.
    """
    spec = fig.to_plotly_json()
    data = []
    for trace in spec.get("data", []):
        safe = safe_templates({k: v for k, v in trace.items() if k not in DATA_KEYS})
        safe.update({k: escape_values(v) for k, v in trace.items() if k in DATA_KEYS})
        data.append(safe)
    layout = safe_templates(spec.get("layout", {}))
    # not validated again: ``fig`` was validated as it was built, and escaping changes only the text of strings
    # (a second validation was a third of a page's figure cost; Streamlit does not validate a Figure again)
    return go.Figure({"data": data, "layout": layout, "frames": spec.get("frames", [])}, _validate=False)


# label placement on a nominal plot area (a page's chart is about this size; an export is larger, so labels placed
# here fit there too): Plotly draws text where it is told and never moves it out of another's way
PLOT_PX = (1000.0, 480.0)
# a label's text starts about 8 px from its point's centre across and above or below (measured in screenshots)
LABEL_CHAR_PX, LABEL_LINE_PX, LABEL_GAP_PX, MARKER_PX = 6.4, 14.0, 6.0, 12.0
MAX_LABEL_CHARS = 32
POSITIONS = (
    "top right",
    "bottom right",
    "top left",
    "bottom left",
    "middle right",
    "middle left",
    "top center",
    "bottom center",
)


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


Box = tuple[float, float, float, float]  # left, bottom, right, top in pixels of the plot area


def _axis_values(values: Sequence[float] | np.ndarray, *, log: bool) -> np.ndarray:
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    if log:
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(v > 0, np.log10(v), np.nan)
    return v


def axis_range(
    values: Sequence[float] | np.ndarray,
    *,
    log: bool = False,
    floor: float | None = None,
    pad: float = 0.05,
    head: float | None = None,
) -> tuple[float, float]:
    """An axis's range around ``values``: ``pad`` of the data's span below and ``head`` (``pad`` unless given) above,
    as Plotly's autorange leaves 5% (on a log axis in log10 units, as Plotly's ``range`` takes them; ``floor``: never
    below it, as ``rangemode="nonnegative"``). One value: half of it on each side (none: 0 to 1)."""
    v = _axis_values(values, log=log)
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    if hi == lo:
        half = abs(lo) / 2 or 0.5
        lo, hi = lo - half, hi + half
    span = hi - lo
    start = lo - pad * span
    return (start if floor is None else max(floor, start)), hi + (pad if head is None else head) * span


def axis_fraction(
    values: Sequence[float] | np.ndarray,
    *,
    log: bool = False,
    floor: float | None = None,
    span: tuple[float, float] | None = None,
) -> np.ndarray:
    """Each value's place across its axis, 0 to 1: within ``span`` (``axis_range``'s, in log10 units on a log axis)
    or, without it, the range Plotly's autorange gives (``axis_range(values, log=log, floor=floor)``). A missing
    value (or one not positive on a log axis) lands off the plot: it draws no marker, so it is in no label's way."""
    v = _axis_values(values, log=log)
    lo, hi = span if span is not None else axis_range(values, log=log, floor=floor)
    return np.where(np.isfinite(v), (v - lo) / (hi - lo), -10.0)


def label_box(x: float, y: float, text: str, position: str) -> Box:
    """The box a label of ``text`` takes at ``position`` (Plotly's textposition) beside a point at ``(x, y)``
    pixels."""
    vert, horiz = position.split()
    w, h = len(text) * LABEL_CHAR_PX, LABEL_LINE_PX
    left = {"right": x + LABEL_GAP_PX, "left": x - LABEL_GAP_PX - w, "center": x - w / 2}[horiz]
    bottom = {"top": y + LABEL_GAP_PX, "bottom": y - LABEL_GAP_PX - h, "middle": y - h / 2}[vert]
    return (left, bottom, left + w, bottom + h)


def step_boxes(xs: np.ndarray, ys: np.ndarray, *, plot: tuple[float, float] = PLOT_PX) -> list[Box]:
    """The boxes a step line (Plotly's ``shape="hv"``) through points in left-to-right order takes: along from
    each point, then up or down to the next, each 2 px thick; in 0-1 fractions of the plot, like ``place_labels``'s
    points, for its ``obstacles``."""
    width, height = plot
    x, y = np.asarray(xs, dtype=float) * width, np.asarray(ys, dtype=float) * height
    out: list[Box] = []
    for i in range(len(x) - 1):
        out.append((min(x[i], x[i + 1]), y[i] - 1, max(x[i], x[i + 1]), y[i] + 1))
        out.append((x[i + 1] - 1, min(y[i], y[i + 1]), x[i + 1] + 1, max(y[i], y[i + 1])))
    return out


def place_labels(
    xs: np.ndarray,
    ys: np.ndarray,
    names: Sequence[str],
    *,
    plot: tuple[float, float] = PLOT_PX,
    obstacles: Sequence[Box] = (),
) -> tuple[list[str], list[str]]:
    """Greedy placement of point labels, left to right: each takes the first of ``POSITIONS`` whose box stays
    inside the plot and clear of the markers, of the ``obstacles`` (boxes in pixels: a line, ``step_boxes``) and of
    the labels already placed; a label with no free place is left out (the point keeps its hover text). Long names
    are cut to ``MAX_LABEL_CHARS`` with an ellipsis.

    Args:
        xs, ys: each point's place across the plot area, 0 to 1 (left to right, bottom to top; ``axis_fraction``).
        names: each point's label ("" for none).
        plot: the plot area's width and height in pixels.
        obstacles: boxes no label may cover, in pixels of the plot area.

    Returns:
        ``(texts, textpositions)``, one per point.
    """
    width, height = plot
    xs = np.asarray(xs, dtype=float) * width
    ys = np.asarray(ys, dtype=float) * height
    half = MARKER_PX / 2
    taken = [(x - half, y - half, x + half, y + half) for x, y in zip(xs, ys, strict=True)] + list(obstacles)
    texts, where = [""] * len(xs), ["top right"] * len(xs)
    for i in np.argsort(xs, kind="mergesort"):
        name = str(names[i])
        if not name:
            continue
        name = name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1].rstrip() + "…"
        for pos in POSITIONS:
            box = label_box(xs[i], ys[i], name, pos)
            inside = box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height
            if inside and not any(_overlaps(box, t) for t in taken):
                texts[i], where[i] = name, pos
                taken.append(box)
                break
    return texts, where

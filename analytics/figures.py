"""Helpers every figure builder shares (Plotly): a figure made safe to show log text in, and labels placed clear
of each other.

The escaping itself is ``analytics.plaintext``'s, the one plain-text helper; this module applies it to a Plotly
figure (the only part of it that needs Plotly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
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
LABEL_CHAR_PX, LABEL_LINE_PX, LABEL_GAP_PX, MARKER_PX = 6.4, 14.0, 6.0, 12.0
MAX_LABEL_CHARS = 32
POSITIONS = (
    ("top right", 1, 1),
    ("bottom right", 1, -1),
    ("top left", -1, 1),
    ("bottom left", -1, -1),
    ("middle right", 1, 0),
    ("middle left", -1, 0),
    ("top center", 0, 1),
    ("bottom center", 0, -1),
)


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(
    xs: np.ndarray, ys: np.ndarray, names: Sequence[str], *, plot: tuple[float, float] = PLOT_PX
) -> tuple[list[str], list[str]]:
    """Greedy placement of point labels, left to right: each takes the first of ``POSITIONS`` whose box stays
    inside the plot and clear of the markers and of the labels already placed; a label with no free place is left
    out (the point keeps its hover text). Long names are cut to ``MAX_LABEL_CHARS`` with an ellipsis.

    Args:
        xs, ys: each point's place across the plot area, 0 to 1 (left to right, bottom to top).
        names: each point's label ("" for none).
        plot: the plot area's width and height in pixels.

    Returns:
        ``(texts, textpositions)``, one per point.
    """
    width, height = plot
    xs = np.asarray(xs, dtype=float) * width
    ys = np.asarray(ys, dtype=float) * height
    half = MARKER_PX / 2
    taken = [(x - half, y - half, x + half, y + half) for x, y in zip(xs, ys, strict=True)]
    texts, where = [""] * len(xs), ["top right"] * len(xs)
    for i in np.argsort(xs, kind="mergesort"):
        name = str(names[i])
        if not name:
            continue
        name = name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1].rstrip() + "…"
        w, h = len(name) * LABEL_CHAR_PX, LABEL_LINE_PX
        for pos, dx, dy in POSITIONS:
            left = xs[i] + (LABEL_GAP_PX if dx > 0 else -LABEL_GAP_PX - w if dx < 0 else -w / 2)
            bottom = ys[i] + (LABEL_GAP_PX / 2 if dy > 0 else -LABEL_GAP_PX / 2 - h if dy < 0 else -h / 2)
            box = (left, bottom, left + w, bottom + h)
            inside = box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height
            if inside and not any(_overlaps(box, t) for t in taken):
                texts[i], where[i] = name, pos
                taken.append(box)
                break
    return texts, where

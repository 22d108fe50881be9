"""Text from a log shown as plain text: escaped for Streamlit's Markdown and for Plotly's HTML-like labels.

Agent, benchmark, task, category and level names come from uploaded logs. Streamlit renders Markdown in
metric labels, captions, info boxes, subheaders and button labels, so ``![x](http://host/beacon.png)`` made
every viewer's browser fetch an outside image, and a bare URL became a link. Plotly renders ``<a href=...>``,
``<span style=...>``, ``<b>``, ``<br>`` in tick labels, legends, hovers and titles. This module is the one place
that turns such text into plain text; it imports neither Streamlit nor anything above analytics/, so figure
builders and pages both use it (``ui.common.plain`` is ``md_plain``).
"""

from __future__ import annotations

import html
import re
import string
from typing import Any

import plotly.graph_objects as go

# CommonMark lets a backslash escape any ASCII punctuation; escaping all of it also breaks Streamlit's own
# extensions (:red[...] colours, :material/icon:, $LaTeX$), links, images and emphasis.
_MD_SPECIAL = frozenset(string.punctuation)
# Streamlit links bare URLs and e-mail addresses after parsing (escapes do not stop it): an invisible WORD
# JOINER after "scheme:", "www" and "@" breaks the patterns GFM's autolinker looks for; the text reads the same.
WORD_JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?i)([a-z][a-z0-9+.\-]*:)(?=//)|\b(www)(?=\.)|(@)")
# Tags Plotly draws that only format text; everything else (<a href>, <span style>, unknown tags) is escaped
# in the templates and titles figure builders write. Data values are escaped completely.
_BENIGN_TAG = re.compile(r"</?(br|b|i|em|sup|sub|s|u|extra)\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]*>?")
# Trace attributes that hold data values (shown in ticks, legends, texts and hovers).
DATA_KEYS = frozenset(
    {
        "x",
        "y",
        "z",
        "text",
        "hovertext",
        "customdata",
        "labels",
        "ids",
        "parents",
        "name",
        "legendgroup",
        "dimensions",
        "header",
        "cells",
        "values",
    }
)
# Keys whose strings are written by figure builders but may embed data (px puts "agent=<name>" into
# hovertemplate; titles name a benchmark): benign formatting kept, links and styles escaped.
TEMPLATE_KEYS = frozenset({"hovertemplate", "texttemplate", "text", "ticktext", "title", "label", "name"})


def md_plain(value: Any, *, max_chars: int | None = None) -> str:
    """``value`` as text that Streamlit's Markdown shows literally (no link, image, emphasis, colour or icon).

    Args:
        value: anything; ``None`` becomes an empty string.
        max_chars: cut longer text to this many characters and end it with "…" (for labels).
    """
    text = "" if value is None else str(value)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(0, max_chars - 1)] + "…"
    text = _AUTOLINK.sub(lambda m: m.group(0) + WORD_JOINER, text)
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def plotly_plain(value: Any) -> Any:
    """A string with Plotly's HTML-like markup escaped (``<a href>`` shows as text); other values unchanged."""
    if not isinstance(value, str):
        return value
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plotly_unplain(value: Any) -> Any:
    """The original of a ``plotly_plain`` value (for ids read back from a chart's selection)."""
    if isinstance(value, str):
        return html.unescape(value)
    if isinstance(value, list):
        return [plotly_unplain(v) for v in value]
    return value


def plotly_template_safe(text: str) -> str:
    """Builder-written label text with only formatting tags kept: ``<br>``/``<b>`` stay, ``<a href>`` does not."""
    return _TAG.sub(lambda m: m.group(0) if _BENIGN_TAG.fullmatch(m.group(0)) else plotly_plain(m.group(0)), text)


def _escape_values(node: Any) -> Any:
    if isinstance(node, str):
        return plotly_plain(node)
    if isinstance(node, dict) and "bdata" in node:
        return node  # Plotly's typed-array encoding of a numeric numpy array: numbers, no text
    if isinstance(node, dict):
        return {k: _escape_values(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_escape_values(v) for v in node]
    if hasattr(node, "dtype") and getattr(node.dtype, "kind", "") == "O":  # numpy object arrays of strings
        return [_escape_values(v) for v in node.tolist()]
    return node


def _safe_templates(node: Any, key: str = "") -> Any:
    if isinstance(node, str):
        return plotly_template_safe(node) if key in TEMPLATE_KEYS else node
    if isinstance(node, dict):
        return {k: _safe_templates(v, k) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_safe_templates(v, key) for v in node]
    return node


def plain_figure(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` that renders every data value as plain text and no link or style from any label.

    Data values (x, y, text, hovertext, customdata, trace names, ...) are escaped completely; templates,
    titles, annotations and tick texts keep ``<br>``, ``<b>``, ``<i>``, ``<sub>``, ``<sup>`` and lose every other
    tag. Ids read back from a selection go through ``plotly_unplain``.
    """
    spec = fig.to_plotly_json()
    data = []
    for trace in spec.get("data", []):
        safe = _safe_templates({k: v for k, v in trace.items() if k not in DATA_KEYS})
        safe.update({k: _escape_values(v) for k, v in trace.items() if k in DATA_KEYS})
        data.append(safe)
    layout = _safe_templates(spec.get("layout", {}))
    return go.Figure({"data": data, "layout": layout, "frames": spec.get("frames", [])})

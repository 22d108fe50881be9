"""Text from a log shown as plain text: escaped for Streamlit's Markdown and for Plotly's HTML-like labels.

Agent, benchmark, task, category and level names come from uploaded logs. Streamlit renders Markdown in
metric labels, captions, info boxes, subheaders and button labels, so ``![x](http://host/beacon.png)`` made
every viewer's browser fetch an outside image, and a bare URL became a link. Plotly renders ``<a href=...>``,
``<span style=...>``, ``<b>``, ``<br>`` in tick labels, legends, hovers and titles. This module is the one place
that turns such text into plain text; it imports neither Streamlit, Plotly nor anything above analytics/, so
figure builders and pages both use it (``ui.common.plain`` is ``md_plain``; ``analytics.figures.plain_figure``
applies it to a whole figure).
"""

from __future__ import annotations

import html
import re
import string
from typing import Any

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


def escape_values(node: Any) -> Any:
    """Every string in a trace's data values escaped completely (``plotly_plain``); numbers left as they are."""
    if isinstance(node, str):
        return plotly_plain(node)
    if isinstance(node, dict) and "bdata" in node:
        return node  # Plotly's typed-array encoding of a numeric numpy array: numbers, no text
    if isinstance(node, dict):
        return {k: escape_values(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [escape_values(v) for v in node]
    if hasattr(node, "dtype") and getattr(node.dtype, "kind", "") == "O":  # numpy object arrays of strings
        return [escape_values(v) for v in node.tolist()]
    return node


def safe_templates(node: Any, key: str = "") -> Any:
    """The builder-written label texts under ``TEMPLATE_KEYS`` with only formatting tags kept (``plotly_template_safe``)."""
    if isinstance(node, str):
        return plotly_template_safe(node) if key in TEMPLATE_KEYS else node
    if isinstance(node, dict):
        return {k: safe_templates(v, k) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [safe_templates(v, key) for v in node]
    return node

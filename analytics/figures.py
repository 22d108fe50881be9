"""Helpers every figure builder shares (Plotly): a figure made safe to show log text in.

The escaping itself is ``analytics.plaintext``'s, the one plain-text helper; this module applies it to a Plotly
figure (the only part of it that needs Plotly).
"""

from __future__ import annotations

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

"""The SQL page's result chart (the console's one module that imports plotly)."""

from __future__ import annotations

from typing import Any

import pandas as pd

CHART_KINDS = ("bar", "line", "scatter")


def fig_result(
    df: pd.DataFrame, *, x: str, y: str, color: str | None = None, kind: str = "bar", title: str | None = None
) -> Any:
    """A Plotly chart of a query result (``x``, ``y`` and an optional ``color`` column).

    Raises:
        ValueError: naming a column the result does not have, or an unknown chart kind.
    """
    import plotly.express as px

    for col in (x, y, color):
        if col is not None and col not in df.columns:
            raise ValueError(f"column {col!r} is not in the result (columns: {', '.join(map(str, df.columns))})")
    if kind not in CHART_KINDS:
        raise ValueError(f"kind must be one of {CHART_KINDS}, not {kind!r}")
    builder = {"bar": px.bar, "line": px.line, "scatter": px.scatter}[kind]
    kwargs: dict[str, Any] = {"x": x, "y": y, "color": color, "title": title}
    if kind == "bar":
        kwargs["barmode"] = "group"
    fig = builder(df, **kwargs)
    fig.update_layout(margin={"t": 40 if title else 10, "b": 10, "l": 10, "r": 10})
    return fig

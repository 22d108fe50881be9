"""THE way a table reaches a person: ``show_table(df, cols, key=, name=)``.

One helper names the columns for people, formats every value by its kind (``analytics.formatting.cell``: %, $,
p-values, counts, intervals read ``a to b``, a dash for a missing value), hides technical ids unless asked, fits
the page (default columns whose widths add up to the space there is; the rest behind a column chooser), and offers
the downloads with the numbers as they were (CSV and Parquet of the frame it was given, not of the text shown).

A page describes its table as a list of ``Col``; columns it does not describe are shown under a readable name of
their own (``n_a`` -> ``N a``) with their kind guessed from their name and values, after the described ones, and
only in the chooser. So a column another module adds later is never lost, and never breaks the layout.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from analytics import formatting as fmt
from ui.common import download_buttons

PAGE_WIDTH_PX = 790  # the main area at a 1280 px window with the sidebar open is 818 px (measured in the browser)
CHAR_PX = 6.4  # an average character of the grid's 14 px font (measured on the leaderboard at 1280 px)
PAD_PX = 18
MAX_COL_PX = 300  # longer text is cut with an ellipsis; the whole value is in the cell's tooltip and the download


@dataclass(frozen=True)
class Col:
    """One column as a person reads it.

    Attributes:
        name: the column of the frame (for an interval: the estimate's column, or any name when ``lo``/``hi``
            alone make the cell).
        label: the header; default: ``name`` made readable.
        kind: how values read (``analytics.formatting.KINDS``), or ``interval``: ``lo`` to ``hi``.
        lo, hi: the interval's bound columns (``kind="interval"``, or any kind: then ``est [lo to hi]``).
        scale: multiplies interval bounds (100 for fractions shown in %).
        digits: decimals for numbers, percentages and intervals.
        is_signed: interval bounds carry their sign (differences).
        is_default: shown without asking (else only through the column chooser).
        help: the header's tooltip: what the column means.
        link_text: for ``kind="link"``, the text shown for each URL.
        max_px: the widest this column is drawn (longer text ends in an ellipsis; the whole value is in the
            download), so a narrow table keeps its important columns in view; above ``MAX_COL_PX`` for a column of
            long text that must read whole (a frontier of runs).
    """

    name: str
    label: str | None = None
    kind: str = "text"
    lo: str | None = None
    hi: str | None = None
    scale: float = 1.0
    digits: int = 1
    is_signed: bool = False
    is_default: bool = True
    help: str | None = None
    link_text: str | None = None
    max_px: int | None = None

    @property
    def header(self) -> str:
        return self.label or readable(self.name)


WHOLE_NAMES = {"rank", "tasks", "attempts", "runs", "errored", "limit hit", "unscored", "samples", "steps"}
COUNT_NAMES = WHOLE_NAMES | {"n", "count", "count_star()"}  # and every n_* name: a user's columns read as counts
ID_NAME = re.compile(r"(^|_)(id|ids)$|^attempt_id$|^run_id$")


def readable(name: str) -> str:
    """A column name as a header: ``n_tasks`` -> ``N tasks``, ``cost_usd`` -> ``Cost ($)``."""
    text = re.sub(r"_usd$", " ($)", name)
    text = re.sub(r"_s$", " (s)", text).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def guess(name: str, values: pd.Series, *, is_display: bool = False) -> Col:
    """A column nobody described: its kind from its name and values (ids hidden, dollars, p-values, counts);
    text that analytics formatted already (``is_display``) is tidied (``analytics.formatting.tidy``)."""
    if ID_NAME.search(name):
        return Col(name, kind="id", is_default=False)
    if name.endswith("_usd"):
        return Col(name, kind="usd")
    if name in ("p", "p_value", "p_holm") or name.endswith("_p"):
        return Col(name, kind="p")
    if pd.api.types.is_bool_dtype(values):
        return Col(name, kind="flag")
    if pd.api.types.is_integer_dtype(values) or name == "n" or name.startswith("n_"):
        return Col(name, kind="count")
    if pd.api.types.is_float_dtype(values):
        finite = values[np.isfinite(values)]
        if len(finite) and (finite == finite.round()).all() and name.lower() in WHOLE_NAMES:
            return Col(name, kind="count")  # a rank or a count that NaN made a float
        return Col(name, kind="number", digits=1 if is_display else 2)
    if pd.api.types.is_datetime64_any_dtype(values):
        return Col(name, kind="date")
    return Col(name, kind="shown" if is_display else "text")


def cell_text(row: pd.Series, col: Col) -> str:
    """One cell of ``col`` for ``row``: its value by kind, ``est [lo to hi]`` or ``lo to hi`` for intervals."""
    if col.kind == "raw":
        return raw_text(row.get(col.name))
    if col.kind == "interval":
        return fmt.span(row.get(col.lo), row.get(col.hi), scale=col.scale, digits=col.digits, is_signed=col.is_signed)
    head = fmt.cell(row.get(col.name), col.kind, digits=col.digits)
    if col.lo is None or col.hi is None or head == fmt.MISSING:
        return head
    bounds = fmt.span(row.get(col.lo), row.get(col.hi), scale=col.scale, digits=col.digits, is_signed=col.is_signed)
    return head if bounds == fmt.MISSING else f"{head} [{bounds}]"


def raw_text(value: Any) -> str:
    """A user's own value (a SQL result's cell) as it is: a dash only for NULL (None, NaN, NaT, NA), never for a
    string that happens to read ``None`` or ``nan``."""
    if value is None or value is pd.NA or value is pd.NaT:
        return fmt.MISSING
    if isinstance(value, float | np.floating) and math.isnan(value):
        return fmt.MISSING
    return str(value)


def decimals_needed(values: pd.Series, *, most: int = 6) -> int:
    """The decimals a float column needs to read as itself without float noise: 37.99999999999999 -> 0 (38),
    0.55 -> 2, 1/3 -> ``most``. Every value of the column then gets the same decimals, so they align."""
    finite = values[np.isfinite(values.to_numpy(dtype=float))].to_numpy(dtype=float)
    needed = 0
    for x in finite[:500]:
        text = f"{float(f'{x:.10g}'):.{most}f}".rstrip("0")
        needed = max(needed, len(text.split(".")[1]) if "." in text else 0)
        if needed >= most:
            break
    return needed


def user_columns(df: pd.DataFrame) -> list[Col]:
    """Columns of a person's own result (the SQL console): headers exactly as they wrote them, every column a
    default (ids too: they asked for them); numbers read by kind where the name says it (``*_usd`` in $, p-values),
    other floats with the decimals they need, counts named as counts with thousands separators; anything else
    (integers such as years or ids, text, dates, lists) as it is, a dash only for NULL."""
    cols = []
    for name in df.columns:
        values = df[name]
        known = guess(str(name), values)
        is_count_name = str(name).lower() in COUNT_NAMES or str(name).lower().startswith("n_")
        if known.kind in ("usd", "p", "flag") or (known.kind == "count" and is_count_name):
            col = known
        elif pd.api.types.is_float_dtype(values) and not pd.api.types.is_bool_dtype(values):
            col = Col(str(name), kind="number", digits=decimals_needed(values))
        else:
            col = Col(str(name), kind="raw")
        cols.append(replace(col, label=str(name), is_default=True))
    return cols


def display_frame(df: pd.DataFrame, cols: Sequence[Col]) -> pd.DataFrame:
    """The frame as text, one column per ``Col`` (headers are the labels); no None, nan or float noise."""
    out: dict[str, list[str]] = {}
    for col in cols:
        if col.kind == "link":
            out[col.header] = [None if fmt.text(v) == fmt.MISSING else str(v) for v in df[col.name]]  # type: ignore[misc]
        elif col.kind == "raw":
            out[col.header] = [raw_text(v) for v in df[col.name]]
        elif col.kind == "interval" or col.lo is not None:
            out[col.header] = [cell_text(row, col) for _, row in df.iterrows()]
        elif col.kind in ("usd", "signed_usd"):  # one format per column: the same decimals in every cell
            money = fmt.usd if col.kind == "usd" else fmt.signed_usd
            digits = fmt.usd_digits(df[col.name])
            out[col.header] = [money(v, digits) for v in df[col.name]]
        else:
            out[col.header] = [fmt.cell(v, col.kind, digits=col.digits) for v in df[col.name]]
    return pd.DataFrame(out, index=range(len(df)))


def column_px(header: str, cells: Sequence[Any], *, is_link: bool = False, most: int = MAX_COL_PX) -> int:
    """The width a column needs: its header or its longest cell (of the first 200), within ``most`` px."""
    longest = max([len(header)] + [0 if is_link else len(str(c)) for c in list(cells)[:200]])
    return int(min(most, math.ceil(longest * CHAR_PX + PAD_PX)))


def plan(
    df: pd.DataFrame, cols: Sequence[Col] | None, *, show_ids: bool = False, is_display: bool = False
) -> tuple[list[Col], list[Col]]:
    """(every column in order, the default ones): described columns first, then the rest as ``guess`` reads
    them (chooser only); ids are never default unless ``show_ids``."""
    described = list(cols or [])
    named = {c.name for c in described} | {c.lo for c in described} | {c.hi for c in described}
    rest = [guess(str(n), df[n], is_display=is_display) for n in df.columns if n not in named]
    if is_display:  # the headers are written for people already
        rest = [replace(c, label=c.name) for c in rest]
    if cols is None:  # nothing described: every guessed column is a default (ids excepted)
        described, rest = rest, []
    else:
        rest = [replace(c, is_default=False) for c in rest]
    taken = {c.header for c in described}
    for i, c in enumerate(rest):  # a header twice would show one column's cells under both
        if c.header in taken:
            rest[i] = replace(c, label=f"{c.header} ({c.name})")
        taken.add(rest[i].header)
    everything = described + rest
    is_id = [c.kind == "id" for c in everything]
    defaults = [c for c, i in zip(everything, is_id, strict=True) if (show_ids and i) or (c.is_default and not i)]
    return everything, defaults


def fit(headers: Sequence[str], widths: dict[str, int], budget_px: int) -> list[str]:
    """The leading headers whose widths fit ``budget_px`` (the first always): what a 1280 px window shows."""
    kept: list[str] = []
    used = 0
    for h in headers:
        if kept and used + widths[h] > budget_px:
            break
        kept.append(h)
        used += widths[h]
    return kept


def show_table(
    df: pd.DataFrame,
    cols: Sequence[Col] | None = None,
    *,
    key: str,
    name: str,
    download: pd.DataFrame | None = None,
    budget_px: int = PAGE_WIDTH_PX,
    show_ids: bool = False,
    height: int | None = None,
    select: bool = False,
    is_display: bool = False,
    is_downloadable: bool = True,
    css: pd.DataFrame | None = None,
) -> Any:
    """Draw ``df`` as people read it (see the module's docstring); return the grid's selection when ``select``.

    Args:
        df: the numbers, as analytics returns them.
        cols: how to show its columns; None: every column by ``guess``.
        key: the grid's widget key (the chooser and the downloads derive theirs from it).
        name: the download's file name without extension.
        download: what the downloads hold (default ``df``: the numbers, every column).
        budget_px: the width the table has (half of it inside two page columns).
        show_ids: technical ids (run_id, attempt_id) among the default columns.
        select: single-row selection, the grid's event returned.
        is_display: ``df`` is a table analytics formatted already (text headers and cells): its headers are kept,
            its text tidied.
        css: a style per cell (CSS text, '' for none), indexed like ``df`` with some of its columns: marks that
            carry meaning (AD-Bench's fewest in bold, second underlined), drawn on the cells shown.
    """
    everything, defaults = plan(df, cols, show_ids=show_ids, is_display=is_display)
    shown = display_frame(df, everything)
    widths = {
        c.header: column_px(c.header, shown[c.header], most=c.max_px or MAX_COL_PX) if c.kind != "link" else 90
        for c in everything
    }
    default_headers = fit([c.header for c in defaults], widths, budget_px)
    headers = [c.header for c in everything]
    chosen = default_headers
    if len(default_headers) < len(headers):
        with st.popover(
            f"Columns: {len(default_headers)} of {len(headers)}", icon=":material/view_column:", width="content"
        ):
            chosen = (
                st.multiselect(
                    "Columns shown",
                    headers,
                    default=default_headers,
                    key=f"{key}_columns",
                    help="Every column is in the downloads, with its numbers unrounded.",
                )
                or default_headers
            )
    config: dict[str, Any] = {}
    for c in everything:
        if c.kind == "link":
            config[c.header] = st.column_config.LinkColumn(c.header, display_text=c.link_text, help=c.help, width=90)
        else:
            config[c.header] = st.column_config.TextColumn(c.header, help=c.help, width=widths[c.header])
    grid: dict[str, Any] = {
        "hide_index": True,
        "key": key,
        "width": "stretch",
        "height": height if height is not None else "auto",
        "column_order": [h for h in headers if h in chosen],
        "column_config": config,
    }
    if select:
        grid.update(on_select="rerun", selection_mode="single-row")
    styled: Any = shown
    if css is not None:
        by_header = {c.name: c.header for c in everything if c.kind != "interval"}
        styles = pd.DataFrame("", index=shown.index, columns=shown.columns)
        for name in css.columns:
            if name in by_header:
                styles[by_header[name]] = css[name].fillna("").astype(str).to_numpy()
        styled = shown.style.apply(lambda _: styles, axis=None)
    event = st.dataframe(styled, **grid)
    if is_downloadable:
        download_buttons(df if download is None else download, name, key=f"{key}_dl")
    return event

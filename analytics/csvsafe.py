"""CSV that a spreadsheet opens as data: formula prefixes in text cells are neutralised (OWASP CSV injection).

A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is evaluated as a formula
by Excel, LibreOffice and Google Sheets, quoted or not (``=HYPERLINK("http://...")``, ``=cmd|' /C calc'!A0``).
Following OWASP, such a cell gets a leading single quote, which spreadsheets show as text and do not
evaluate. So does every line inside a cell (after a ``\r`` or ``\n``): a reader that splits the cell there
would otherwise start a row with a live formula. And every cell holding a ``\r`` or ``\n`` is quoted:
records end with ``\r\n`` (RFC 4180), so the writer quotes both characters (with a ``\n`` line end, a bare
``\r`` went out unquoted and ``x\r=cmd|' /C calc'!A0`` became a new row). Only text cells change: numbers (a
negative score) stay numbers. Parquet downloads keep the raw
values; they are data for programs, not sheets. Every CSV Runlens writes goes through this module: the
page downloads (``ui.common.download_buttons``), the SQL page's full-result CSV and ``python -m analytics sql``.
"""

from __future__ import annotations

import csv
import re
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_RE = r"^[=+\-@\t\r]"
_INNER_LINE_RE = r"([\r\n])([=+\-@\t])"  # a line inside a cell that starts like a formula
_INNER_LINE = re.compile(_INNER_LINE_RE)
QUOTE = "'"
LINE_END = "\r\n"  # RFC 4180; and with \r in the line end, the writer quotes every cell holding a \r or \n


def neutralise(value: Any) -> Any:
    """``value`` with a ``'`` before its start and before every line inside it that a spreadsheet would read as a
    formula, when it is text."""
    if not isinstance(value, str):
        return value
    if "\r" in value or "\n" in value:
        value = _INNER_LINE.sub(r"\1" + QUOTE + r"\2", value)
    return QUOTE + value if value.startswith(FORMULA_PREFIXES) else value


def csv_safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells are neutralised (numeric, boolean and date columns untouched)."""
    out = df.copy()
    for col in out.columns:
        series = out[col]
        if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
            out[col] = series.map(neutralise)
    out.columns = [neutralise(str(c)) if isinstance(c, str) else c for c in out.columns]
    return out


def csv_bytes(df: pd.DataFrame) -> bytes:
    """``df`` as UTF-8 CSV with formula prefixes neutralised."""
    return csv_text(df).encode("utf-8")


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text with formula prefixes neutralised."""
    return csv_safe_frame(df).to_csv(index=False, lineterminator=LINE_END, quoting=csv.QUOTE_MINIMAL)


def _safe_array(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    col = pc.replace_substring_regex(col, pattern=_INNER_LINE_RE, replacement=r"\1" + QUOTE + r"\2")
    is_formula = pc.fill_null(pc.match_substring_regex(col, _FORMULA_RE), False)
    quoted = pc.binary_join_element_wise(pa.scalar(QUOTE, col.type), col, pa.scalar("", col.type))
    return pc.if_else(is_formula, quoted, col)


def csv_safe_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """An Arrow batch whose string columns (and column names) are neutralised, for streamed CSV exports (Arrow's
    writer quotes every string cell, so one holding a line break stays one cell)."""
    arrays = []
    for col in batch.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = _safe_array(col)
        arrays.append(col)
    names = [str(neutralise(name)) for name in batch.schema.names]
    return pa.RecordBatch.from_arrays(arrays, names=names)

"""CSV that a spreadsheet opens as data: formula prefixes in text cells are neutralised (OWASP CSV injection).

A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is evaluated as a formula
by Excel, LibreOffice and Google Sheets, quoted or not (``=HYPERLINK("http://...")``, ``=cmd|' /C calc'!A0``).
Following OWASP, such a cell gets a leading single quote, which spreadsheets show as text and do not
evaluate. Only text cells change: numbers (a negative score) stay numbers. Parquet downloads keep the raw
values; they are data for programs, not sheets. Every CSV Runlens writes goes through this module: the
page downloads (``ui.common.download_buttons``), the SQL page's full-result CSV and ``python -m analytics sql``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_RE = r"^[=+\-@\t\r]"
QUOTE = "'"


def neutralise(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text that a spreadsheet would read as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return QUOTE + value
    return value


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
    return csv_safe_frame(df).to_csv(index=False).encode("utf-8")


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text with formula prefixes neutralised."""
    return csv_safe_frame(df).to_csv(index=False)


def _safe_array(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    is_formula = pc.fill_null(pc.match_substring_regex(col, _FORMULA_RE), False)
    quoted = pc.binary_join_element_wise(pa.scalar(QUOTE, col.type), col, pa.scalar("", col.type))
    return pc.if_else(is_formula, quoted, col)


def csv_safe_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """An Arrow batch whose string columns (and column names) are neutralised, for streamed CSV exports."""
    arrays = []
    for col in batch.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = _safe_array(col)
        arrays.append(col)
    names = [str(neutralise(name)) for name in batch.schema.names]
    return pa.RecordBatch.from_arrays(arrays, names=names)

"""Trajectory reports: the rows of ``python -m analytics coverage --json``, the drilldown's partial-trace notice."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

COVERAGE_KEYS = ("run_id", "agent", "slice", "coverage", "recall", "precision", "mean_tool_calls", "n")


def coverage_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``python -m analytics coverage --json``: the coverage table with JSON-safe numbers."""

    def clean(value: Any) -> Any:
        if isinstance(value, (float, np.floating)):
            return None if not np.isfinite(value) else round(float(value), 6)
        if isinstance(value, np.integer):
            return int(value)
        return value

    return [{k: clean(r[k]) for k in COVERAGE_KEYS} for r in table.to_dict("records")]


def partial_notice(mark: dict[str, Any] | None) -> str | None:
    """The drilldown's notice for an attempt stored from a partial trace (``attempt_detail``'s ``trace_partial``),
    as plain text (the caller renders it through the plain-text helper); None for a whole attempt."""
    if mark is None:
        return None
    missing = mark.get("missing")
    spans = mark.get("spans")
    what = f"its {missing} was not received" if missing else "part of it was not received"
    stored = f"{spans:,} span{'s' if spans != 1 else ''} stored" if isinstance(spans, int) else "some spans stored"
    return f"Partial trace: {what}; {stored}; completed if the rest arrives."

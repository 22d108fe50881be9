"""Trajectory reports: the rows of ``python -m analytics coverage --json``."""

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

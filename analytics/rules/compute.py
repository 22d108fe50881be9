"""rules, computed: one attempt's stored findings and the rule findings computed live, as one frame (pure)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ingest.rules import Finding

COLUMNS = ["code", "source", "step", "detail"]


def findings_frame(stored: pd.DataFrame, live: Sequence[Finding]) -> pd.DataFrame:
    """The stored findings (log and judge labels) followed by the live rule findings, steps as nullable integers."""
    frame = pd.DataFrame(
        [{"code": f.code, "source": "rule", "step": f.step, "detail": f.detail} for f in live],
        columns=COLUMNS,
    )
    out = pd.concat([stored, frame], ignore_index=True) if not frame.empty else stored
    out["step"] = out["step"].astype("Int64")
    return out.reset_index(drop=True)

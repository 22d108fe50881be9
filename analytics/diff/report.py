"""The diff of two runs as people read it: the measures table and the per-task changes table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analytics import formatting as fmt
from analytics.diff.compute import MEASURES


def _formatter(name: str) -> tuple[Any, Any]:
    """How a measure's values and differences read: (value, signed difference) formatters."""
    if name in ("Pass@1", "mean score"):
        return fmt.pct, lambda v: fmt.signed(v)
    if name.startswith("cost"):
        return fmt.usd, fmt.signed_usd
    if name.startswith("tokens"):
        return fmt.count, lambda v: fmt.signed(v, scale=1.0, digits=0, unit="")
    return (lambda v: fmt.number(v, 1)), (lambda v: fmt.signed(v, scale=1.0, digits=1, unit=""))


def _mde_text(value: Any, diff: Any) -> str:
    """A detectable difference as a magnitude in the measure's unit: ``±8.2 pp``; the missing mark when unknown."""
    if value is None or not np.isfinite(value):
        return fmt.MISSING
    return "±" + str(diff(value)).lstrip("+")


def _diff_text(diff: Any, delta: Any, lo: Any, hi: Any) -> str:
    """``+1.2 [+0.5 to +2.0]``; the difference alone without its interval; the missing mark without a difference."""
    head, bounds = diff(delta), (diff(lo), diff(hi))
    if head == fmt.MISSING or fmt.MISSING in bounds:
        return head
    return f"{head} [{bounds[0]} to {bounds[1]}]"


def measures_table(measures: pd.DataFrame) -> pd.DataFrame:
    """``RunDiff.measures`` as people read it: each measure in its unit, B - A with its 95% interval, p, n."""
    rows = []
    for r in measures.itertuples():
        value, diff = _formatter(str(r.measure))
        rows.append(
            {
                "Measure": r.measure,
                "A": value(r.mean_a),
                "B": value(r.mean_b),
                "B − A [95% CI]": fmt.signed_interval(r.delta, (r.lo, r.hi))
                if r.measure in ("Pass@1", "mean score")
                else _diff_text(diff, r.delta, r.lo, r.hi),
                "p": fmt.p_value(r.p_value),
                # an undefined test says why (no shared task has the measure in both runs: no cost logged, say)
                "Test": "untestable: no shared task has it in both runs" if r.method == "untestable" else r.method,
                "Tasks": fmt.count(r.n_tasks),
                "MDE80": _mde_text(r.mde80, diff),
            }
        )
    return pd.DataFrame(rows, columns=["Measure", "A", "B", "B − A [95% CI]", "p", "Test", "Tasks", "MDE80"])


def changes_table(changes: pd.DataFrame, *, metric: str) -> pd.DataFrame:
    """``tasks_by_change`` as people read it: the metric per run, then every per-task change in its unit."""
    value = fmt.pct if metric == "pass@1" else (lambda v: fmt.number(v, 2))
    return pd.DataFrame(
        {
            "Task": changes["task_id"],
            "Level": changes["level"].map(lambda v: fmt.MISSING if v is None or pd.isna(v) else str(v)),
            "Category": changes["category"].map(lambda v: fmt.MISSING if v is None or pd.isna(v) else str(v)),
            f"{MEASURES.get(metric, metric)} A": changes["metric_a"].map(value),
            f"{MEASURES.get(metric, metric)} B": changes["metric_b"].map(value),
            "Change": changes["change_pp"].map(lambda v: fmt.signed(v, scale=1.0)),
            "Cost Δ": fmt.usd_column(changes["cost_change_usd"], is_signed=True),  # one format per column
            "Latency Δ (s)": changes["latency_change_s"].map(_formatter("latency")[1]),
            "Tokens Δ": changes["tokens_change"].map(_formatter("tokens")[1]),
            "Tool calls Δ": changes["tool_calls_change"].map(_formatter("steps")[1]),
            "Error codes (+ new in B, − gone)": changes["error_codes"].map(lambda v: v or fmt.MISSING),
            "Outcome (sample 0 or majority)": changes["outcome"],
        }
    )

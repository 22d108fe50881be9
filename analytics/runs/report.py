"""Runs, shown: the one run label, its unambiguous form for a chart or table, and the incomplete-runs table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from analytics import formatting as fmt


def run_label(agent: Any, version: Any = None, eval_date: Any = None) -> str:
    """A run as people name it, the one label every view uses: agent, version when it adds something (``o3``, not
    ``o3 o3``), evaluation date when given: ``Qwen3 3-8B · 2026-01-15``."""
    name = fmt.text(agent)
    adds = isinstance(version, str) and version and version.lower() not in name.lower()
    day = fmt.date(eval_date)
    return " · ".join([f"{name} {version}" if adds else name] + ([day] if day != fmt.MISSING else []))


def row_label(row: Mapping[str, Any], *, with_date: bool = True) -> str:
    """``run_label`` of a row with ``agent``, ``agent_version`` and (``with_date``) ``eval_date``."""
    return run_label(row["agent"], row.get("agent_version"), row.get("eval_date") if with_date else None)


def unique_run_labels(df: pd.DataFrame) -> dict[str, str]:
    """``row_label`` per run id, with the run id added where two runs would otherwise share a label (a chart row
    or point per run, never two runs drawn as one)."""
    labels = {str(r["run_id"]): row_label(r) for _, r in df.iterrows()}
    counts = pd.Series(list(labels.values())).value_counts()
    return {rid: f"{lab} · {rid}" if counts[lab] > 1 else lab for rid, lab in labels.items()}


def incomplete_table(df: pd.DataFrame, *, errors_excluded: bool = False) -> pd.DataFrame:
    """The runs (of ``run_health``) that are not complete, for display: the pass rate under the chosen treatment
    of errors, and a "Partial traces" column (attempts stored from a trace whose root span never arrived) when a
    listed run has any."""
    if df.empty:
        return df
    part = df[~df["is_complete"]].copy()
    rate = "pass_rate_errors_excluded" if errors_excluded else "pass_rate_errors_failed"
    part["completed / total"] = [
        f"{c} / {t}" if pd.notna(t) else f"{n} attempts"
        for c, t, n in zip(part["completed_samples"], part["total_samples"], part["n_attempts"], strict=True)
    ]
    part["Pass rate (%)"] = (100 * part[rate]).round(1)
    if "superseded_by" in part:
        part["log_status"] = [
            f"{s} (superseded by {later}: not ranked)" if isinstance(later, str) else s
            for s, later in zip(part["log_status"], part["superseded_by"], strict=True)
        ]
    partial = "n_partial" in part and bool((part["n_partial"] > 0).any())
    return part.rename(
        columns={
            "n_partial": "Partial traces",
            "run_id": "Run",
            "agent": "Agent",
            "log_status": "Log status",
            "n_errored": "Errored",
            "n_limited": "Limit hit",
            "n_unscored": "Unscored",
        }
    )[
        ["Run", "Agent", "Log status", "completed / total", "Errored", "Limit hit", "Unscored"]
        + (["Partial traces"] if partial else [])
        + ["Pass rate (%)"]
    ]

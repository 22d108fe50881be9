"""The gate, shown: the JSON report (``python -m analytics gate --json``), the CI log's text, the sequential
line and its e-value table. No queries, no figures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analytics.gate.compute import GateResult, Sequential


def sequential_text(result: GateResult) -> str:
    """One line: the sequential verdict, where it stopped and both e-values (empty without a sequential check)."""
    seq = result.sequential
    if seq is None:
        return ""
    scale, unit = (1.0, " $") if result.metric == "cost" else (100.0, " pp")
    return (
        f"sequential: {seq.verdict} after {seq.n_used} of {seq.n_total} tasks ({seq.order}; e-values "
        f"{seq.e_worse:.3g} against 'not worse', {seq.e_not_worse:.3g} against 'worse by "
        f"{seq.stop_delta * scale:.3g}{unit}', threshold {1 / result.alpha:.3g})"
    )


def sequential_frame(seq: Sequential) -> pd.DataFrame:
    """The e-values after each task read: ``tasks_read``, ``e_worse``, ``e_not_worse`` (a chart's data)."""
    return pd.DataFrame(
        {
            "tasks_read": np.arange(1, len(seq.path_worse) + 1),
            "e_worse": seq.path_worse,
            "e_not_worse": seq.path_not_worse,
        }
    )


def report(result: GateResult) -> dict[str, Any]:
    """The JSON shape of ``python -m analytics gate --json`` (documented in the README)."""
    t = result.test
    num = lambda v: None if v is None or not np.isfinite(v) else float(v)  # noqa: E731
    dec = result.decision
    seq = result.sequential
    return {
        "baseline": result.baseline,
        "candidate": result.candidate,
        "benchmark": result.benchmark,
        "metric": result.metric,
        "alpha": result.alpha,
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "n_shared": t.n_shared,
        "baseline_mean": num(result.baseline_mean),
        "candidate_mean": num(result.candidate_mean),
        "diff": num(t.diff),
        "ci95": [num(t.ci95[0]), num(t.ci95[1])],
        "p_value": num(dec.p_value) if dec else None,
        "method": dec.method if dec else "untestable",
        "n_worse": t.n_worse,
        "n_better": t.n_better,
        "regressed_tasks": [{k: num(v) if k != "task_id" else v for k, v in r.items()} for r in result.regressed],
        "scorer": result.scorer,
        "sided": dec.sided if dec else None,
        "margin": dec.margin if dec else None,
        "bound": num(dec.bound) if dec else None,
        "mde80": num(detectable(result)),
        "p_two_sided_paired": num(t.p_value),
        "paired_method": t.method,
        "sequential": None
        if seq is None
        else {
            "verdict": seq.verdict,
            "n_used": seq.n_used,
            "n_total": seq.n_total,
            "n_saved": seq.n_total - seq.n_used,
            "e_worse": num(seq.e_worse),
            "e_not_worse": num(seq.e_not_worse),
            "threshold": 1.0 / result.alpha,
            "stop_delta": seq.stop_delta,
            "order": seq.order,
        },
    }


def detectable(result: GateResult) -> float | None:
    """The decision's ``mde80``; None when unknown, or beyond the metric's range (above 1 for a rate or score)."""
    dec = result.decision
    if dec is None or not np.isfinite(dec.mde80) or (result.metric != "cost" and dec.mde80 > 1.0):
        return None
    return float(dec.mde80)


def text_report(result: GateResult) -> str:
    """The verdict as the CI log shows it: decision, difference with its interval, p, detectable effect."""
    t = result.test
    dec = result.decision
    if not t.is_testable or dec is None:
        return f"UNTESTABLE: {result.candidate} and {result.baseline} share no task with a {result.metric} value."
    scale, unit = (1.0, " $") if result.metric == "cost" else (100.0, " pp")
    lines = [
        f"{result.verdict.upper()}: {result.candidate} vs {result.baseline} on {t.n_shared} shared tasks "
        f"({result.metric}): {result.candidate_mean * scale:.4g} vs {result.baseline_mean * scale:.4g}, "
        f"difference {t.diff * scale:+.4g}{unit} (95% CI {t.ci95[0] * scale:+.4g} to {t.ci95[1] * scale:+.4g}), "
        f"p = {dec.p_value:.3g} ({dec.method}, {dec.sided}"
        + (f", margin {dec.margin * scale:.4g}{unit}" if dec.margin > 0 else "")
        + f"), alpha {result.alpha}; "
        + (
            f"detects a regression of {mde * scale:.3g}{unit} with 80% power"
            if (mde := detectable(result)) is not None
            else "too few tasks (or no spread) to say which regression it would detect with 80% power"
        )
    ]
    if result.sequential is not None:
        lines.append(sequential_text(result))
    if result.verdict == "worse":
        lines.append(f"{len(result.regressed)} task(s) regressed:")
        lines += [f"  {r['task_id']}: {r['baseline']:.4g} -> {r['candidate']:.4g}" for r in result.regressed]
    return "\n".join(lines)

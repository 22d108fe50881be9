"""The plan, shown: the JSON report (``python -m analytics plan --json``) and its text table."""

from __future__ import annotations

from typing import Any

from analytics.plan.compute import Plan


def report(result: Plan) -> dict[str, Any]:
    """The JSON shape of ``python -m analytics plan --json``."""
    return {
        "benchmark": result.benchmark,
        "baseline": result.baseline,
        "delta": result.delta,
        "alpha": result.alpha,
        "sided": result.sided,
        "power": 0.8,
        "n_tasks_available": result.n_tasks_available,
        "within_task_var": result.within_var,
        "between_version_var": result.between_var,
        "rows": result.rows,
        "notes": result.notes,
    }


def text_report(result: Plan) -> str:
    """The plan as a small table."""
    lines = [
        f"{result.benchmark}: to catch a {100 * result.delta:.3g}-point regression with 80% power "
        f"({result.sided}, alpha {result.alpha}), baseline {result.baseline}, {result.n_tasks_available} tasks now",
        f"{'samples':>8} {'sd/task':>8} {'tasks needed':>13} {'power now':>10} {'MDE80 now':>10}",
    ]
    for r in result.rows:
        lines.append(
            f"{r['samples']:>8} {r['sd_per_task']:>8.3f} {r['tasks_needed']:>13} "
            f"{100 * r['power_at_available']:>9.0f}% {100 * r['mde80_at_available']:>8.1f}pp"
        )
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)

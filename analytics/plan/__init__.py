"""plan: how many tasks and samples a comparison needs to detect a given regression (``python -m analytics plan``;
the method is in ``analysis``'s docstring).

Modules by role: ``load`` (the only database reads), ``compute`` (power, tasks needed, variances), ``analysis``
(one plan: load, then compute) and ``report`` (JSON, text). This package re-exports their public names.
"""

from __future__ import annotations

from analytics.plan.analysis import plan
from analytics.plan.compute import (
    MIN_SHARED,
    SAMPLE_GRID,
    Plan,
    between_variance,
    default_baseline,
    plan_from_variances,
    power,
    tasks_needed,
    within_variance,
)
from analytics.plan.load import benchmark_is_binary, within_task_variances
from analytics.plan.report import report, text_report

__all__ = [
    "MIN_SHARED",
    "SAMPLE_GRID",
    "Plan",
    "benchmark_is_binary",
    "between_variance",
    "default_baseline",
    "plan",
    "plan_from_variances",
    "power",
    "report",
    "tasks_needed",
    "text_report",
    "within_task_variances",
    "within_variance",
]

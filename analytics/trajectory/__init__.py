"""Trajectory analytics: AD-Bench coverage, order-aware alignment, trajectory length, drilldown readers.

Definitions (docs/trajectories.md has the long form):

* **coverage** of an attempt (AD-Bench): 1 when the task's reference trajectory appears as an *ordered
  sub-sequence* of the attempt's tool calls (other calls may sit in between), else 0. Undefined (NaN) when
  the task has no reference trajectory. Rates per run / level are means over attempts (all samples).
* **recall / precision** of reference tool calls: order-free multiset overlap of reference tools and the
  attempt's calls, divided by the reference length (recall) or the number of calls (precision).
* **alignment**: a longest common subsequence (LCS) of reference and calls; every reference step is
  ``matched`` or ``missing``, every other call is ``extra``. The first non-matched entry is the
  **first divergence**.

``python -m analytics coverage [--benchmark B] --json`` prints the per-run slices.

Modules by role: ``load`` (the only database reads: attempts and their coverage tables, the drilldown's readers),
``compute`` (sequences, alignment, metrics, slices, fits), ``report`` (the ``coverage --json`` rows) and ``figures``
(Plotly). Public names are re-exported here: ``from analytics import trajectory as tr``.
"""

from __future__ import annotations

from analytics.trajectory.compute import (
    EXTRA,
    MATCHED,
    METRIC_COLUMNS,
    MISSING,
    SLICE_COLUMNS,
    AlignedStep,
    Alignment,
    Fit,
    align,
    alignment_rows,
    attempt_metrics,
    canonical_json,
    expected_actions,
    failed_neighbours_in,
    failed_on_either_side,
    is_subsequence,
    levels_of,
    marks_from_counts,
    pass_vs_coverage_fits,
    recall_precision,
    summarise_slices,
    tool_calls_in,
    with_metrics,
)
from analytics.trajectory.figures import LEVEL_STYLE, OP_COLOURS, fig_coverage_by_level, fig_pass_vs_coverage
from analytics.trajectory.load import (
    PREVIEW_CHARS,
    alignment_frame,
    attempt_detail,
    attempt_trajectories,
    attempts_of,
    coverage_by_level,
    coverage_table,
    failed_around,
    judge_verdicts_of,
    runs_of,
    runs_with_task,
    step_result,
    steps_page,
    task_attempts,
    task_marks_of,
    tool_calls_of,
)
from analytics.trajectory.report import COVERAGE_KEYS, coverage_rows, partial_notice

__all__ = [
    "EXTRA",
    "MATCHED",
    "METRIC_COLUMNS",
    "MISSING",
    "SLICE_COLUMNS",
    "AlignedStep",
    "Alignment",
    "Fit",
    "align",
    "alignment_rows",
    "attempt_metrics",
    "canonical_json",
    "expected_actions",
    "is_subsequence",
    "levels_of",
    "pass_vs_coverage_fits",
    "recall_precision",
    "summarise_slices",
    "with_metrics",
    "LEVEL_STYLE",
    "OP_COLOURS",
    "fig_coverage_by_level",
    "fig_pass_vs_coverage",
    "PREVIEW_CHARS",
    "alignment_frame",
    "attempt_detail",
    "attempt_trajectories",
    "attempts_of",
    "failed_around",
    "failed_neighbours_in",
    "failed_on_either_side",
    "task_attempts",
    "marks_from_counts",
    "task_marks_of",
    "coverage_by_level",
    "coverage_table",
    "judge_verdicts_of",
    "runs_of",
    "runs_with_task",
    "step_result",
    "steps_page",
    "tool_calls_in",
    "tool_calls_of",
    "COVERAGE_KEYS",
    "coverage_rows",
    "partial_notice",
]

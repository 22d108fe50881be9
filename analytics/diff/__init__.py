"""Version-to-version diff of two runs on one benchmark: flipped tasks, exact McNemar test, deltas.

Per task outcome (documented in docs/trajectories.md):

* the **binary outcome** used for flips and McNemar is, by default, the task's lowest sample (sample 0);
  ``basis="majority"`` uses "passed in at least half of the samples" instead;
* the **deltas** per level and category use the Pass@1-style mean over samples per task, averaged over the
  tasks both runs attempted, with a seeded paired bootstrap interval over tasks.

Modules by role: ``load`` (the only database reads; ``compare_runs``), ``compute`` (pairing, tests, deltas,
per-task changes), ``report`` (the tables people read) and ``figures`` (Plotly). Public names are re-exported here:
``from analytics import diff``.
"""

from __future__ import annotations

from analytics.diff.arrays import TaskColumn
from analytics.diff.compute import (
    BASES,
    CHANGE_ORDER,
    MEASURE_COLUMNS,
    MEASURES,
    SEED,
    RunDiff,
    _single,
    aligned,
    aligned_positions,
    default_pair,
    incomplete_note,
    is_significant,
    mcnemar_exact,
    measure_deltas,
    pair_tasks,
    paired_test_of,
    paired_test_on,
    run_diff,
    slice_deltas,
    tasks_by_change,
    values_by_task,
    without_superseded,
)
from analytics.diff.figures import fig_deltas
from analytics.diff.load import (
    compare_runs,
    compare_runs_with_values,
    metric_values,
    run_benchmark,
    run_pairs,
    task_values,
)
from analytics.diff.report import changes_table, measures_table

__all__ = [
    "BASES",
    "TaskColumn",
    "CHANGE_ORDER",
    "MEASURE_COLUMNS",
    "MEASURES",
    "SEED",
    "RunDiff",
    "_single",
    "aligned",
    "aligned_positions",
    "default_pair",
    "incomplete_note",
    "without_superseded",
    "is_significant",
    "mcnemar_exact",
    "paired_test_of",
    "paired_test_on",
    "measure_deltas",
    "pair_tasks",
    "run_diff",
    "slice_deltas",
    "tasks_by_change",
    "values_by_task",
    "fig_deltas",
    "compare_runs",
    "compare_runs_with_values",
    "metric_values",
    "run_benchmark",
    "run_pairs",
    "task_values",
    "changes_table",
    "measures_table",
]

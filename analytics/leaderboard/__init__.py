"""leaderboard: Pass@k, pass^k, mean score, steps and cost per run, with 95% intervals and ties.

Definitions (also in the README):
    * Pass@k: the unbiased estimator of Chen et al. (2021), averaged over tasks; k in 1, 2, 3, 5, 10, 20, 50,
      100, ... up to the smallest number of samples any task of the run has (``k_max``).
    * pass^k: the probability that k samples of a task all succeed, ``C(c,k)/C(n,k)``, averaged over tasks.
    * Intervals: Wilson over tasks for rates (Pass@1: with the task-clustered effective size); mean score:
      ``compare.score_interval`` (clustered Wilson with Student's t); a seeded percentile bootstrap over tasks for
      mean steps (tool calls per attempt) and mean cost per task.
    * Verdicts: the ranked runs of a slice (its ranked comparison set, ``runs.comparable_runs``) are tested
      against the data-chosen leader by a selection-aware max-gap permutation test (``compare.max_gap_test``);
      ``is_tied`` rows and the leader form the ``top_group``. Rows shown apart (humans, baselines, other task pools)
      get their own paired tests, Holm-adjusted among themselves. Human rows are never ranked and never lead.

Modules by role: ``load`` (the only database reads; the runs themselves come from ``analytics.runs``),
``compute`` (rows, Pass@k, pass^k, the row ``STATISTICS`` and their intervals, Pareto), ``verdicts`` (comparison
sets, ranks, tests against the leader), ``analysis`` (a store's leaderboard: load, then compute), ``report`` (JSON,
text, display tables) and ``figures`` (Plotly). A new statistic: a ``Statistic`` in ``compute.STATISTICS`` and its
column in ``report.display_table``. This package re-exports their public names: ``from analytics import
leaderboard as lb; lb.leaderboard(con, run_filter)``.
"""

from __future__ import annotations

from analytics.leaderboard.analysis import comparison_membership, leaderboard, report
from analytics.leaderboard.compute import (
    BASE_COLUMNS,
    BOOTSTRAPPED,
    COLUMNS,
    NULLABLE,
    OUTCOME_COLUMNS,
    RUN_STATE_COLUMNS,
    RUN_STATE_DEFAULTS,
    SLICE_KINDS,
    STATISTICS,
    Statistic,
    add_pareto,
    k_values,
    leaderboard_rows,
    membership,
    with_scale,
)
from analytics.leaderboard.figures import fig_cost_accuracy, fig_pass_at_1
from analytics.leaderboard.load import benchmark_scoring, benchmark_threshold, ranked_score, task_outcomes
from analytics.leaderboard.report import (
    COMPARISON_SET_RULE,
    REPORT_KEYS,
    apart_reason,
    comparison_label,
    comparison_set_entry,
    display_table,
    incomplete_label,
    payload,
    slice_pivot,
    summary_table,
    text_report,
)
from analytics.leaderboard.verdicts import (
    APART_P_METHOD,
    COMPARISON_COLUMNS,
    RANKED_P_METHOD,
    TEST_COLUMNS,
    compare_rows,
)

__all__ = [
    "APART_P_METHOD",
    "BASE_COLUMNS",
    "BOOTSTRAPPED",
    "COLUMNS",
    "COMPARISON_COLUMNS",
    "COMPARISON_SET_RULE",
    "NULLABLE",
    "OUTCOME_COLUMNS",
    "RANKED_P_METHOD",
    "REPORT_KEYS",
    "RUN_STATE_COLUMNS",
    "RUN_STATE_DEFAULTS",
    "SLICE_KINDS",
    "STATISTICS",
    "TEST_COLUMNS",
    "Statistic",
    "add_pareto",
    "apart_reason",
    "benchmark_scoring",
    "benchmark_threshold",
    "compare_rows",
    "comparison_label",
    "comparison_membership",
    "comparison_set_entry",
    "display_table",
    "fig_cost_accuracy",
    "fig_pass_at_1",
    "incomplete_label",
    "k_values",
    "leaderboard",
    "leaderboard_rows",
    "membership",
    "payload",
    "ranked_score",
    "report",
    "slice_pivot",
    "summary_table",
    "task_outcomes",
    "text_report",
    "with_scale",
]

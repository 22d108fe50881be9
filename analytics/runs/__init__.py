"""runs: what a run is, in one place: loading the runs a run filter selects (their columns, baseline flag and log
state), how complete each is, which runs are compared with each other (one rule, ``is_eligible`` /
``comparable_runs``) and the one label people read (``run_label``).

Modules by role: ``load`` (the only database reads), ``compute`` (completeness, comparison eligibility) and
``report`` (labels, the incomplete-runs table). This package re-exports their public names.
"""

from __future__ import annotations

from analytics.runs.compute import (
    COMPLETE_STATUSES,
    comparable_runs,
    comparable_runs_of,
    is_eligible,
    with_completeness,
    with_health,
)
from analytics.runs.load import RUN_COLUMNS, RUN_SELECT, load_runs, run_health
from analytics.runs.report import incomplete_table, row_label, run_label, unique_run_labels

__all__ = [
    "COMPLETE_STATUSES",
    "RUN_COLUMNS",
    "RUN_SELECT",
    "comparable_runs",
    "comparable_runs_of",
    "incomplete_table",
    "is_eligible",
    "load_runs",
    "row_label",
    "run_health",
    "run_label",
    "unique_run_labels",
    "with_completeness",
    "with_health",
]

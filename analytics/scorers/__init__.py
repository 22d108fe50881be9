"""Scorers: which scores a benchmark's attempts have (the ``scores`` table), one chosen for a report, its scale, and
the metrics Inspect computed for it (``results.scores`` of the log, kept in the run's extra).

Modules by role: ``load`` (the reads: names, scale, a scorer's per-task outcomes) and ``compute`` (Inspect's own
metrics from a run's results). This package re-exports their public names.
"""

from __future__ import annotations

from analytics.scorers.compute import inspect_metrics
from analytics.scorers.load import (
    ScorerNotFoundError,
    available_scorers,
    check_scorer,
    scorer_outcomes,
    scorer_scale,
)

__all__ = [
    "ScorerNotFoundError",
    "available_scorers",
    "check_scorer",
    "inspect_metrics",
    "scorer_outcomes",
    "scorer_scale",
]

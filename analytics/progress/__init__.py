"""Progress index views over a stored IRT fit: frontier, velocity, breakthroughs, and their figures.

Everything here reads a stored fit (analytics.irt) and never fits: the Progress page stays fast on a rerun.

Modules by role: ``load`` (the only database reads: ``progress_view``), ``compute`` (the view, what the sidebar shows
of it, frontier, velocity, breakthroughs, item curves) and ``figures`` (Plotly). Public names are re-exported here:
``from analytics import progress as prog``.
"""

from __future__ import annotations

from analytics.progress.compute import (
    DAYS_PER_MONTH,
    ProgressView,
    breakthroughs,
    frontier,
    icc,
    shown,
    velocity,
)
from analytics.progress.figures import fig_ability_over_time, fig_icc, fig_raw_over_time, fig_wright_map
from analytics.progress.load import RAW_SQL, progress_view

__all__ = [
    "DAYS_PER_MONTH",
    "RAW_SQL",
    "ProgressView",
    "progress_view",
    "shown",
    "frontier",
    "velocity",
    "breakthroughs",
    "icc",
    "fig_ability_over_time",
    "fig_raw_over_time",
    "fig_wright_map",
    "fig_icc",
]

"""tmf: Tech-Market-Fit (xbench 5.2): cost vs performance, optimal supply curve, human cost curve, value, stage.

Definitions (also in docs/tmf.md and on the page):
    * Point: one non-human run on the slice's comparison set (the task set most runs share; ``compare``).
      Performance is Pass@1 (mean over tasks of passed/samples, Wilson interval with the task-clustered n_eff), the mean score (percentile bootstrap over tasks) or the IRT ability of the run's agent + version
      (from the newest stored fit in ``irt_abilities``). Cost per task is the mean over tasks of the task's mean
      ``cost_usd`` ("logged"; ingest already fills it from tokens x prices when a log has none) or of
      tokens x the run's prices ("tokens"); latency per task (``latency_s``) is the alternative x axis. The
      x interval is a seeded bootstrap over tasks. Runs with no cost are kept with ``has_cost`` false.
    * Optimal supply curve: the Pareto frontier, the runs that no other run beats on both axes (cheaper or
      equal AND better or equal, one strictly). Exact duplicates are both kept. Supply S(p) is the cost of the
      cheapest frontier run with performance >= p (a step). The "hull" option uses the upper convex hull of
      the points in linear cost, i.e. what routing a share of tasks to each of two agents achieves.
    * Human: cost per task = mean over tasks of human_minutes x hourly rate / 60; performance from kind=human
      runs (their tasks pooled) when there are any, else an input (default 100% for rates; none for IRT).
    * Market acceptance curve A(p) = willingness x human cost x ((p - p0) / (human performance - p0))^exponent,
      p0 = 0 for rates (the lowest ability shown for IRT). The default (willingness 1, exponent 1) is xbench's
      worst case: a buyer pays at most what a human costs, scaled by quality relative to the human.
    * Value per task: the integral over performance of max(0, A(p) - S(p)); in dollars per task for rates
      (performance on a 0..1 scale), i.e. the saving per task averaged over all quality levels.
      Best operating point: the performance where A(p) - S(p) is largest (signed; negative = gap to TMF).
    * Stage 1: A(p) <= S(p) everywhere (regions do not meet). Stage 3: a frontier run with performance >= the
      human's costs less than both the human and A(p). Stage 2: otherwise, when they meet.
    * Over time: the frontier of every run evaluated up to the end of each period. Repricing replaces a run's
      prices by those of the newest run (by eval_date) of the same family (agent when family is empty) that
      has prices, and recomputes cost from tokens; runs without tokens keep their logged cost.

Modules by role: ``model`` (points, frontier, human, acceptance, value, stage), ``codes`` (a frame's run and task
codes, found once), ``load`` (the only database
reads), ``analysis`` (one analysis, its bootstrap, slices, periods), ``overview`` (the page's views of a benchmark from
one read: the overview, the first view, the movie, the slices), ``report`` (JSON, text, tables, captions) and
``figures`` (Plotly, and the exported chart and page). This package re-exports their public names:
``from analytics import tmf``.
"""

from __future__ import annotations

from analytics.tmf.analysis import (
    MARKET_OPTIONS,
    Supply,
    TmfOptions,
    TmfResult,
    analyse,
    analyse_slices,
    bootstrap_tmf,
    by_period,
    comparison_set,
    drop_baselines,
    finish,
    finish_slices,
    period_end,
    period_table,
    prepare,
    prepare_periods,
    prepare_slices,
)
from analytics.tmf.bootstrap import Replicates, Uncertainty
from analytics.tmf.figures import (
    COLORS,
    STAGE_COLORS,
    Trace,
    export_figure,
    fig_movie,
    fig_small_multiples,
    fig_tmf,
    frontier_labels,
    page_export,
    short_labels,
    subplot_grid,
)
from analytics.tmf.load import (
    RUN_COLUMNS,
    TASK_COLUMNS,
    TmfInputs,
    attach_details,
    has_irt_fit,
    irt_abilities,
    load,
)
from analytics.tmf.model import (
    AXES,
    BOOT_GRID_POINTS,
    COST_SOURCES,
    DEFAULT_HOURLY_USD,
    DEFAULT_HUMAN_PERFORMANCE,
    GRID_POINTS,
    MIN_TASKS,
    N_REPLICATES,
    PERFORMANCES,
    PERIODS,
    POINT_COLUMNS,
    STAGE_NAMES,
    SUPPLIES,
    Acceptance,
    Human,
    TmfError,
    Value,
    current_prices,
    human_baseline,
    pareto_mask,
    row_costs,
    run_points,
    slice_names,
    slice_tasks,
    supply_cost,
    upper_hull,
    value_and_stage,
    value_from_arrays,
)
from analytics.tmf.overview import (
    Overview,
    PreparedOverview,
    finish_movie,
    finish_overview,
    overview,
    period_labels,
    prepare_current,
    prepare_movie,
    prepare_overview,
    prepare_slice_results,
    slice_results,
)
from analytics.tmf.report import (
    DEFINITIONS_MD,
    DEMO_CAVEAT,
    DOLLAR_DEFINITIONS,
    assumptions_sentence,
    comparison_caption,
    fmt_perf,
    fmt_x,
    headline,
    points_table,
    reconciliation,
    report,
    runs_display,
    stage_label,
    stage_table,
    text_report,
)

__all__ = [
    "reconciliation",
    "PERFORMANCES",
    "AXES",
    "COST_SOURCES",
    "SUPPLIES",
    "PERIODS",
    "DEFAULT_HOURLY_USD",
    "DEFAULT_HUMAN_PERFORMANCE",
    "STAGE_NAMES",
    "GRID_POINTS",
    "N_REPLICATES",
    "BOOT_GRID_POINTS",
    "MIN_TASKS",
    "TmfError",
    "slice_tasks",
    "slice_names",
    "current_prices",
    "row_costs",
    "POINT_COLUMNS",
    "run_points",
    "pareto_mask",
    "upper_hull",
    "supply_cost",
    "Human",
    "human_baseline",
    "Acceptance",
    "Value",
    "value_and_stage",
    "value_from_arrays",
    "TmfInputs",
    "RUN_COLUMNS",
    "TASK_COLUMNS",
    "load",
    "attach_details",
    "irt_abilities",
    "has_irt_fit",
    "TmfResult",
    "Uncertainty",
    "TmfOptions",
    "analyse",
    "drop_baselines",
    "comparison_set",
    "bootstrap_tmf",
    "by_period",
    "period_table",
    "Overview",
    "overview",
    "analyse_slices",
    "slice_results",
    "MARKET_OPTIONS",
    "PreparedOverview",
    "Supply",
    "Replicates",
    "finish",
    "finish_movie",
    "finish_overview",
    "period_labels",
    "prepare_current",
    "prepare_movie",
    "finish_slices",
    "prepare",
    "prepare_overview",
    "prepare_periods",
    "prepare_slice_results",
    "prepare_slices",
    "period_end",
    "report",
    "text_report",
    "fmt_x",
    "fmt_perf",
    "DEMO_CAVEAT",
    "DOLLAR_DEFINITIONS",
    "assumptions_sentence",
    "export_figure",
    "headline",
    "stage_label",
    "DEFINITIONS_MD",
    "points_table",
    "runs_display",
    "comparison_caption",
    "stage_table",
    "page_export",
    "COLORS",
    "STAGE_COLORS",
    "Trace",
    "short_labels",
    "frontier_labels",
    "fig_tmf",
    "subplot_grid",
    "fig_small_multiples",
    "fig_movie",
]

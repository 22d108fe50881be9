"""The page's views of one benchmark: the overview (every run, every period, the small multiples) from one read, the
first view alone (``prepare_current``), and the movie and the slices on their own, each prepared up to the human and
the market and finished apart (a new hourly rate finishes the cached preparation again)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd

from analytics.tmf.analysis import (
    Supply,
    TmfOptions,
    TmfResult,
    finish,
    finish_slices,
    prepare,
    prepare_periods,
    prepare_slices,
    slice_rows,
)
from analytics.tmf.bootstrap import WeightsKey, discard_weights, prefetch_weights
from analytics.tmf.codes import (
    first_rows_of,
)
from analytics.tmf.load import TmfInputs, load, row_columns_for
from analytics.tmf.model import (
    PERIODS,
    TmfError,
)
from store import ALL_RUNS, RunFilter


@dataclass(frozen=True)
class Overview:
    """What the page needs from one load of the data: the analysis of every run, the cumulative analysis per
    period, and the small multiples of every run for the slice kinds asked for (``level``: the page's default)."""

    overall: TmfResult | None
    movie: tuple[tuple[str, TmfResult], ...]
    by_kind: dict[str, tuple[TmfResult, ...]] = field(default_factory=dict)
    periods: tuple[
        str, ...
    ] = ()  # the movie's period labels, oldest first (also without the movie: ``prepare_current``)
    has_irt_fit: bool | None = None  # ``has_irt_fit`` of the benchmark, read with the runs (``prepare_current``)


@dataclass(frozen=True)
class PreparedOverview:
    """``Overview`` before the human and the market (``prepare_overview``): ``finish_overview`` makes it one
    ``Overview`` per hourly rate, human figure, willingness and exponent without reading or resampling again."""

    overall: Supply | None
    movie: tuple[tuple[str, Supply], ...]
    by_kind: dict[str, tuple[Supply, ...]] = field(default_factory=dict)
    periods: tuple[str, ...] = ()  # the movie's period labels, oldest first
    has_irt_fit: bool | None = None  # ``has_irt_fit`` of the benchmark, read with the runs (None: not read)


def overview(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    options: TmfOptions | None = None,
    freq: str = "quarter",
    slice_kinds: tuple[str, ...] = ("level",),
) -> Overview:
    """Load and analyse the filter's benchmark (for ``ui.common.cached``: every argument is hashable).

    The small multiples of ``slice_kinds`` come with it so that the page's first render reads the data once;
    another kind, or an earlier period, is ``slice_results``. The same as ``finish_overview`` of
    ``prepare_overview``, which a page caches apart so that a new hourly rate only redoes ``finish``.
    """
    prepared = prepare_overview(con, run_filter, options=options, freq=freq, slice_kinds=slice_kinds)
    return finish_overview(prepared, options=options)


def prepare_overview(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    options: TmfOptions | None = None,
    freq: str = "quarter",
    slice_kinds: tuple[str, ...] = ("level",),
) -> PreparedOverview:
    """``overview`` up to the human and the market: reads only ``options.supply_side()`` (the stored IRT abilities
    only for an analysis of them)."""
    inputs = _load(con, run_filter, options or TmfOptions())
    if inputs.tasks.empty:
        return PreparedOverview(None, ())
    sliced = slice_rows(inputs)  # every run's rows: made once for the analysis and its periods
    movie = tuple(prepare_periods(inputs, options=options, freq=freq, sliced=sliced))
    return PreparedOverview(
        prepare(inputs, options=options, sliced=sliced),
        movie,
        {kind: prepare_slices(inputs, kind=kind, options=options) for kind in slice_kinds},
        tuple(label for label, _ in movie),
    )


def prepare_current(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    options: TmfOptions | None = None,
    freq: str = "quarter",
) -> PreparedOverview:
    """What the page shows first: ``prepare_overview``'s overall analysis (with its bootstrap) and its period
    labels (``period_labels``), without the analysis of every period (``prepare_movie``) and of every slice
    (``prepare_slice_results``), which the page prepares only when they are asked for. The same overall analysis
    and labels as ``prepare_overview``; with them, whether the benchmark has a stored IRT fit (``has_irt_fit``,
    read in the runs' statement: the page offers the IRT choice from it without a statement of its own)."""
    opt = options or TmfOptions()
    started: list[WeightsKey | None] = []

    def draw_weights(n_tasks: int) -> None:  # the overall bootstrap's draw, on the other core during the read
        if opt.performance != "irt" and opt.n_replicates > 0:
            started.append(prefetch_weights(n_tasks, seed=opt.seed, slice_name="all", n_replicates=opt.n_replicates))

    try:
        inputs = _load(con, run_filter, opt, on_task_count=draw_weights)
        if inputs.tasks.empty:
            return PreparedOverview(None, (), has_irt_fit=inputs.has_irt_fit)
        labels = tuple(period_labels(inputs, freq))
        return PreparedOverview(prepare(inputs, options=options), (), {}, labels, inputs.has_irt_fit)
    finally:
        for key in started:  # a draw the analysis did not take (another number of tasks, no human time yet)
            discard_weights(key)


def prepare_movie(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    options: TmfOptions | None = None,
    freq: str = "quarter",
) -> tuple[tuple[str, Supply], ...]:
    """``prepare_overview``'s movie (the analysis as of the end of every period) on its own."""
    inputs = _load(con, run_filter, options or TmfOptions())
    if inputs.tasks.empty:
        return ()
    return tuple(prepare_periods(inputs, options=options, freq=freq))


def finish_movie(
    movie: tuple[tuple[str, Supply], ...], options: TmfOptions | None = None
) -> tuple[tuple[str, TmfResult], ...]:
    """``finish`` of every period of ``prepare_movie``."""
    return tuple((label, finish(supply, options)) for label, supply in movie)


def period_labels(inputs: TmfInputs, freq: str = "quarter") -> list[str]:
    """The labels of ``prepare_periods(inputs, freq=freq)`` (every period with a dated agent run), from the runs'
    dates alone: nothing is analysed."""
    if freq not in PERIODS:
        raise TmfError(f"period {freq!r}: expected one of {', '.join(PERIODS)}")
    rows = inputs.tasks
    if inputs.runs is None or "run_code" not in rows:  # a frame built by hand: the runs' first rows
        first = first_rows_of(rows, "run_id")
        kind, date = rows["kind"].to_numpy()[first], rows["eval_date"].to_numpy()[first]
    else:  # the runs that have a row, by their code (``load`` groups the rows by run)
        present = np.flatnonzero(np.bincount(rows["run_code"].to_numpy(), minlength=len(inputs.runs)))  # sorted
        kind = inputs.runs["kind"].to_numpy()[present]
        date = inputs.runs["eval_date"].to_numpy()[present]
    dates = pd.to_datetime(pd.Series(date[np.asarray(kind != "human", dtype=bool)], dtype=object)).dropna()
    return [str(per) for per in sorted(dates.dt.to_period(PERIODS[freq]).unique())]


def finish_overview(prepared: PreparedOverview, options: TmfOptions | None = None) -> Overview:
    """``prepared`` under the human and market options of ``options``."""
    if prepared.overall is None:
        return Overview(None, (), has_irt_fit=prepared.has_irt_fit)
    return Overview(
        finish(prepared.overall, options),
        finish_movie(prepared.movie, options),
        {kind: finish_slices(supplies, options) for kind, supplies in prepared.by_kind.items()},
        prepared.periods,
        prepared.has_irt_fit,
    )


def slice_results(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    kind: str = "level",
    options: TmfOptions | None = None,
    as_of: dt.date | None = None,
) -> tuple[TmfResult, ...]:
    """The analysis of every ``level`` (or ``category``) slice, for small multiples (runs up to ``as_of``)."""
    return finish_slices(prepare_slice_results(con, run_filter, kind=kind, options=options, as_of=as_of), options)


def prepare_slice_results(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    kind: str = "level",
    options: TmfOptions | None = None,
    as_of: dt.date | None = None,
) -> tuple[Supply, ...]:
    """``slice_results`` up to the human and the market."""
    inputs = _load(con, run_filter, options or TmfOptions())
    return prepare_slices(inputs, kind=kind, options=options, as_of=as_of)


def _load(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter,
    opt: TmfOptions,
    *,
    on_task_count: Callable[[int], object] | None = None,
) -> TmfInputs:
    """``load`` of what an analysis of ``opt`` reads: the stored IRT abilities only for an analysis of them, the
    rows' columns of ``row_columns_for`` its options (the first view's Pass@1 of logged costs: no score, no tokens)."""
    return load(
        con,
        run_filter,
        with_abilities=opt.performance == "irt",
        on_task_count=on_task_count,
        row_columns=row_columns_for(opt.performance, opt.cost_source, opt.is_repriced),
        include_incomplete=opt.include_incomplete,
    )

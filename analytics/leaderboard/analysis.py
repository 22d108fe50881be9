"""The leaderboard of a store: its reads (``load``, ``analytics.runs``) then its statistics (``compute``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from analytics import compare, scorers
from analytics.leaderboard.compute import SLICE_KINDS, board_of_rows, leaderboard_rows, membership, with_scale
from analytics.leaderboard.load import board_rows, coded_task_outcomes, ranked_score, task_outcomes
from analytics.leaderboard.report import payload
from analytics.runs import load_runs
from store import ALL_RUNS, RunFilter, RunlensError


def leaderboard(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    slices: Sequence[str] = SLICE_KINDS,
    seed: int = 0,
    n_boot: int = 1000,
    exclude_errored: bool = False,
    scorer: str | None = None,
    rank_incomplete: bool = False,
) -> pd.DataFrame:
    """The leaderboard of one benchmark (the filter's): one row per run and slice (``all``, ``level=L``,
    ``category=C``).

    Errored attempts (status ``crashed``) count as failures unless ``exclude_errored`` leaves them out, as
    Inspect's accuracy does. ``scorer`` ranks by that scorer (``analytics.scorers``; a name the benchmark lacks
    raises ``ScorerNotFoundError`` listing those it has) instead of the headline score; a scorer on its own scale
    (a 0-10 rating) is ranked by its raw mean and has no pass rate. An incomplete run (``runs.load_runs``) is
    shown but never ranked, unless ``rank_incomplete``. Returns an empty frame (with the columns) when nothing
    matches.
    """
    benchmark = run_filter.benchmark
    if benchmark is None:
        raise RunlensError("a leaderboard is of one benchmark: the run filter names none")
    runs = load_runs(con, run_filter)
    # the headline score's kept rows by their places only (no run or task id per row), with the benchmark's scoring
    # (``ranked_score``'s without a scorer); a scorer's values, or a task missing from the tasks table, are read as a
    # frame with their ids
    rows = board_rows(con, run_filter, runs=runs, exclude_errored=exclude_errored) if scorer is None else None
    if rows is not None:
        scoring, threshold = rows.scoring, None
    else:
        scorer, scoring, threshold = ranked_score(con, benchmark=benchmark, scorer=scorer)
    metric = compare.ranking_metric("continuous" if scoring == "raw" else scoring)
    if rows is not None:
        out = board_of_rows(
            runs, rows, slices=slices, metric=metric, seed=seed, n_boot=n_boot, rank_incomplete=rank_incomplete
        )
        return with_scale(out, runs, scoring=scoring, scorer=scorer)
    outcomes, task_codes = coded_task_outcomes(
        con, run_filter, runs=runs, exclude_errored=exclude_errored, scorer=scorer, threshold=threshold
    )
    out = leaderboard_rows(
        runs,
        outcomes,
        slices=slices,
        metric=metric,
        seed=seed,
        n_boot=n_boot,
        rank_incomplete=rank_incomplete,
        task_codes=task_codes,
    )
    return with_scale(out, runs, scoring=scoring, scorer=scorer)


def comparison_membership(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS, *, kinds: Sequence[str] = ("all", "level")
) -> pd.DataFrame:
    """Per run and slice, whether the run is in the slice's ranked comparison set: the leaderboard's
    ``is_comparable`` (``runs.comparable_runs`` without baselines), for views that need only the membership
    (coverage correlation). Columns: run_id, slice, is_comparable, comparison_set_size."""
    runs = load_runs(con, run_filter)
    return membership(runs, task_outcomes(con, run_filter, runs=runs), kinds=kinds)


def report(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    seed: int = 0,
    exclude_errored: bool = False,
    scorer: str | None = None,
    rank_incomplete: bool = False,
) -> dict[str, Any]:
    """The JSON report of the filter's benchmark (``report.payload``): ``python -m analytics leaderboard --json``."""
    df = leaderboard(
        con, run_filter, seed=seed, exclude_errored=exclude_errored, scorer=scorer, rank_incomplete=rank_incomplete
    )
    benchmark = str(run_filter.benchmark)
    if scorer is not None:
        scorer = scorers.check_scorer(con, benchmark=benchmark, scorer=scorer)
    return payload(
        df, benchmark=benchmark, exclude_errored=exclude_errored, scorer=scorer, rank_incomplete=rank_incomplete
    )

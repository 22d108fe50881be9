"""Runs, computed: whether a run's log is complete, and which runs are compared with each other (one rule).

Pure: frames and mappings in, frames and ``compare.ComparisonSets`` out; no queries (``load``) and no figures.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, TypeVar

import pandas as pd

from analytics import compare

K = TypeVar("K", bound=Hashable)
COMPLETE_STATUSES = ("success", "completed")  # a log's status when it finished (Inspect: success)


def is_eligible(kind: object, is_baseline: object, *, include_baselines: bool = False) -> bool:
    """The one rule of who is compared: a run competes unless it is a human run or, without ``include_baselines``,
    a baseline-marked run (``compare.IS_BASELINE_SQL``; a missing flag counts as False).

    Args:
        kind: the run's kind (``human`` runs are references, never compared).
        is_baseline: the run's ``is_baseline`` flag.
        include_baselines: baseline-marked runs compete too (TMF, whose inputs have had them removed already).
    """
    if include_baselines:
        return str(kind) != "human"
    return compare.is_rankable(kind, is_baseline)


def comparable_runs(
    task_sets: Mapping[K, Iterable[str]],
    kinds: Mapping[K, object],
    is_baseline: Mapping[K, object] | None = None,
    *,
    include_baselines: bool = False,
    also_excluded: Iterable[K] = (),
) -> compare.ComparisonSets:
    """The comparison sets of the runs of ``task_sets`` (``compare.comparison_sets``) with the eligible runs
    (``is_eligible``) as the ones that vote and can be ranked.

    Args:
        task_sets: run -> the tasks it was evaluated on (in the slice).
        kinds: run -> its kind.
        is_baseline: run -> its ``is_baseline`` flag (None: no run is marked).
        include_baselines: the explicit difference between views: the leaderboard leaves baseline-marked runs
            out of the ranking (False), TMF compares every agent run it is given (True).
        also_excluded: runs left out on top of the rule (the leaderboard's incomplete runs).
    """
    return comparable_runs_of(
        compare.task_matrix(task_sets),
        kinds,
        is_baseline,
        include_baselines=include_baselines,
        also_excluded=also_excluded,
    )


def comparable_runs_of(
    matrix: compare.TaskMatrix,
    kinds: Mapping[Any, object],
    is_baseline: Mapping[Any, object] | None = None,
    *,
    include_baselines: bool = False,
    also_excluded: Iterable[Hashable] = (),
) -> compare.ComparisonSets:
    """``comparable_runs`` of a ``compare.TaskMatrix`` (runs x tasks, e.g. ``compare.task_matrix_of_pairs`` of a
    frame's run and task columns): the same sets, with no set of task ids built per run."""
    flags: Mapping[Any, object] = is_baseline or {}
    out = set(also_excluded)
    eligible = [
        r
        for r in matrix.runs
        if r not in out and r in kinds and is_eligible(kinds[r], flags.get(r), include_baselines=include_baselines)
    ]
    return compare.comparison_sets_of(matrix, eligible=eligible)


# ``with_completeness``'s rule for a run ``r`` of the ``runs`` table, in SQL, for a statement that pools runs
# (Progress's subjects, the IRT fit): the same status list, and the attempts held (run_task_stats, as
# run_attempt_counts.sql counts them) against the log's total_samples. tests/test_incomplete_runs.py holds the two
# to the same runs.
_TOTAL_SQL = "TRY_CAST(json_extract_string(r.extra, '$.total_samples') AS BIGINT)"
# the columns ``with_completeness`` reads of a run ``r`` besides its attempts (``leaderboard_runs.sql``'s), for a
# statement that lists runs (TMF's, Version diff's)
RUN_STATE_SQL = (
    "r.status AS log_status,"
    " TRY_CAST(json_extract_string(r.extra, '$.completed_samples') AS BIGINT) AS completed,"
    f" {_TOTAL_SQL} AS total"
)
# the attempts a run ``r`` holds, read only when its log counts its samples: the guard inside the subquery keeps a
# store without such a log from reading run_task_stats at all (0.04-0.05 CPU s a statement at 10M attempts without
# it, BENCHMARKS.md "Incomplete runs in TMF, Version diff and Progress")
HELD_SQL = f"(SELECT sum(s.n_attempts) FROM run_task_stats s WHERE s.run_id = r.run_id AND {_TOTAL_SQL} IS NOT NULL)"
IS_COMPLETE_SQL = (
    f"((r.status IS NULL OR r.status IN ({', '.join(repr(s) for s in COMPLETE_STATUSES)}))"
    f" AND ({_TOTAL_SQL} IS NULL"
    f" OR coalesce({HELD_SQL}, 0) >= {_TOTAL_SQL}))"
)


def with_completeness(runs: pd.DataFrame, held: Mapping[str, int]) -> pd.DataFrame:
    """``runs`` (with ``log_status`` and ``total``) with ``is_complete``: the log's status is a finished one (or
    unknown: not an Inspect log) and it holds every sample it counts (``held``: attempts per run id)."""
    status_ok = runs["log_status"].isna() | runs["log_status"].isin(COMPLETE_STATUSES)
    complete = runs["total"].isna() | (runs["run_id"].map(held).fillna(0) >= runs["total"])
    return runs.assign(is_complete=(status_ok & complete).astype(bool))


def with_health(
    df: pd.DataFrame, superseded_by: Mapping[str, str], partial: Mapping[str, int] | None = None
) -> pd.DataFrame:
    """``run_health``'s rows with ``superseded_by``, ``n_partial`` (``partial``: run id -> attempts stored from a
    trace without its root span; a run not in it has none) and ``is_complete`` (finished status, every counted
    sample completed, no errored, limited, unscored or partial-trace attempt)."""
    if df.empty:
        return df.assign(
            n_partial=pd.Series(dtype="int64"), is_complete=pd.Series(dtype=bool), superseded_by=pd.Series(dtype=object)
        )
    df["superseded_by"] = pd.Series([superseded_by.get(r) for r in df["run_id"]], index=df.index, dtype=object)
    df["n_partial"] = pd.Series([int((partial or {}).get(r, 0)) for r in df["run_id"]], index=df.index, dtype="int64")
    status_ok = df["log_status"].isna() | df["log_status"].isin(COMPLETE_STATUSES)
    counted = df["total_samples"].isna() | (df["completed_samples"] == df["total_samples"])
    clean = (df[["n_errored", "n_limited", "n_unscored", "n_partial"]] == 0).all(axis=1)
    return df.assign(is_complete=status_ok & counted & clean)

"""The leaderboard's statistics: per run and slice, Pass@k, pass^k and the row statistics (``STATISTICS``) with
their 95% intervals, the cost-accuracy Pareto flag, and the columns of the leaderboard frame.

Pure: frames in (``runs.load_runs`` and ``load.task_outcomes``), a frame out; the comparison against the leader is
``verdicts``. A new statistic is one ``Statistic`` in ``STATISTICS`` (its column and JSON field follow) and its
column in ``report.display_table``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analytics import compare, stats
from analytics.leaderboard.verdicts import COMPARISON_COLUMNS, compare_rows, nanmean, span
from analytics.runs import RUN_COLUMNS, comparable_runs_of

if TYPE_CHECKING:  # its type only: compute stays pure (frames and arrays in)
    from analytics.leaderboard.load import BoardRows
from analytics.scorers import inspect_metrics

SLICE_KINDS = ("all", "level", "category")


@dataclass(frozen=True)
class Statistic:
    """One row statistic of the leaderboard: ``reduce`` of a per-(run, task) column over the slice's tasks.

    Attributes:
        name: the leaderboard column (and JSON field).
        source: the per-(run, task) column of ``task_outcomes`` it reads.
        interval: ``bootstrap`` (a seeded percentile bootstrap over tasks, ``_add_bootstrap_cis``), ``t`` (the
            clustered interval with Student's t, ``compare.score_interval``) or ``none``; kept in ``ci95[name]``.
        is_optional: None (not NaN) when no task has a value (a cost no log priced).
        reduce: the statistic of the slice's per-task values (default: their mean, NaN ignored).
    """

    name: str
    source: str
    interval: str = "bootstrap"
    is_optional: bool = False
    reduce: Callable[[np.ndarray], float] = nanmean


# The row statistics, in the order their intervals are computed (bootstrap draws depend on it: append new ones).
STATISTICS = (
    Statistic("mean_score", "score", interval="t"),
    Statistic("mean_steps", "steps"),
    Statistic("mean_cost_usd", "cost_usd", is_optional=True),
)
BOOTSTRAPPED = tuple((s.name, s.source) for s in STATISTICS if s.interval == "bootstrap")
OUTCOME_COLUMNS = ("n", "c", *dict.fromkeys(s.source for s in STATISTICS))  # the arrays of ``leaderboard_rows``


def _slice_groups(
    run_pos: np.ndarray,
    outcomes: Mapping[str, Any],
    kinds: Sequence[str],
    task_codes: np.ndarray | None = None,
    *,
    kinds_per_task: bool = False,
    order: np.ndarray | None = None,
) -> list[tuple[int, np.ndarray, list[tuple[str, np.ndarray]]]]:
    """Per run with outcomes (``run_pos`` sorted, or put in order by ``order``): its position, all its rows, and its slices in display order
    as ``(name, row indices into outcomes)``. ``outcomes[kind]``: each row's level or category (a column or an
    array); ``task_codes`` (each row's task code, when known): the values are then hashed once per task, not
    once per row (a task has one level and one category); ``kinds_per_task``: ``outcomes[kind]`` is the tasks'
    ``load.KindCodes`` (the names, and per task code its place among them), so no row nor value is read for it.
    ``order``: the rows in (run, task) order when they are not (``run_pos`` then in any order): each run's rows are
    its places in it, the same values in the same order as those of rows moved into it."""
    at = np.arange(len(run_pos)) if order is None else order
    in_order = run_pos if order is None else run_pos[order]
    by_run = np.split(at, np.flatnonzero(np.diff(in_order)) + 1) if len(run_pos) else []
    groups = [(int(run_pos[rows[0]]), rows, [("all", rows)] if "all" in kinds else []) for rows in by_run]
    for kind in ("level", "category"):
        if kind not in kinds:
            continue
        if kinds_per_task and task_codes is not None:
            names, per_task = outcomes[kind]  # ``load.KindCodes``: the slice names, each task's place among them
            codes = per_task[task_codes]
        else:
            names, codes = _slice_codes(np.asarray(outcomes[kind], dtype=object), task_codes)
        for _, rows, run_slices in groups:
            part = codes[span(rows)]
            # the run's slice codes, sorted: counted (codes are places in ``names``) instead of hashed by np.unique
            held = part[part >= 0]
            for code in np.flatnonzero(np.bincount(held, minlength=len(names))) if len(held) else ():
                run_slices.append((f"{kind}={names[code]}", rows[part == code]))
    return groups


def _slice_codes(values: np.ndarray, task_codes: np.ndarray | None) -> tuple[list[str], np.ndarray]:
    """The slice names (``str`` of the distinct values, sorted) and each row's place among them (-1: none).
    With ``task_codes``, one row per task stands for all of its rows."""
    if task_codes is not None and len(task_codes):
        per_task, uniq = pd.factorize(task_codes)
        head = np.zeros(len(uniq), dtype=np.int64)
        head[per_task] = np.arange(len(per_task))  # a row of each task: its value is every row's of that task
        names, codes = _slice_codes(values[head], None)
        return names, codes[per_task]
    has = pd.notna(values)
    raw, uniq = pd.factorize(values[has])  # one hash per row; the text of each distinct value
    uniq = np.asarray(uniq, dtype=object)
    names = sorted({str(v) for v in uniq})
    codes = np.full(len(values), -1)
    codes[has] = pd.Index(names).get_indexer(uniq.astype(str))[raw]
    return names, codes


def _run_rows(
    run: dict[str, Any],
    k_max: int,
    slices: list[tuple[str, np.ndarray]],
    arrays: dict[str, np.ndarray],
    rates: dict[str, dict[int, np.ndarray]],
) -> list[dict[str, Any]]:
    """The leaderboard rows of one run (bootstrap intervals are added later, for all runs at once)."""
    out = []
    for name, positions in slices:
        n_tasks = len(positions)
        rows = span(positions)  # a view of each column where the rows are consecutive
        ci: dict[str, list[float]] = {}
        pass_at: dict[str, float] = {}
        pass_hat: dict[str, float] = {}
        for k in k_values(k_max):
            p, h = nanmean(rates["pass_at"][k][rows]), nanmean(rates["pass_hat"][k][rows])
            pass_at[str(k)], pass_hat[str(k)] = p, h
            ci[f"pass@{k}"] = list(stats.wilson(p, n_tasks))
            ci[f"pass^{k}"] = list(stats.wilson(h, n_tasks))
        values = {}
        for stat in STATISTICS:
            part = arrays[stat.source][rows]
            values[stat.name] = None if stat.is_optional and not np.isfinite(part).any() else stat.reduce(part)
        out.append(
            {
                **run,
                "slice": name,
                "n_tasks": n_tasks,
                "n_attempts": int(arrays["n"][rows].sum()),
                "k_max": k_max,
                "pass_at": pass_at,
                "pass_hat": pass_hat,
                "ci95": ci,
                **values,
            }
        )
    return out


def k_values(k_max: int) -> list[int]:
    """The k reported for Pass@k and pass^k: 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, ... up to ``k_max`` (every k
    up to the sample count would be 10,000 keys for a run of 10,000 samples)."""
    out = [k for k in (1, 2, 3, 5) if k <= k_max]
    step = 10
    while step <= k_max:
        out += [k for k in (step, 2 * step, 5 * step) if k <= k_max]
        step *= 10
    return out


def _add_bootstrap_cis(
    rows: list[dict[str, Any]], indices: list[np.ndarray], arrays: dict[str, np.ndarray], *, seed: int, n_boot: int
) -> None:
    """Percentile bootstrap intervals (over tasks) of mean score, steps and cost of every row, in place.

    Rows of one slice with the same number of tasks share one seeded resampling draw, keyed by seed, slice and
    size only, so a row's interval never depends on which other runs are shown, and all of them cost one matrix
    product (``stats.bootstrap_mean_cis``).
    """
    buckets: dict[tuple[str, int], list[int]] = {}
    for i, (row, idx) in enumerate(zip(rows, indices, strict=True)):
        buckets.setdefault((row["slice"], len(idx)), []).append(i)
    for (slice_name, size), members in buckets.items():
        columns = [arrays[col][span(indices[i])] for i in members for _, col in BOOTSTRAPPED]
        cis = stats.bootstrap_mean_cis_of(columns, stats.stable_rng(seed, slice_name, str(size)), n_boot=n_boot)
        for j, i in enumerate(members):
            for m, (name, _) in enumerate(BOOTSTRAPPED):
                rows[i]["ci95"][name] = [float(v) for v in cis[j * len(BOOTSTRAPPED) + m]]


def leaderboard_rows(
    runs: pd.DataFrame,
    outcomes: pd.DataFrame,
    *,
    slices: Sequence[str] = SLICE_KINDS,
    metric: str = "pass@1",
    seed: int = 0,
    n_boot: int = 1000,
    rank_incomplete: bool = False,
    task_codes: np.ndarray | None = None,
) -> pd.DataFrame:
    """The leaderboard from ``runs_in`` and ``task_outcomes`` frames: one row per run and slice (``COLUMNS``).
    ``task_codes``: per outcome row, its task's code from ``load.coded_task_outcomes`` (codes that sort as the
    task ids do), so no task id is hashed or turned into text again; the same rows either way.

    Pass@k and pass^k are computed once per (run, task) row for every k and averaged per slice; a clustered
    Wilson interval for Pass@1 and plain Wilson over tasks for the other rates; bootstrap intervals for all rows
    at once (see ``_add_bootstrap_cis``); then ranks and paired tests per slice by ``metric`` (``compare_rows``).
    """
    known = pd.Index(runs["run_id"]).get_indexer(outcomes["run_id"])
    pick = np.flatnonzero(known >= 0)
    order = np.argsort(known[pick], kind="stable")  # rows of one run together, in task order
    pick = pick[order]
    # the rows in that order as arrays (no copy of the frame when it is in that order already, as a store's is)
    as_is = len(pick) == len(outcomes) and bool((pick == np.arange(len(pick))).all())

    def column(name: str, dtype: Any) -> np.ndarray:
        values = outcomes[name].to_numpy(dtype=dtype)
        return values if as_is else values[pick]

    arrays = {col: column(col, float) for col in OUTCOME_COLUMNS}
    codes = None if task_codes is None else np.asarray(task_codes, dtype=np.int64)[pick]
    kinds = {kind: column(kind, object) for kind in ("level", "category") if kind in slices}
    # the task ids, or their codes (which sort as the ids do: the comparisons only match and order tasks)
    tasks = codes if codes is not None else outcomes["task_id"].astype(str).to_numpy(dtype=object)[pick]
    rows = _Rows(known[pick], arrays, tasks, kinds, codes, kinds_per_task=False, order=None)
    return _board(runs, rows, slices=slices, metric=metric, seed=seed, n_boot=n_boot, rank_incomplete=rank_incomplete)


def board_of_rows(
    runs: pd.DataFrame,
    rows: BoardRows,
    *,
    slices: Sequence[str] = SLICE_KINDS,
    metric: str = "pass@1",
    seed: int = 0,
    n_boot: int = 1000,
    rank_incomplete: bool = False,
) -> pd.DataFrame:
    """``leaderboard_rows`` of ``load.board_rows``' rows of ``runs``: the same frame, with no run or task id per row
    (each row's run is its place in ``runs``, its task its code; a task's level and category are read per task)."""
    arrays = {col: np.asarray(rows.columns[col], dtype=float) for col in OUTCOME_COLUMNS}
    codes = np.asarray(rows.task_codes, dtype=np.int64)
    kinds = {kind: rows.task_kinds[kind] for kind in ("level", "category") if kind in slices}
    data = _Rows(rows.run_pos, arrays, codes, kinds, codes, kinds_per_task=True, order=rows.order)
    return _board(runs, data, slices=slices, metric=metric, seed=seed, n_boot=n_boot, rank_incomplete=rank_incomplete)


@dataclass(frozen=True)
class _Rows:
    """The (run, task) rows a board is computed from.

    Attributes:
        run_pos: per row, its run's row in the runs frame.
        arrays: ``OUTCOME_COLUMNS`` per row, as floats.
        tasks: per row, its task id or code (codes sort as the ids do).
        kinds: ``level`` and ``category`` of the slices asked for: per row, or per task code as ``load.KindCodes``
            (``kinds_per_task``).
        codes: per row, its task code (None when the rows have ids only).
        kinds_per_task: ``kinds`` are indexed by task code.
        order: the rows in (run, task) order; None when they are in it (``run_pos`` non-decreasing, each run's
            rows in task order).
    """

    run_pos: np.ndarray
    arrays: dict[str, np.ndarray]
    tasks: np.ndarray
    kinds: dict[str, Any]
    codes: np.ndarray | None
    kinds_per_task: bool
    order: np.ndarray | None


def _board(
    runs: pd.DataFrame,
    data: _Rows,
    *,
    slices: Sequence[str],
    metric: str,
    seed: int,
    n_boot: int,
    rank_incomplete: bool,
) -> pd.DataFrame:
    """The leaderboard frame of ``data``'s rows (``leaderboard_rows``)."""
    if metric not in compare.METRIC_BY_SCORING.values():
        raise ValueError(f"metric: expected pass@1 or mean_score, got {metric!r}")
    arrays = data.arrays
    k_top = int(arrays["n"].max()) if len(data.run_pos) else 0
    pass_at, pass_hat = stats.pass_rates(arrays["n"], arrays["c"], k_values(k_top))
    rates = {"pass_at": pass_at, "pass_hat": pass_hat}
    if "is_baseline" not in runs:
        runs = runs.assign(is_baseline=False)
    for col, default in RUN_STATE_DEFAULTS.items():
        if col not in runs:
            runs = runs.assign(**{col: default})
    meta = runs[[*RUN_COLUMNS, "is_baseline", *RUN_STATE_DEFAULTS]]
    meta = [{**m, "may_lead": bool(m["is_complete"]) or rank_incomplete} for m in meta.to_dict("records")]
    rows: list[dict[str, Any]] = []
    indices: list[np.ndarray] = []
    groups = _slice_groups(
        data.run_pos, data.kinds, slices, data.codes, kinds_per_task=data.kinds_per_task, order=data.order
    )
    for pos, run_rows, run_slices in groups:
        k_max = int(arrays["n"][span(run_rows)].min())  # Pass@k is defined up to the run's fewest samples per task
        rows += _run_rows(meta[pos], k_max, run_slices, arrays, rates)
        indices += [idx for _, idx in run_slices]
    _add_bootstrap_cis(rows, indices, arrays, seed=seed, n_boot=n_boot)
    per_task = {"pass@1": rates["pass_at"][1] if rates["pass_at"] else arrays["c"], "mean_score": arrays["score"]}
    _add_clustered_cis(rows, indices, per_task["pass@1"], arrays)
    compare_rows(rows, indices, data.tasks, per_task[metric], arrays["n"], metric=metric, seed=seed)
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["rank"] = pd.array([None if pd.isna(v) else int(v) for v in out["rank"]], dtype="Int64")
    for col in NULLABLE:  # None, not NaN, where a comparison does not exist (JSON null, ``is None`` checks)
        out[col] = pd.Series([_none_if_missing(v) for v in out[col]], index=out.index, dtype=object)
    for col in ("n_shared_with_leader", "n_compared", "comparison_set_index", "own_set_size"):
        out[col] = pd.Series([None if v is None else int(v) for v in out[col]], index=out.index, dtype=object)
    return add_pareto(out)


NULLABLE = (
    "n_shared_with_leader",
    "diff_vs_leader",
    "diff_vs_leader_ci95",
    "p_raw_vs_leader",
    "p_vs_leader",
    "test_method",
    "is_tied",
    "n_compared",
    "comparison_set_index",
    "own_set_size",
    "excluded_reason",
    "p_method",
    "mde80",
)


def _none_if_missing(value: Any) -> Any:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    return value


def add_pareto(df: pd.DataFrame) -> pd.DataFrame:
    """``is_pareto_optimal`` per row (HAL's cost-accuracy view): within its slice, among the ranked runs with a
    cost, no other run is at most as costly AND at least as good on the ranking metric, one of them strictly
    (``stats.pareto_mask``; exact ties are all optimal). None for rows not assessed: no cost, or not ranked
    (humans, baselines, runs on other tasks)."""
    out = df.copy()
    flags: list[bool | None] = [None] * len(out)
    if out.empty:
        out["is_pareto_optimal"] = pd.Series(dtype=object)
        return out
    cost = pd.to_numeric(out["mean_cost_usd"], errors="coerce").to_numpy(dtype=float)
    value = pd.to_numeric(out["metric_value"], errors="coerce").to_numpy(dtype=float)
    ranked = out["rank"].notna().to_numpy()
    for _, idx in out.groupby("slice", sort=False).indices.items():
        cand = idx[ranked[idx] & np.isfinite(cost[idx]) & np.isfinite(value[idx])]
        for i, is_optimal in zip(cand, stats.pareto_mask(cost[cand], value[cand]), strict=True):
            flags[i] = bool(is_optimal)
    out["is_pareto_optimal"] = pd.Series(flags, index=out.index, dtype=object)
    return out


# The log's own state (``runs_in``), with its value for runs not loaded by it (frames built by hand).
RUN_STATE_DEFAULTS: dict[str, Any] = {"is_complete": True, "log_status": None, "completed": None, "total": None}


RUN_STATE_COLUMNS = list(RUN_STATE_DEFAULTS)


BASE_COLUMNS = [
    "run_id",
    "agent",
    "agent_version",
    "family",
    "kind",
    "eval_date",
    "is_baseline",
    "slice",
    "n_tasks",
    "n_attempts",
    "k_max",
    "pass_at",
    "pass_hat",
    "mean_score",
    "ci95",
    "mean_steps",
    "mean_cost_usd",
    "pass_at_1",
    *RUN_STATE_COLUMNS,
]


# Further per-row columns (another report's fields) join by appending here and filling them in a step of
# ``leaderboard``; ``report`` and ``display_table`` read this list, nothing else needs to change.
COLUMNS = BASE_COLUMNS + COMPARISON_COLUMNS + ["is_pareto_optimal", "inspect_metrics", "scale"]
# A statistic added to ``STATISTICS`` joins the frame (and the JSON report) after these.
COLUMNS += [s.name for s in STATISTICS if s.name not in COLUMNS]


def _add_clustered_cis(
    rows: list[dict[str, Any]], indices: list[np.ndarray], pass1: np.ndarray, arrays: Mapping[str, np.ndarray]
) -> None:
    """Pass@1 interval of every row: Wilson with the task-clustered effective sample size; the ``t`` statistics'
    (mean score): the same with Student's t (``compare.score_interval``, for small samples and zero-inflated
    scores). In place."""
    with_t = [s for s in STATISTICS if s.interval == "t"]
    for row, positions in zip(rows, indices, strict=True):
        idx = span(positions)
        row["pass_at_1"] = row["pass_at"].get("1", float("nan"))
        if "pass@1" in row["ci95"]:
            row["ci95"]["pass@1"] = list(compare.wilson_clustered(pass1[idx], arrays["n"][idx]))
        for stat in with_t:
            row["ci95"][stat.name] = list(compare.score_interval(arrays[stat.source][idx]))


def with_scale(out: pd.DataFrame, runs: pd.DataFrame, *, scoring: str | None, scorer: str | None) -> pd.DataFrame:
    """The leaderboard frame with Inspect's own metrics of the score ranked (``inspect_metrics``: the chosen
    scorer's, else each run's headline) and its ``scale``; a scorer on its own scale (``raw``: a 0-10 rating) has
    no pass rate, so its pass columns and intervals are emptied (never a fabricated rate). In place; returned."""
    none = [None] * len(runs)
    results = dict(zip(runs["run_id"].astype(str), runs.get("inspect_results", none), strict=True))
    headline = dict(zip(runs["run_id"].astype(str), runs.get("headline_scorer", none), strict=True))
    out["inspect_metrics"] = pd.Series(  # for the score ranked: the chosen scorer, else each run's headline
        [inspect_metrics(results.get(str(r)), scorer or headline.get(str(r))) for r in out["run_id"]],
        index=out.index,
        dtype=object,
    )
    out["scale"] = scoring or "binary"
    if scoring == "raw":  # a rating on its own scale: no pass rate exists (never a fabricated one)
        for col in ("pass_at", "pass_hat"):
            out[col] = [{k: None for k in v} for v in out[col]]
        out["ci95"] = [{k: (None if k.startswith("pass") else v) for k, v in ci.items()} for ci in out["ci95"]]
        out["pass_at_1"] = float("nan")
    return out


def membership(runs: pd.DataFrame, outcomes: pd.DataFrame, *, kinds: Sequence[str] = ("all", "level")) -> pd.DataFrame:
    """Per run and slice, whether the run is in the slice's ranked comparison set (``runs.comparable_runs``, the
    leaderboard's rule: baseline-marked runs left out), from ``runs.load_runs`` and ``task_outcomes`` frames.
    Columns: run_id, slice, is_comparable, comparison_set_size."""
    kind_of = {str(r.run_id): r.kind for r in runs.itertuples()}
    baseline = {str(r.run_id): bool(r.is_baseline) for r in runs.itertuples()}
    rows = []
    for kind in kinds:
        if kind == "all":
            groups = {"all": outcomes}
        else:
            part = outcomes.dropna(subset=[kind])
            groups = {f"{kind}={v}": g for v, g in part.groupby(kind, sort=True)}
        for name, g in groups.items():
            matrix = compare.task_matrix_of_pairs(
                g["run_id"].astype(str).to_numpy(dtype=object), g["task_id"].astype(str).to_numpy(dtype=object)
            )
            primary = comparable_runs_of(matrix, kind_of, baseline, include_baselines=False).primary
            members = primary.n_compared if primary is not None else {}
            size = len(primary.tasks) if primary is not None else 0
            rows += [(r, name, r in members, size) for r in matrix.runs]
    return pd.DataFrame(rows, columns=["run_id", "slice", "is_comparable", "comparison_set_size"])

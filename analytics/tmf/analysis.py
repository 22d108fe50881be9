"""Orchestration: one TMF analysis of a slice, its paired task bootstrap, the slices side by side and the periods over time."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import compare, stats
from analytics.runs import comparable_runs_of
from analytics.tmf.load import TmfInputs, load
from analytics.tmf.model import (
    AXES,
    BOOT_GRID_POINTS,
    DEFAULT_HOURLY_USD,
    DEFAULT_HUMAN_PERFORMANCE,
    MIN_TASKS,
    N_REPLICATES,
    PERIODS,
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
    upper_hull,
    value_and_stage,
    value_from_arrays,
    values_from_frontiers,
)
from store import ALL_RUNS, RunFilter


@dataclass(frozen=True)
class TmfResult:
    """Everything the page, the figures and the CLI need for one benchmark slice."""

    points: pd.DataFrame  # every run (humans too), on_frontier / on_hull / has_cost columns
    frontier: tuple[str, ...]  # run ids in increasing x
    hull: tuple[str, ...]
    human: Human | None
    acceptance: Acceptance | None
    value: Value | None
    x_col: str
    unit: str
    performance: str
    slice_name: str
    assumptions: dict[str, Any] = field(default_factory=dict)
    uncertainty: Uncertainty | None = None


@dataclass(frozen=True)
class Uncertainty:
    """A seeded paired task bootstrap of the whole TMF analysis over the comparison set (``bootstrap_tmf``).

    Attributes:
        n_replicates: resamples drawn (tasks with replacement, one draw shared by every run: paired).
        n_tasks: tasks resampled (the comparison set of the slice).
        stage_probability: {"1", "2", "3"} -> share of replicates in that stage.
        p_frontier: run id -> share of replicates where the run is on the frontier.
        p_best: run id -> share of replicates where the run is the best operating point; runs tied exactly (the
            same cost and performance in a replicate) share that replicate evenly. Both are bootstrap shares: how
            stable the estimate is under resampling of tasks, not the probability that a run is the best.
        value_ci95: 95% percentile interval of the value per task (area).
    """

    n_replicates: int
    n_tasks: int
    stage_probability: dict[str, float]
    p_frontier: dict[str, float]
    p_best: dict[str, float]
    value_ci95: tuple[float, float]


@dataclass(frozen=True)
class TmfOptions:
    """The user's choices (all have defaults)."""

    performance: str = "pass@1"
    axis: str = "cost"
    cost_source: str = "logged"
    is_repriced: bool = False
    supply: str = "step"
    hourly_usd: float = DEFAULT_HOURLY_USD
    human_minutes: float | None = None
    human_performance: float | None = None
    willingness: float = 1.0
    exponent: float = 1.0
    seed: int = 0
    n_boot: int = 500
    n_replicates: int = N_REPLICATES


def analyse(
    inputs: TmfInputs,
    *,
    slice_name: str = "all",
    options: TmfOptions | None = None,
    as_of: dt.date | None = None,
    points: pd.DataFrame | None = None,
    with_uncertainty: bool = True,
    sliced: SliceRows | None = None,
) -> TmfResult:
    """Points, frontier, hull, human, acceptance, value and stage for one slice (runs up to ``as_of``).

    Only runs in the slice's ranked comparison set (``compare.comparison_sets`` over the agent runs up to ``as_of``)
    are analysed, on its common tasks; the others are listed in ``assumptions["runs_on_other_tasks"]``. With ``with_uncertainty`` a
    paired task bootstrap (``bootstrap_tmf``) gives the stage probabilities, p_frontier and p_best. ``sliced`` is
    ``slice_rows(inputs, slice_name)`` when the caller analyses the slice more than once (``by_period``).
    """
    opt = options or TmfOptions()
    if opt.axis not in AXES:
        raise TmfError(f"axis {opt.axis!r}: expected cost or latency")
    x_col, unit = AXES[opt.axis]
    sliced = sliced or slice_rows(inputs, slice_name)
    rows, baselines = sliced.rows, sliced.baselines
    if points is None:
        points = run_points(
            rows,
            performance=opt.performance,
            cost_source=opt.cost_source,
            is_repriced=opt.is_repriced,
            abilities=inputs.abilities,
            seed=opt.seed,
            n_boot=opt.n_boot,
        )
    if as_of is not None:
        dates = pd.to_datetime(points["eval_date"])
        points = points[dates.isna() | (dates <= pd.Timestamp(as_of))]
    points = points[~points["run_id"].isin(baselines)]
    keep, cset = _primary_set(sliced.matrix, sliced.kinds, runs={str(r) for r in points["run_id"]})
    extra = sliced.outside(keep, cset)
    if extra.any():  # runs on a superset: their points on the common tasks, as the leaderboard ranks them
        rows = rows[~extra]
        trimmed = run_points(
            rows[rows["run_id"].isin(keep)],
            performance=opt.performance,
            cost_source=opt.cost_source,
            is_repriced=opt.is_repriced,
            abilities=inputs.abilities,
            seed=opt.seed,
            n_boot=opt.n_boot,
        ).set_index("run_id")
        points = points.set_index("run_id")
        changed = points.index.isin(trimmed.index)
        points.loc[changed, trimmed.columns.intersection(points.columns)] = trimmed.loc[points.index[changed]]
        points = points.reset_index()
    is_agent = (points["kind"] != "human").to_numpy()
    other = sorted(map(str, points.loc[is_agent & ~points["run_id"].isin(keep), "run_id"]))
    points = points[~is_agent | points["run_id"].isin(keep).to_numpy()]
    points = points.assign(is_few_tasks=points["n_tasks"].to_numpy() < MIN_TASKS)
    table = slice_tasks(inputs.task_table, slice_name)
    if cset:  # the human is costed on the tasks the agents are compared on
        table = table[table["task_id"].astype(str).isin(cset)]
    result = _assemble(table, points, opt, x_col, unit, slice_name)
    result.assumptions.update(
        comparison_set_size=len(cset), runs_on_other_tasks=other, baseline_runs=baselines, min_tasks=MIN_TASKS
    )
    if not with_uncertainty or result.value is None or opt.performance == "irt" or opt.n_replicates <= 0:
        return result
    cur = current_prices(rows).set_index("run_id") if opt.is_repriced else None
    agent_rows = rows[rows["run_id"].isin(keep)]
    return dataclasses.replace(result, uncertainty=bootstrap_tmf(agent_rows, result, opt, cur=cur))


def drop_baselines(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` without baseline-marked runs (``compare.is_rankable``, as on the leaderboard), and their ids."""
    if "is_baseline" not in rows or rows.empty:
        return rows, []
    flag = rows["is_baseline"].fillna(False).astype(bool)
    return rows[~flag], sorted(map(str, rows.loc[flag, "run_id"].unique()))


@dataclass(frozen=True)
class SliceRows:
    """A slice's rows without baseline-marked runs (``drop_baselines``) and which agent run has which task, made
    once for every analysis of the slice (the periods of ``by_period``).

    Attributes:
        rows: the slice's rows (humans too), baseline-marked runs left out.
        baselines: the baseline-marked runs left out.
        matrix: the agent runs x tasks of ``rows`` (run and task ids as text), runs in order of first row.
        kinds: agent run -> its kind (its last row's).
        row_run: per row of ``rows``, its run's row of ``matrix`` (-1 for a human run's row).
        row_task: per row of ``rows``, its task's column of ``matrix`` (-1 for a human run's row).
    """

    rows: pd.DataFrame
    baselines: list[str]
    matrix: compare.TaskMatrix
    kinds: dict[str, object]
    row_run: np.ndarray
    row_task: np.ndarray

    def outside(self, runs: set[str], tasks: frozenset[str]) -> np.ndarray:
        """Per row of ``rows``: a row of one of ``runs`` on a task not in ``tasks`` (one lookup per run and per
        task, none per row)."""
        run_in = np.array([r in runs for r in self.matrix.runs] + [False])  # the last entry: human rows (-1)
        task_out = np.append(~pd.Index(self.matrix.tasks).isin(list(tasks)), False)
        return run_in[self.row_run] & task_out[self.row_task]


def slice_rows(inputs: TmfInputs, slice_name: str = "all") -> SliceRows:
    """The ``SliceRows`` of one slice of ``inputs``."""
    rows, baselines = drop_baselines(slice_tasks(inputs.tasks, slice_name))
    matrix, kinds, row_run, row_task = _agent_matrix(rows)
    return SliceRows(rows, baselines, matrix, kinds, row_run, row_task)


def _agent_matrix(
    rows: pd.DataFrame,
) -> tuple[compare.TaskMatrix, dict[str, object], np.ndarray, np.ndarray]:
    """The agent runs x tasks of ``rows`` (ids as text: ``str`` of each distinct id, one hash per row), each
    agent run's kind (its last row's), and per row its run's row and its task's column (-1 for human rows)."""
    is_agent = (rows["kind"] != "human").to_numpy(dtype=bool)
    run_ids, task_ids = (rows[c].to_numpy(dtype=object)[is_agent] for c in ("run_id", "task_id"))
    r_codes, r_uniq = pd.factorize(run_ids, use_na_sentinel=False)
    t_codes, t_uniq = pd.factorize(task_ids, use_na_sentinel=False)
    r_names, t_names = [str(r) for r in r_uniq], [str(t) for t in t_uniq]
    if len(set(r_names)) < len(r_names):  # ids that differ only by type (1 and "1") are one id as text
        r_codes, r_uniq = pd.factorize(run_ids.astype(str), use_na_sentinel=False)
        r_names = [str(r) for r in r_uniq]
    if len(set(t_names)) < len(t_names):
        t_codes, t_uniq = pd.factorize(task_ids.astype(str), use_na_sentinel=False)
        t_names = [str(t) for t in t_uniq]
    held = np.zeros((len(r_names), len(t_names)), dtype=bool)
    held[r_codes, t_codes] = True
    last = np.full(len(r_names), -1, dtype=np.int64)
    np.maximum.at(last, r_codes, np.arange(len(r_codes)))
    kinds = dict(zip(r_names, rows["kind"].to_numpy(dtype=object)[is_agent][last].tolist(), strict=True))
    row_run, row_task = np.full(len(rows), -1, dtype=np.int64), np.full(len(rows), -1, dtype=np.int64)
    row_run[is_agent], row_task[is_agent] = r_codes, t_codes
    return compare.TaskMatrix(tuple(r_names), np.array(t_names, dtype=object), held), kinds, row_run, row_task


def _primary_set(
    matrix: compare.TaskMatrix, kinds: dict[str, object], *, runs: set[str] | None = None
) -> tuple[set[str], frozenset[str]]:
    """``comparison_set`` of the runs of ``matrix`` (only those in ``runs`` when given)."""
    if runs is not None:
        pick = [i for i, r in enumerate(matrix.runs) if r in runs]
        matrix = compare.TaskMatrix(tuple(matrix.runs[i] for i in pick), matrix.tasks, matrix.held[pick])
    primary = comparable_runs_of(matrix, kinds, include_baselines=True).primary
    if primary is None:
        return set(), frozenset()
    return {str(r) for r in primary.runs}, primary.tasks


def comparison_set(rows: pd.DataFrame) -> tuple[set[str], frozenset[str]]:
    """The agent runs of ``rows`` in the ranked comparison set and its common tasks (``runs.comparable_runs``, the
    leaderboard's rule: runs on a superset are compared on the common tasks, runs that missed a few on those they
    have; every agent run given competes, ``include_baselines``: the caller has dropped baselines already)."""
    matrix, kinds, _, _ = _agent_matrix(rows)
    return _primary_set(matrix, kinds)


def bootstrap_tmf(
    rows: pd.DataFrame, result: TmfResult, opt: TmfOptions, *, cur: pd.DataFrame | None = None
) -> Uncertainty | None:
    """Resample the comparison set's tasks (one seeded draw for all runs) and redo frontier, value and stage.

    The human side (cost per task, performance, acceptance curve) is held at its estimate: the replicates
    measure how much the agents' points move with the task sample.
    """
    usable = result.points[(result.points["kind"] != "human") & result.points["has_cost"]]
    usable = usable[np.isfinite(usable["performance"].to_numpy(dtype=float))]
    rows = rows[rows["run_id"].isin(usable["run_id"])]
    if rows.empty or result.acceptance is None:
        return None
    cost, _ = row_costs(rows, cost_source=opt.cost_source, cur=cur)
    x = cost if opt.axis == "cost" else rows["latency_s"].to_numpy(dtype=float)
    y = rows["c"].to_numpy(dtype=float) / rows["n"].to_numpy(dtype=float)
    if opt.performance == "mean_score":
        y = rows["score"].to_numpy(dtype=float)
    t_codes, t_ids = pd.factorize(rows["task_id"])
    r_codes, r_ids = pd.factorize(rows["run_id"])
    mx, my = (np.full((len(t_ids), len(r_ids)), np.nan) for _ in range(2))
    mx[t_codes, r_codes], my[t_codes, r_codes] = x, y
    weights = stats.resample_weights(
        len(t_ids), stats.stable_rng(opt.seed, "tmf-boot", result.slice_name), n_boot=opt.n_replicates
    )
    bx, by = (_weighted_means(weights, m) for m in (mx, my))
    stages, on_front, best, area = _replicate_values(bx, by, [str(r) for r in r_ids], result, opt)
    n = opt.n_replicates
    return Uncertainty(
        n,
        len(t_ids),
        {str(k): float((stages == k).mean()) for k in (1, 2, 3)},
        {str(r): float(on_front[:, j].mean()) for j, r in enumerate(r_ids)},
        dict(zip(map(str, r_ids), _best_shares(best, [str(r) for r in r_ids], n), strict=True)),
        (float(np.nanquantile(area, 0.025)), float(np.nanquantile(area, 0.975))),
    )


def _best_shares(best: list[tuple[str, ...]], run_ids: list[str], n: int) -> list[float]:
    """Per run, the share of the ``n`` replicates where it is the best run, a replicate of ``k`` tied runs
    counting ``1/k`` for each: one matrix of the replicates' shares summed in replicate order (the same sums as
    adding them one by one)."""
    col = {r: j for j, r in enumerate(run_ids)}
    share = np.zeros((len(best) + 1, len(run_ids)))  # a first row of zeros: the sum of no replicate is 0
    for i, tied in enumerate(best, start=1):
        if tied:  # no best run in this replicate: it counts for nobody
            share[i, [col[r] for r in tied]] = 1.0 / len(tied)
    return [float(v) / n for v in np.cumsum(share, axis=0)[-1]]


def _weighted_means(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Per replicate and run, the mean of the finite cells over the resampled tasks: ``(replicates, runs)``."""
    ok = np.isfinite(matrix)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ np.where(ok, matrix, 0.0)) / (weights @ ok.astype(float))


def _replicate_values(
    bx: np.ndarray, by: np.ndarray, run_ids: list[str], result: TmfResult, opt: TmfOptions
) -> tuple[np.ndarray, np.ndarray, list[tuple[str, ...]], np.ndarray]:
    """Stage, frontier membership, best run(s) and value area of every bootstrap replicate.

    The best operating point's run comes with every run at exactly the same cost and performance in that
    replicate (exact ties: they share the replicate), never only the one with the first run id.

    The value grid is coarser than the estimate's (``BOOT_GRID_POINTS``): the frontier's knots are on it either
    way, so the stage and the best point are unchanged and the area of a linear acceptance curve stays exact.
    """
    n_rep = bx.shape[0]
    stages = np.zeros(n_rep, dtype=int)
    on_front = np.zeros(bx.shape, dtype=bool)
    best: list[tuple[str, ...]] = []
    area = np.full(n_rep, np.nan)
    ids = np.array(run_ids, dtype=object)
    rank = np.argsort(np.argsort(ids))  # run-id order, the last tie-break of ``_assemble``
    acceptance = result.acceptance
    if acceptance is None:
        return stages, on_front, best, area
    ok = np.isfinite(bx) & np.isfinite(by) & (bx > 0)
    xs, ys = np.where(ok, bx, np.nan), np.where(ok, by, np.nan)
    on_front[:] = _pareto_masks(xs, ys)
    # each replicate's frontier by increasing x, then performance, then run id (as ``_sorted_rows``; the keys
    # order every run, so one sort of all runs with the others put last gives the same rows)
    inf = np.inf
    order = np.lexsort((np.broadcast_to(rank, xs.shape), np.where(on_front, ys, inf), np.where(on_front, xs, inf)))
    sizes = on_front.sum(axis=1)
    rows = list(zip(xs, ys, strict=True))
    frontiers = [(x[o[:k]], y[o[:k]], ids[o[:k]]) for (x, y), o, k in zip(rows, order, sizes, strict=True)]
    if opt.supply == "hull":
        values = []
        for (x, y), (fx, fy, fids) in zip(rows, frontiers, strict=True):
            hmask = np.zeros(len(ids), dtype=bool)
            hmask[upper_hull(x, y)] = True
            v = _sorted_rows(hmask, x, y, rank) if hmask.any() else None
            vx, vy = (fx, fy) if v is None else (x[v], y[v])
            values.append(
                value_from_arrays(fx, fy, fids, acceptance, vx=vx, vy=vy, supply="hull", grid_points=BOOT_GRID_POINTS)
            )
    else:  # the step supply: every replicate's value in one pass (the same numbers as one call each)
        values = values_from_frontiers(frontiers, acceptance, grid_points=BOOT_GRID_POINTS)
    for i, ((x, y), val) in enumerate(zip(rows, values, strict=True)):
        stages[i], area[i] = val.stage, val.area
        best.append(_tied_with(val.best_run_id, ids, x, y))
    return stages, on_front, best, area


def _pareto_masks(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``pareto_mask`` of every row of ``x`` and ``y`` at once (the same masks): sorted by x then -y, a point is on
    the frontier when it is the best of its x and beats every strictly cheaper point."""
    valid = np.isfinite(x) & np.isfinite(y)
    x, y = np.where(valid, x, np.inf), np.where(valid, y, -np.inf)  # the invalid sort last and are never kept
    order = np.lexsort((-y, x), axis=-1)
    sx, sy, svalid = (np.take_along_axis(a, order, axis=-1) for a in (x, y, valid))
    cols = np.arange(x.shape[-1])
    is_start = np.ones(sx.shape, dtype=bool)
    is_start[:, 1:] = sx[:, 1:] != sx[:, :-1]
    start = np.maximum.accumulate(np.where(is_start, cols, 0), axis=-1)  # first point of each one's x
    top = np.take_along_axis(sy, start, axis=-1)
    best_so_far = np.maximum.accumulate(sy, axis=-1)
    cheaper = np.where(start > 0, np.take_along_axis(best_so_far, np.maximum(start - 1, 0), axis=-1), -np.inf)
    keep = svalid & (sy == top) & (top > cheaper)
    mask = np.zeros(x.shape, dtype=bool)
    np.put_along_axis(mask, order, keep, axis=-1)
    return mask


def _tied_with(best: str | None, ids: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[str, ...]:
    """The best run and every run at exactly its cost and performance (empty when there is no best run)."""
    if best is None:
        return ()
    j = int(np.flatnonzero(ids == best)[0])
    same = np.flatnonzero((x == x[j]) & (y == y[j]))
    return tuple(str(ids[k]) for k in same) if same.size else (best,)


def _sorted_rows(mask: np.ndarray, x: np.ndarray, y: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Indices of ``mask`` by increasing x, then performance, then run id (as ``_assemble`` sorts)."""
    rows = np.flatnonzero(mask)
    return rows[np.lexsort((rank[rows], y[rows], x[rows]))]


def _assemble(
    tasks: pd.DataFrame, points: pd.DataFrame, opt: TmfOptions, x_col: str, unit: str, slice_name: str
) -> TmfResult:
    xs = points[x_col].to_numpy(dtype=float)
    perf = points["performance"].to_numpy(dtype=float)
    has_cost = np.isfinite(xs) & (xs > 0)
    usable = (points["kind"] != "human").to_numpy() & has_cost & np.isfinite(perf)
    x = np.where(usable, xs, np.nan)
    y = np.where(usable, perf, np.nan)
    on_hull = np.zeros(len(points), dtype=bool)
    on_hull[upper_hull(x, y)] = True
    pts = points.assign(has_cost=has_cost, on_frontier=pareto_mask(x, y), on_hull=on_hull)
    run_ids = pts["run_id"].tolist()

    def by_cost(mask: np.ndarray) -> pd.DataFrame:  # increasing x, then performance, then run id
        rows = sorted(np.flatnonzero(mask), key=lambda i: (xs[i], perf[i], run_ids[i]))
        return pts.iloc[rows]

    frontier, hull = by_cost(pts["on_frontier"].to_numpy()), by_cost(on_hull)
    human = human_baseline(
        tasks,
        pts,
        axis=opt.axis,
        hourly_usd=opt.hourly_usd,
        human_minutes=opt.human_minutes,
        human_performance=opt.human_performance,
        default_performance=None if opt.performance == "irt" else DEFAULT_HUMAN_PERFORMANCE,
    )
    p0 = 0.0 if opt.performance != "irt" else float(np.nanmin(y)) if np.isfinite(y).any() else 0.0
    acceptance = value = None
    if human.x is not None and math.isfinite(human.performance) and human.performance > p0:
        acceptance = Acceptance(human.x, human.performance, p0, opt.willingness, opt.exponent)
        value = value_and_stage(frontier, acceptance, x_col=x_col, supply=opt.supply, hull=hull)
    assumptions = _assumptions(opt, human, unit, pts, p0)
    return TmfResult(
        pts,
        tuple(frontier["run_id"]),
        tuple(hull["run_id"]),
        human,
        acceptance,
        value,
        x_col,
        unit,
        opt.performance,
        slice_name,
        assumptions,
    )


def _assumptions(opt: TmfOptions, human: Human, unit: str, pts: pd.DataFrame, p0: float) -> dict[str, Any]:
    agents = pts[pts["kind"] != "human"]
    return {
        "performance": opt.performance,
        "axis": opt.axis,
        "unit": unit,
        "cost_source": opt.cost_source,
        "is_repriced": opt.is_repriced,
        "supply": opt.supply,
        "hourly_usd": opt.hourly_usd,
        "willingness": opt.willingness,
        "exponent": opt.exponent,
        "human_performance": human.performance,
        "currency": "USD",
        "human_minutes_fill": opt.human_minutes,
        "human_x_source": human.x_source,
        "human_performance_source": human.performance_source,
        "acceptance": f"A(p) = {opt.willingness:g} x human cost x ((p - {p0:g}) / (human perf - {p0:g}))"
        f"^{opt.exponent:g}",
        "value_area_unit": f"{unit} per task x performance (0..1)"
        if opt.performance != "irt"
        else f"{unit} per task x logits",
        "runs_without_cost": sorted(map(str, agents.loc[~agents["has_cost"], "run_id"])),
        "runs_without_performance": sorted(map(str, agents.loc[agents["performance"].isna(), "run_id"])),
        "seed": opt.seed,
    }


def by_period(
    inputs: TmfInputs, *, slice_name: str = "all", options: TmfOptions | None = None, freq: str = "quarter"
) -> list[tuple[str, TmfResult]]:
    """The analysis as of the end of every period that has a run ("a movie, not a photograph")."""
    if freq not in PERIODS:
        raise TmfError(f"period {freq!r}: expected one of {', '.join(PERIODS)}")
    opt = options or TmfOptions()
    tasks = slice_tasks(inputs.tasks, slice_name)
    sliced = slice_rows(inputs, slice_name)
    points = run_points(
        tasks,
        performance=opt.performance,
        cost_source=opt.cost_source,
        is_repriced=opt.is_repriced,
        abilities=inputs.abilities,
        seed=opt.seed,
        n_boot=opt.n_boot,
    )
    dates = pd.to_datetime(points.loc[points["kind"] != "human", "eval_date"]).dropna()
    periods = sorted(dates.dt.to_period(PERIODS[freq]).unique())
    return [
        (
            str(per),
            analyse(
                inputs,
                slice_name=slice_name,
                options=opt,
                points=points,
                as_of=per.end_time.date(),
                with_uncertainty=False,  # the movie shows estimates; the bootstrap is for the current view
                sliced=sliced,
            ),
        )
        for per in periods
    ]


def period_table(movie: list[tuple[str, TmfResult]]) -> pd.DataFrame:
    """One row per period: runs so far, frontier, value per task, best saving and stage."""
    rows = []
    for label, res in movie:
        agents = res.points[res.points["kind"] != "human"]
        rows.append(
            {
                "period": label,
                "n_runs": len(agents),
                "frontier": " → ".join(agents.set_index("run_id").loc[list(res.frontier), "agent"].astype(str)),
                "value_per_task": None if res.value is None else res.value.area,
                "best_saving": None if res.value is None else res.value.best_saving,
                "stage": None if res.value is None else res.value.stage,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Overview:
    """What the page needs from one load of the data: the analysis of every run, the cumulative analysis per
    period, and the small multiples of every run for the slice kinds asked for (``level``: the page's default)."""

    overall: TmfResult | None
    movie: tuple[tuple[str, TmfResult], ...]
    by_kind: dict[str, tuple[TmfResult, ...]] = field(default_factory=dict)


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
    another kind, or an earlier period, is ``slice_results``.
    """
    inputs = load(con, run_filter)
    if inputs.tasks.empty:
        return Overview(None, ())
    return Overview(
        analyse(inputs, options=options),
        tuple(by_period(inputs, options=options, freq=freq)),
        {kind: analyse_slices(inputs, kind=kind, options=options) for kind in slice_kinds},
    )


def analyse_slices(
    inputs: TmfInputs, *, kind: str = "level", options: TmfOptions | None = None, as_of: dt.date | None = None
) -> tuple[TmfResult, ...]:
    """The analysis of every ``level`` (or ``category``) slice of ``inputs``."""
    return tuple(
        analyse(inputs, slice_name=name, options=options, as_of=as_of) for name in slice_names(inputs.tasks, kind)
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
    inputs = load(con, run_filter)
    return analyse_slices(inputs, kind=kind, options=options, as_of=as_of)


def period_end(label: str, freq: str) -> dt.date:
    """Last day of a period label such as ``2025Q3`` (quarter), ``2025-07`` (month) or ``2025`` (year)."""
    return pd.Period(label, freq=PERIODS[freq]).end_time.date()

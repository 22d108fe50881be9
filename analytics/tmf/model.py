"""The TMF model (xbench 5.2): options' vocabularies, run points with intervals, the frontier (supply), the human baseline, market acceptance, value and stage."""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analytics import compare, stats
from analytics.stats import pareto_mask
from analytics.tmf.codes import factorize_ids, first_rows_of, run_values, run_values_at, stable_order
from store import RunlensError

PERFORMANCES = ("pass@1", "mean_score", "irt")


AXES = {"cost": ("cost_per_task_usd", "USD"), "latency": ("latency_per_task_s", "s")}


COST_SOURCES = ("logged", "tokens")


SUPPLIES = ("step", "hull")


PERIODS = {"month": "M", "quarter": "Q", "year": "Y"}


DEFAULT_HOURLY_USD = 50.0


DEFAULT_HUMAN_PERFORMANCE = 1.0


STAGE_NAMES = {
    1: "Stage 1 · Tech-Market-Fit not achieved",
    2: "Stage 2 · Agents and humans collaborating",
    3: "Stage 3 · Specialised agents",
}


GRID_POINTS = 4001


N_REPLICATES = 500  # paired task bootstrap of the stage, frontier and best point


BOOT_GRID_POINTS = 401  # even grid of each bootstrap replicate's value integral (knots are added to it)


MIN_TASKS = 30  # runs on fewer tasks are flagged: their point moves a lot from one task sample to another


class TmfError(RunlensError):
    """A TMF request that cannot be answered (unknown option, no data)."""


def slice_tasks(tasks: pd.DataFrame, slice_name: str | None) -> pd.DataFrame:
    """Rows of one slice: ``all`` (or None), ``level=L3`` or ``category=creative``."""
    if not slice_name or slice_name == "all":
        return tasks
    kind, _, value = slice_name.partition("=")
    if kind not in ("level", "category") or not value:
        raise TmfError(f"slice {slice_name!r}: expected all, level=VALUE or category=VALUE")
    column = tasks[kind]
    if column.dtype != object:  # levels and categories are text in the database; a hand-built frame may differ
        column = column.astype("string")
    return tasks[(column == value).fillna(False).to_numpy(dtype=bool)]


def slice_names(tasks: pd.DataFrame, kind: str) -> list[str]:
    """``kind=value`` for every value of ``level`` or ``category`` present in the agent runs."""
    values = tasks.loc[tasks["kind"] != "human", kind].dropna().astype(str).unique()
    return [f"{kind}={v}" for v in sorted(values)]


def current_prices(tasks: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run, the prices of the newest run of the same family (agent when no family) that has prices (``runs``:
    the run details when ``tasks`` has only their ``run_code``)."""
    first = first_rows_of(tasks, "run_id")  # ``drop_duplicates("run_id")``'s rows
    columns = ["run_id", "agent", "family", "eval_date", "price_input_per_mtok", "price_output_per_mtok"]
    if runs is not None and not set(columns) <= set(tasks.columns):
        runs = runs.iloc[tasks["run_code"].to_numpy()[first]][columns].copy()
    else:
        runs = tasks.iloc[first][columns].copy()
    runs["group"] = runs["family"].fillna(runs["agent"]).astype(str)
    priced = runs.dropna(subset=["price_input_per_mtok", "price_output_per_mtok"])
    priced = priced.sort_values(["eval_date", "run_id"], na_position="first").groupby("group").tail(1)
    cur = priced.set_index("group")[["price_input_per_mtok", "price_output_per_mtok", "run_id"]]
    cur.columns = ["cur_price_in", "cur_price_out", "price_run_id"]
    return runs[["run_id", "group"]].join(cur, on="group").drop(columns="group")


def row_costs(
    tasks: pd.DataFrame, *, cost_source: str, cur: pd.DataFrame | None, runs: pd.DataFrame | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Cost per (run, task) row (USD) and, per row, whether its run was repriced.

    ``logged`` is ``cost_usd``; ``tokens`` is tokens x the run's prices (NaN without tokens or prices). With
    ``cur`` (``current_prices`` by run_id) a run whose tokens give a cost at its family's current prices takes
    that cost for every task (NaN where a task has no tokens); other runs keep theirs.
    """

    def priced(p_in: np.ndarray, p_out: np.ndarray) -> np.ndarray:
        """The rows' tokens at these prices (the tokens are read only for a cost made of them: ``load`` reads them
        only then, ``row_columns_for``)."""
        tin = tasks["input_tokens"].to_numpy(dtype=float)
        tout = tasks["output_tokens"].to_numpy(dtype=float)
        cost = (np.nan_to_num(tin) * p_in + np.nan_to_num(tout) * p_out) / 1e6
        return np.where(np.isfinite(tin) | np.isfinite(tout), cost, np.nan)

    if cost_source == "logged":
        cost = tasks["cost_usd"].to_numpy(dtype=float)
    else:
        cost = priced(
            run_values(tasks, "price_input_per_mtok", runs).astype(float),
            run_values(tasks, "price_output_per_mtok", runs).astype(float),
        )
    repriced = np.zeros(len(tasks), dtype=bool)
    if cur is not None:
        codes, run_ids = factorize_ids(tasks, "run_id")
        at = cur.reindex(run_ids)  # one lookup per run, then each row takes its run's
        p_in = at["cur_price_in"].to_numpy(dtype=float)[codes]
        new = priced(p_in, at["cur_price_out"].to_numpy(dtype=float)[codes])
        run_has = np.bincount(codes, weights=np.isfinite(new) & np.isfinite(p_in)) > 0
        repriced = run_has[codes]
        cost = np.where(repriced, new, cost)
    return cost, repriced


def _run_means(codes: np.ndarray, values: np.ndarray, n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the finite values of every run (NaN when none) and how many there were."""
    ok = np.isfinite(values)
    count = np.bincount(codes, weights=ok, minlength=n_runs)
    total = np.bincount(codes, weights=np.where(ok, values, 0.0), minlength=n_runs)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan), count.astype(int)


def _bootstrap_by_size(
    codes: np.ndarray, series: list[np.ndarray], n_runs: int, *, seed: int, n_boot: int
) -> np.ndarray:
    """Bootstrap intervals over tasks of every run's mean of every series: ``(runs, series, 2)``.

    Runs with the same number of tasks share one seeded draw (keyed by seed and size only, so a run's interval
    does not depend on the other runs), computed for all of them at once (``stats.bootstrap_mean_cis``).
    """
    out = np.full((n_runs, len(series), 2), np.nan)
    order = stable_order(codes)
    sizes = np.bincount(codes, minlength=n_runs)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    finite = np.stack([np.bincount(codes, weights=np.isfinite(v), minlength=n_runs) for v in series], axis=-1)
    for size in np.unique(sizes[sizes > 0]):
        runs = np.flatnonzero(sizes == size)
        counts = finite[runs]
        if not ((counts > 1) & (counts <= stats.BOOTSTRAP_MAX_TASKS)).any():  # no draw: each (run, series) alone
            for r in runs:
                at = order[starts[r] : starts[r] + size]
                out[r] = [_interval_without_draw(values[at]) for values in series]
            continue
        rows = order[starts[runs][:, None] + np.arange(size)]  # (runs, size) row indices
        matrix = np.stack([values[rows] for values in series], axis=-1)  # (runs, size, series)
        matrix = matrix.transpose(1, 0, 2).reshape(size, -1)
        cis = stats.bootstrap_mean_cis(matrix, stats.stable_rng(seed, "tmf", str(size)), n_boot=n_boot)
        out[runs] = cis.reshape(len(runs), len(series), 2)
    return out


def _interval_without_draw(values: np.ndarray) -> tuple[float, float]:
    """What ``stats.bootstrap_mean_cis`` gives a column of ``values`` that it does not bootstrap: the normal
    interval above ``stats.BOOTSTRAP_MAX_TASKS`` finite values, the value itself for one, NaN for none (the
    same numbers as the column of its matrix, without building the matrix of every run's rows: 867k rows at
    10M attempts, where every run has more tasks than that)."""
    finite = values[np.isfinite(values)]
    if finite.size > 1:
        return stats.normal_mean_ci(values)
    return (float(finite[0]), float(finite[0])) if finite.size else (math.nan, math.nan)


POINT_COLUMNS = [
    "run_id",
    "agent",
    "agent_version",
    "family",
    "kind",
    "eval_date",
    "n_tasks",
    "performance",
    "perf_lo",
    "perf_hi",
    "cost_per_task_usd",
    "cost_lo",
    "cost_hi",
    "n_cost_tasks",
    "latency_per_task_s",
    "latency_lo",
    "latency_hi",
    "is_repriced",
    "price_run_id",
]


def run_points(
    tasks: pd.DataFrame,
    *,
    performance: str = "pass@1",
    cost_source: str = "logged",
    is_repriced: bool = False,
    abilities: pd.DataFrame | None = None,
    seed: int = 0,
    n_boot: int = 500,
    runs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per run (human runs included, ``kind`` tells them apart) with performance, cost, latency, CIs.

    Computed for all runs at once (no loop over runs): means by ``np.bincount``, intervals by one bootstrap draw
    per run size (``_bootstrap_by_size``) or Wilson's formula for Pass@1.

    Args:
        tasks: rows of ``load(...).tasks`` (already sliced).
        performance: ``pass@1``, ``mean_score`` or ``irt`` (needs ``abilities``; runs without one get NaN).
        cost_source: ``logged`` or ``tokens``.
        is_repriced: recompute cost from tokens at the family's current prices (see ``current_prices``).
        abilities: ``irt_abilities`` rows.
        seed: bootstrap seed; a run's draw depends on it and on the run's number of tasks only.
        n_boot: bootstrap resamples.
        runs: the run details (``load``'s) when ``tasks`` has only their ``run_code``.
    """
    if performance not in PERFORMANCES:
        raise TmfError(f"performance {performance!r}: expected one of {', '.join(PERFORMANCES)}")
    if cost_source not in COST_SOURCES:
        raise TmfError(f"cost source {cost_source!r}: expected one of {', '.join(COST_SOURCES)}")
    if tasks.empty:
        return pd.DataFrame(columns=POINT_COLUMNS)
    codes, run_ids = factorize_ids(tasks, "run_id")  # runs in order of first appearance
    n_runs = len(run_ids)
    cur = current_prices(tasks, runs).set_index("run_id") if is_repriced else None
    cost, repriced = row_costs(tasks, cost_source=cost_source, cur=cur, runs=runs)
    latency = tasks["latency_s"].to_numpy(dtype=float)
    rate = tasks["c"].to_numpy(dtype=float) / tasks["n"].to_numpy(dtype=float)
    score = tasks["score"].to_numpy(dtype=float) if performance != "pass@1" else None  # read only when used
    series = [cost, latency] if score is None else [cost, latency, score]
    # the x intervals on a second thread while this one takes the rest (numpy on each run's 66,667 rows at 10M
    # attempts, the GIL let go for most of it): the same seeded intervals, whichever thread computes them
    boot = _INTERVALS.submit(_bootstrap_by_size, codes, series, n_runs, seed=seed, n_boot=n_boot)
    first = first_rows_of(tasks, "run_id")
    n_tasks = np.bincount(codes, minlength=n_runs)
    out: dict[str, Any] = {
        col: run_values_at(tasks, col, runs, first)
        for col in ("run_id", "agent", "agent_version", "family", "kind", "eval_date")
    }
    out["n_tasks"] = n_tasks
    if score is not None:
        out["performance"] = _run_means(codes, score, n_runs)[0]
    else:
        p = np.bincount(codes, weights=rate, minlength=n_runs) / n_tasks
        order = stable_order(codes)
        per_run = np.split(order, np.cumsum(n_tasks)[:-1])
        samples = tasks["n"].to_numpy(dtype=float)
        # the leaderboard's Pass@1 interval: Wilson with the task-clustered effective sample size
        wilson = np.array([compare.wilson_clustered(rate[rows], samples[rows]) for rows in per_run])
        out["performance"], out["perf_lo"], out["perf_hi"] = p, wilson[:, 0], wilson[:, 1]
    cis = boot.result()
    if score is not None:
        out["perf_lo"], out["perf_hi"] = cis[:, 2, 0], cis[:, 2, 1]
    out["cost_per_task_usd"], out["n_cost_tasks"] = _run_means(codes, cost, n_runs)
    out["cost_lo"], out["cost_hi"] = cis[:, 0, 0], cis[:, 0, 1]
    out["latency_per_task_s"] = _run_means(codes, latency, n_runs)[0]
    out["latency_lo"], out["latency_hi"] = cis[:, 1, 0], cis[:, 1, 1]
    out["is_repriced"] = repriced[first]
    out["price_run_id"] = [None] * n_runs if cur is None else cur["price_run_id"].reindex(run_ids).to_numpy()
    points = pd.DataFrame(out, columns=POINT_COLUMNS)
    return _attach_abilities(points, abilities) if performance == "irt" else points


_INTERVALS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tmf-run-intervals")


def _attach_abilities(points: pd.DataFrame, abilities: pd.DataFrame | None) -> pd.DataFrame:
    out = points.copy()
    version = out["agent_version"].fillna("").astype(str)
    subject = out["agent"].astype(str) + np.where(version == "", "", " " + version)
    table = (abilities if abilities is not None else pd.DataFrame(columns=["subject"])).drop_duplicates("subject")
    table = table.set_index("subject")
    for col, src in (("performance", "ability"), ("perf_lo", "ability_lo"), ("perf_hi", "ability_hi")):
        out[col] = subject.map(table[src]).astype(float) if src in table else math.nan
    return out


def upper_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the rising part of the upper convex hull of the points, in increasing x.

    Starts at the cheapest-best point and ends at the best-cheapest point; points on a hull edge are left out.
    Values within ``stats.TIE_RELATIVE`` of each other are one value, as on the frontier (``stats.settled``): two
    runs a cost's last bits apart are at one cost, and the hull rises strictly.
    """
    x = stats.settled(np.asarray(x, dtype=float))
    y = stats.settled(np.asarray(y, dtype=float))
    cand = np.flatnonzero(pareto_mask(x, y))
    if cand.size == 0:
        return cand
    cand = cand[np.lexsort((-y[cand], x[cand]))]
    hull: list[int] = []
    for k in cand:
        if hull and x[hull[-1]] == x[k]:
            continue  # equal cost: the better one came first
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (x[b] - x[a]) * (y[k] - y[a]) - (y[b] - y[a]) * (x[k] - x[a])
            if cross >= 0:  # b lies on or below the segment a-k
                hull.pop()
            else:
                break
        hull.append(int(k))
    return np.asarray(hull, dtype=int)


def supply_cost(p: np.ndarray, fx: np.ndarray, fy: np.ndarray, *, supply: str = "step") -> np.ndarray:
    """S(p): cheapest cost reaching performance >= p along the frontier (inf above the best frontier run).

    Args:
        p: performances to evaluate.
        fx, fy: frontier (step) or hull vertices (hull), sorted by increasing x and y.
        supply: ``step`` or ``hull`` (linear in cost and performance between hull vertices).
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.inf)
    if len(fx) == 0:
        return out
    fx = np.asarray(fx, dtype=float)
    fy = np.asarray(fy, dtype=float)
    reach = p <= fy[-1]
    if supply == "step":
        idx = np.searchsorted(fy, p[reach], side="left")
        out[reach] = fx[idx]
    elif supply == "hull":
        out[reach] = np.where(p[reach] <= fy[0], fx[0], np.interp(p[reach], fy, fx))
    else:
        raise TmfError(f"supply {supply!r}: expected step or hull")
    return out


@dataclass(frozen=True)
class Human:
    """The human reference point: cost (or latency) per task and performance, with where each came from."""

    x: float | None
    performance: float
    x_source: str
    performance_source: str
    n_tasks_timed: int


def human_baseline(
    tasks: pd.DataFrame,
    points: pd.DataFrame,
    *,
    axis: str = "cost",
    hourly_usd: float = DEFAULT_HOURLY_USD,
    human_minutes: float | None = None,
    human_performance: float | None = None,
    default_performance: float | None = DEFAULT_HUMAN_PERFORMANCE,
) -> Human:
    """Human cost per task from tasks' human_minutes (``human_minutes`` fills tasks without) and performance.

    Performance: an explicit ``human_performance`` wins; else the mean of the kind=human points; else
    ``default_performance`` (100% for rates; None, i.e. unknown, for IRT abilities).
    On the latency axis the human time is the human runs' mean latency, else human_minutes x 60.
    """
    per_task = tasks.drop_duplicates("task_id")["human_minutes"].astype(float)
    if human_minutes is not None:
        per_task = per_task.fillna(float(human_minutes))
    timed = per_task.dropna()
    humans = points[points["kind"] == "human"]
    if axis == "latency" and humans["latency_per_task_s"].notna().any():
        x, x_source = float(humans["latency_per_task_s"].mean()), "latency of the human runs"
    elif timed.empty:
        x, x_source = None, "no human_minutes on these tasks (enter minutes per task)"
    elif axis == "latency":
        x, x_source = float(timed.mean() * 60.0), f"human_minutes of {len(timed):,} tasks"
    else:
        x = float(timed.mean() * hourly_usd / 60.0)
        x_source = f"human_minutes of {len(timed):,} tasks x {hourly_usd:g} USD/hour"
    if human_performance is not None:
        perf, perf_source = float(human_performance), "input"
    elif humans["performance"].notna().any():
        perf = float(humans["performance"].mean())
        perf_source = "human runs: " + ", ".join(map(str, humans["run_id"]))
    elif default_performance is not None:
        perf, perf_source = default_performance, "default (no human run)"
    else:
        perf, perf_source = math.nan, "no human run: enter the human performance"
    return Human(x, perf, x_source, perf_source, len(timed))


@dataclass(frozen=True)
class Acceptance:
    """Market acceptance curve A(p) = willingness x human_x x ((p - p0) / (human_perf - p0)) ** exponent."""

    human_x: float
    human_performance: float
    p0: float = 0.0
    willingness: float = 1.0
    exponent: float = 1.0

    def performance_at(self, x: np.ndarray) -> np.ndarray:
        """Inverse of ``cost``: the performance at which a buyer pays ``x`` (NaN for a flat curve)."""
        if self.exponent == 0 or self.human_x <= 0 or self.willingness <= 0:
            return np.full(np.shape(x), np.nan)
        rel = (np.asarray(x, dtype=float) / (self.willingness * self.human_x)) ** (1.0 / self.exponent)
        return self.p0 + rel * (self.human_performance - self.p0)

    def cost(self, p: np.ndarray) -> np.ndarray:
        """The most a buyer pays per task at performance ``p``."""
        span = self.human_performance - self.p0
        if span <= 0:
            raise TmfError("human performance must exceed the performance floor")
        rel = np.clip((np.asarray(p, dtype=float) - self.p0) / span, 0.0, None)
        return self.willingness * self.human_x * rel**self.exponent


@dataclass(frozen=True)
class Value:
    """Value per task (area), the best operating point and the stage."""

    area: float
    best_saving: float
    best_performance: float
    best_run_id: str | None
    stage: int


def _grid(lo: float, hi: float, knots: np.ndarray, *, points: int = GRID_POINTS) -> np.ndarray:
    """An even grid plus the knots and their neighbours on both sides, so jumps and kinks fall on the grid
    (trapezoids are then exact for a linear A and a step S)."""
    base = np.linspace(lo, hi, points)
    knots = np.asarray(knots, dtype=float)
    extra = np.concatenate([knots, np.nextafter(knots, -np.inf), np.nextafter(knots, np.inf)])
    extra = extra[np.isfinite(extra) & (extra >= lo) & (extra <= hi)]
    return np.unique(np.concatenate([base, extra]))


def value_and_stage(
    frontier: pd.DataFrame,
    acceptance: Acceptance,
    *,
    x_col: str = "cost_per_task_usd",
    supply: str = "step",
    hull: pd.DataFrame | None = None,
) -> Value:
    """Area between A and S where A > S, best operating point, and stage (definitions in the module doc).

    Args:
        frontier: frontier rows sorted by increasing x (columns ``run_id``, ``performance`` and ``x_col``).
        acceptance: the market acceptance curve.
        x_col: the x column.
        supply: ``step`` (frontier) or ``hull`` (``hull`` rows give the vertices); the stage always uses runs.
        hull: hull rows sorted by increasing x.
    """
    fx = frontier[x_col].to_numpy(dtype=float)
    fy = frontier["performance"].to_numpy(dtype=float)
    verts = hull if (supply == "hull" and hull is not None and not hull.empty) else frontier
    vx, vy = verts[x_col].to_numpy(dtype=float), verts["performance"].to_numpy(dtype=float)
    ids = frontier["run_id"].to_numpy(dtype=object)
    return value_from_arrays(fx, fy, ids, acceptance, vx=vx, vy=vy, supply=supply)


def value_from_arrays(
    fx: np.ndarray,
    fy: np.ndarray,
    ids: np.ndarray,
    acceptance: Acceptance,
    *,
    vx: np.ndarray,
    vy: np.ndarray,
    supply: str = "step",
    grid_points: int = GRID_POINTS,
) -> Value:
    """``value_and_stage`` on arrays: frontier x, performance and run ids sorted by x; supply vertices."""
    if fx.size == 0:
        return Value(0.0, math.nan, math.nan, None, 1)
    p = _grid(acceptance.p0, float(fy[-1]), np.concatenate([fy, vy, acceptance.performance_at(fx)]), points=grid_points)
    gain = acceptance.cost(p) - supply_cost(p, vx, vy, supply=supply)
    area = float(np.trapezoid(np.clip(gain, 0.0, None), p))
    k = int(np.argmax(gain))
    best_idx = int(np.searchsorted(fy, p[k], side="left"))
    a_at = acceptance.cost(fy)
    meets = bool((fx < a_at).any())
    at_human = (fy >= acceptance.human_performance) & (fx < acceptance.human_x) & (fx < a_at)
    stage = 3 if at_human.any() else (2 if meets else 1)
    return Value(area, float(gain[k]), float(p[k]), str(ids[best_idx]), stage)


def values_from_frontiers(
    frontiers: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
    acceptance: Acceptance,
    *,
    grid_points: int = GRID_POINTS,
) -> list[Value]:
    """``value_from_arrays`` with the step supply for many frontiers at once (the bootstrap's replicates), giving the
    same numbers: each frontier ``(fx, fy, ids)`` sorted by x is its own supply curve.

    The grids, both curves and the stage are computed for all frontiers as one array padded with NaN (every
    operation is elementwise, so each value is the single call's); each trapezoid sum stays one sum over the
    frontier's own grid, in the single call's order.
    """
    if grid_points < 2:  # a grid of one point has no step: the single calls
        return [
            value_from_arrays(fx, fy, ids, acceptance, vx=fx, vy=fy, grid_points=grid_points)
            for fx, fy, ids in frontiers
        ]
    out: list[Value] = [Value(0.0, math.nan, math.nan, None, 1)] * len(frontiers)
    live = [i for i, (fx, _, _) in enumerate(frontiers) if fx.size]
    if not live:
        return out
    width = max(frontiers[i][0].size for i in live)
    fx_pad, fy_pad = np.full((len(live), width), np.nan), np.full((len(live), width), np.nan)
    for row, i in enumerate(live):
        fx_pad[row, : frontiers[i][0].size], fy_pad[row, : frontiers[i][1].size] = frontiers[i][0], frontiers[i][1]
    lo = acceptance.p0
    hi = np.array([float(frontiers[i][1][-1]) for i in live])
    p = _grids(lo, hi, np.concatenate([fy_pad, fy_pad, acceptance.performance_at(fx_pad)], axis=1), grid_points)
    is_point = ~np.isnan(p)
    # S(p) of a step: the x of the first frontier run reaching p (``np.searchsorted(fy, p, side="left")`` on the
    # frontier's non-decreasing fy is the count of fy below p)
    below = np.zeros(p.shape, dtype=np.intp)
    for j in range(width):
        below += fy_pad[:, j : j + 1] < p
    supply = np.take_along_axis(fx_pad, np.minimum(below, width - 1), axis=1)
    supply = np.where(p <= hi[:, None], supply, np.inf)
    gain = acceptance.cost(p) - supply
    clipped = np.clip(gain, 0.0, None)
    pieces = np.diff(p, axis=1) * (clipped[:, 1:] + clipped[:, :-1]) / 2.0  # ``np.trapezoid``'s terms
    k = np.argmax(np.where(is_point, gain, -np.inf), axis=1)
    at = np.arange(len(live))
    best_p = p[at, k]
    best_idx = (fy_pad < best_p[:, None]).sum(axis=1)
    a_at = acceptance.cost(fy_pad)
    meets = (fx_pad < a_at).any(axis=1)
    at_human = ((fy_pad >= acceptance.human_performance) & (fx_pad < acceptance.human_x) & (fx_pad < a_at)).any(axis=1)
    stages = np.where(at_human, 3, np.where(meets, 2, 1))
    n_points = is_point.sum(axis=1)
    for row, i in enumerate(live):
        area = float(pieces[row, : n_points[row] - 1].sum())
        ids = frontiers[i][2]
        out[i] = Value(area, float(gain[row, k[row]]), float(best_p[row]), str(ids[best_idx[row]]), int(stages[row]))
    return out


def _grids(lo: float, hi: np.ndarray, knots: np.ndarray, points: int) -> np.ndarray:
    """``_grid`` for each row of ``knots`` (NaN: no knot) up to its ``hi``: rows of sorted unique grid points, padded
    with NaN at the end."""
    base = np.empty((hi.size, points))
    step = (hi - lo) / (points - 1)
    even = step != 0
    # as ``np.linspace`` builds one grid (index x step + lo, the last point exactly hi)
    base[even] = np.arange(points, dtype=float)[None, :] * step[even, None]
    base[even] += lo
    base[even, -1] = hi[even]
    for row in np.flatnonzero(~even):
        base[row] = np.linspace(lo, hi[row], points)
    extra = np.concatenate([knots, np.nextafter(knots, -np.inf), np.nextafter(knots, np.inf)], axis=1)
    extra[~(np.isfinite(extra) & (extra >= lo) & (extra <= hi[:, None]))] = np.nan
    grid = np.sort(np.concatenate([base, extra], axis=1), axis=1)  # NaN sorts last
    grid[:, 1:][grid[:, 1:] == grid[:, :-1]] = np.nan  # repeats, as ``np.unique`` drops them
    grid = np.sort(grid, axis=1)
    return np.ascontiguousarray(grid[:, : int((~np.isnan(grid)).sum(axis=1).max())])

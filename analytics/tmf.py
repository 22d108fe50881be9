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
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analytics import compare, stats
from analytics.sqlfiles import load_sql
from store import RunlensError, query_df, run_filter_params, with_run_filter

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


# ---------------------------------------------------------------------------------------------
# Loading (the only functions that touch the database)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TmfInputs:
    """What the TMF analysis reads: per (run, task) rows and the stored IRT abilities (may be empty)."""

    benchmark: str
    tasks: pd.DataFrame
    abilities: pd.DataFrame

    @cached_property
    def task_table(self) -> pd.DataFrame:
        """One row per task present in ``tasks`` (task_id, level, category, human_minutes): what the human
        baseline reads, without going through every (run, task) row again for each slice and period."""
        return self.tasks.loc[~self.tasks["task_id"].duplicated(), ["task_id", "level", "category", "human_minutes"]]


RUN_COLUMNS = [
    "run_id",
    "agent",
    "agent_version",
    "family",
    "kind",
    "eval_date",
    "price_input_per_mtok",
    "price_output_per_mtok",
]
TASK_COLUMNS = ["task_id", "level", "category", "human_minutes"]


def load(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
) -> TmfInputs:
    """Per (run, task) rows of one benchmark (human runs always included) and its newest IRT abilities.

    Rows are ordered by the run's evaluation date (undated last), agent and run id, then task id.
    """
    params = run_filter_params(benchmark, agents, date_from, date_to, with_humans=True)
    outcomes = query_df(con, load_sql("tmf_run_tasks"), params)
    runs = query_df(
        con,
        with_run_filter(
            f"""
        SELECT {", ".join(RUN_COLUMNS)}, {compare.IS_BASELINE_SQL} AS is_baseline FROM runs r
        WHERE r.benchmark = $benchmark AND $run_filter
        ORDER BY r.eval_date NULLS LAST, r.agent, r.run_id"""
        ),
        params,
    )
    tasks = query_df(con, f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks WHERE benchmark = ?", [benchmark])
    return TmfInputs(benchmark, attach_details(outcomes, runs, tasks), irt_abilities(con, benchmark=benchmark))


def attach_details(outcomes: pd.DataFrame, runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Per (run, task) outcomes with their run's (``RUN_COLUMNS``) and task's (``TASK_COLUMNS``) details, rows in
    the order of ``runs`` then as given (a task missing from ``tasks`` gets empty details)."""
    run_at = pd.Index(runs["run_id"]).get_indexer(outcomes["run_id"])
    order = np.argsort(run_at, kind="stable")
    order = order[run_at[order] >= 0]
    rows = outcomes.iloc[order].reset_index(drop=True)
    run_at = run_at[order]
    task_at = pd.Index(tasks["task_id"]).get_indexer(rows["task_id"])
    out = {"run_id": rows["run_id"]}
    for col in RUN_COLUMNS[1:] + [c for c in ("is_baseline",) if c in runs]:
        out[col] = runs[col].take(run_at).reset_index(drop=True)
    out["task_id"] = rows["task_id"]
    for col in TASK_COLUMNS[1:]:
        values = tasks[col] if len(tasks) else pd.Series([None], dtype=tasks[col].dtype)
        out[col] = values.take(np.maximum(task_at, 0)).reset_index(drop=True).where(task_at >= 0, None)
    for col in outcomes.columns.drop(["run_id", "task_id"]):
        out[col] = rows[col]
    return pd.DataFrame(out)


def irt_abilities(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Abilities of the newest IRT fit of ``benchmark`` (subject = agent + ' ' + version), or an empty frame."""
    return query_df(
        con,
        """
        WITH newest AS (SELECT fit_key FROM irt_fits WHERE benchmark = ? ORDER BY created_at DESC LIMIT 1)
        SELECT subject, agent, agent_version, ability, ability_lo, ability_hi, fit_key
        FROM irt_abilities JOIN newest USING (fit_key)""",
        [benchmark],
    )


# ---------------------------------------------------------------------------------------------
# Points: one per run
# ---------------------------------------------------------------------------------------------


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


def current_prices(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per run, the prices of the newest run of the same family (agent when no family) that has prices."""
    runs = tasks.drop_duplicates("run_id")[
        ["run_id", "agent", "family", "eval_date", "price_input_per_mtok", "price_output_per_mtok"]
    ].copy()
    runs["group"] = runs["family"].fillna(runs["agent"]).astype(str)
    priced = runs.dropna(subset=["price_input_per_mtok", "price_output_per_mtok"])
    priced = priced.sort_values(["eval_date", "run_id"], na_position="first").groupby("group").tail(1)
    cur = priced.set_index("group")[["price_input_per_mtok", "price_output_per_mtok", "run_id"]]
    cur.columns = ["cur_price_in", "cur_price_out", "price_run_id"]
    return runs[["run_id", "group"]].join(cur, on="group").drop(columns="group")


def _row_costs(tasks: pd.DataFrame, *, cost_source: str, cur: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray]:
    """Cost per (run, task) row (USD) and, per row, whether its run was repriced.

    ``logged`` is ``cost_usd``; ``tokens`` is tokens x the run's prices (NaN without tokens or prices). With
    ``cur`` (``current_prices`` by run_id) a run whose tokens give a cost at its family's current prices takes
    that cost for every task (NaN where a task has no tokens); other runs keep theirs.
    """
    tin = tasks["input_tokens"].to_numpy(dtype=float)
    tout = tasks["output_tokens"].to_numpy(dtype=float)
    has_tokens = np.isfinite(tin) | np.isfinite(tout)

    def priced(p_in: np.ndarray, p_out: np.ndarray) -> np.ndarray:
        cost = (np.nan_to_num(tin) * p_in + np.nan_to_num(tout) * p_out) / 1e6
        return np.where(has_tokens, cost, np.nan)

    if cost_source == "logged":
        cost = tasks["cost_usd"].to_numpy(dtype=float)
    else:
        cost = priced(
            tasks["price_input_per_mtok"].to_numpy(dtype=float), tasks["price_output_per_mtok"].to_numpy(dtype=float)
        )
    repriced = np.zeros(len(tasks), dtype=bool)
    if cur is not None:
        at = cur.reindex(tasks["run_id"])
        p_in = at["cur_price_in"].to_numpy(dtype=float)
        new = priced(p_in, at["cur_price_out"].to_numpy(dtype=float))
        codes = pd.factorize(tasks["run_id"])[0]
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
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_runs)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for size in np.unique(sizes[sizes > 0]):
        runs = np.flatnonzero(sizes == size)
        rows = order[starts[runs][:, None] + np.arange(size)]  # (runs, size) row indices
        matrix = np.stack([values[rows] for values in series], axis=-1)  # (runs, size, series)
        matrix = matrix.transpose(1, 0, 2).reshape(size, -1)
        cis = stats.bootstrap_mean_cis(matrix, stats.stable_rng(seed, "tmf", str(size)), n_boot=n_boot)
        out[runs] = cis.reshape(len(runs), len(series), 2)
    return out


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
    """
    if performance not in PERFORMANCES:
        raise TmfError(f"performance {performance!r}: expected one of {', '.join(PERFORMANCES)}")
    if cost_source not in COST_SOURCES:
        raise TmfError(f"cost source {cost_source!r}: expected one of {', '.join(COST_SOURCES)}")
    if tasks.empty:
        return pd.DataFrame(columns=POINT_COLUMNS)
    codes, run_ids = pd.factorize(tasks["run_id"])  # runs in order of first appearance
    n_runs = len(run_ids)
    cur = current_prices(tasks).set_index("run_id") if is_repriced else None
    cost, repriced = _row_costs(tasks, cost_source=cost_source, cur=cur)
    latency = tasks["latency_s"].to_numpy(dtype=float)
    rate = tasks["c"].to_numpy(dtype=float) / tasks["n"].to_numpy(dtype=float)
    score = tasks["score"].to_numpy(dtype=float)
    by_score = performance != "pass@1"
    series = [cost, latency, score] if by_score else [cost, latency]
    cis = _bootstrap_by_size(codes, series, n_runs, seed=seed, n_boot=n_boot)
    first = np.unique(codes, return_index=True)[1]
    n_tasks = np.bincount(codes, minlength=n_runs)
    out: dict[str, Any] = {
        col: tasks[col].to_numpy()[first] for col in ("run_id", "agent", "agent_version", "family", "kind", "eval_date")
    }
    out["n_tasks"] = n_tasks
    if by_score:
        out["performance"] = _run_means(codes, score, n_runs)[0]
        out["perf_lo"], out["perf_hi"] = cis[:, 2, 0], cis[:, 2, 1]
    else:
        p = np.bincount(codes, weights=rate, minlength=n_runs) / n_tasks
        order = np.argsort(codes, kind="stable")
        per_run = np.split(order, np.cumsum(n_tasks)[:-1])
        samples = tasks["n"].to_numpy(dtype=float)
        # the leaderboard's Pass@1 interval: Wilson with the task-clustered effective sample size
        wilson = np.array([compare.wilson_clustered(rate[rows], samples[rows]) for rows in per_run])
        out["performance"], out["perf_lo"], out["perf_hi"] = p, wilson[:, 0], wilson[:, 1]
    out["cost_per_task_usd"], out["n_cost_tasks"] = _run_means(codes, cost, n_runs)
    out["cost_lo"], out["cost_hi"] = cis[:, 0, 0], cis[:, 0, 1]
    out["latency_per_task_s"] = _run_means(codes, latency, n_runs)[0]
    out["latency_lo"], out["latency_hi"] = cis[:, 1, 0], cis[:, 1, 1]
    out["is_repriced"] = repriced[first]
    out["price_run_id"] = [None] * n_runs if cur is None else cur["price_run_id"].reindex(run_ids).to_numpy()
    points = pd.DataFrame(out, columns=POINT_COLUMNS)
    return _attach_abilities(points, abilities) if performance == "irt" else points


def _attach_abilities(points: pd.DataFrame, abilities: pd.DataFrame | None) -> pd.DataFrame:
    out = points.copy()
    version = out["agent_version"].fillna("").astype(str)
    subject = out["agent"].astype(str) + np.where(version == "", "", " " + version)
    table = (abilities if abilities is not None else pd.DataFrame(columns=["subject"])).drop_duplicates("subject")
    table = table.set_index("subject")
    for col, src in (("performance", "ability"), ("perf_lo", "ability_lo"), ("perf_hi", "ability_hi")):
        out[col] = subject.map(table[src]).astype(float) if src in table else math.nan
    return out


# ---------------------------------------------------------------------------------------------
# Frontier, hull, supply curve
# ---------------------------------------------------------------------------------------------


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True for points no other point dominates (x <= and y >= with one strict); NaNs are never on it.

    O(n log n): sort by x then -y; a point survives when its y beats every strictly cheaper point's y and it
    is the best at its own x (exact duplicates all survive).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    mask = np.zeros(x.shape, dtype=bool)
    ok = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    if ok.size == 0:
        return mask
    order = ok[np.lexsort((-y[ok], x[ok]))]
    best_cheaper = -np.inf
    i = 0
    while i < order.size:
        j = i
        while j < order.size and x[order[j]] == x[order[i]]:
            j += 1
        group = order[i:j]
        top = y[group].max()
        if top > best_cheaper:
            mask[group[y[group] == top]] = True
        best_cheaper = max(best_cheaper, top)
        i = j
    return mask


def upper_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the rising part of the upper convex hull of the points, in increasing x.

    Starts at the cheapest-best point and ends at the best-cheapest point; points on a hull edge are left out.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
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


# ---------------------------------------------------------------------------------------------
# Human baseline, acceptance curve, value and stage
# ---------------------------------------------------------------------------------------------


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
        x, x_source = float(timed.mean() * 60.0), f"human_minutes of {len(timed)} tasks"
    else:
        x = float(timed.mean() * hourly_usd / 60.0)
        x_source = f"human_minutes of {len(timed)} tasks x {hourly_usd:g} USD/hour"
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


# ---------------------------------------------------------------------------------------------
# The whole analysis
# ---------------------------------------------------------------------------------------------


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
        p_best: run id -> share of replicates where the run is the best operating point.
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
) -> TmfResult:
    """Points, frontier, hull, human, acceptance, value and stage for one slice (runs up to ``as_of``).

    Only runs on the slice's comparison set (``compare.comparison_set`` over the agent runs up to ``as_of``) are
    analysed; the others are listed in ``assumptions["runs_on_other_tasks"]``. With ``with_uncertainty`` a
    paired task bootstrap (``bootstrap_tmf``) gives the stage probabilities, p_frontier and p_best.
    """
    opt = options or TmfOptions()
    if opt.axis not in AXES:
        raise TmfError(f"axis {opt.axis!r}: expected cost or latency")
    x_col, unit = AXES[opt.axis]
    rows, baselines = drop_baselines(slice_tasks(inputs.tasks, slice_name))
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
    keep, cset = comparable_runs(rows[rows["run_id"].isin(points["run_id"])])
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


def comparable_runs(rows: pd.DataFrame) -> tuple[set[str], frozenset[str]]:
    """The agent runs of ``rows`` on their comparison set (the task set most of them were evaluated on)."""
    agents = rows[rows["kind"] != "human"]
    sets = {str(r): frozenset(t.astype(str)) for r, t in agents.groupby("run_id", sort=False)["task_id"]}
    cset = compare.comparison_set(sets)
    return {r for r, s in sets.items() if s == cset}, cset


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
    cost, _ = _row_costs(rows, cost_source=opt.cost_source, cur=cur)
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
        {str(r): float(sum(b == str(r) for b in best) / n) for r in r_ids},
        (float(np.nanquantile(area, 0.025)), float(np.nanquantile(area, 0.975))),
    )


def _weighted_means(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Per replicate and run, the mean of the finite cells over the resampled tasks: ``(replicates, runs)``."""
    ok = np.isfinite(matrix)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ np.where(ok, matrix, 0.0)) / (weights @ ok.astype(float))


def _replicate_values(
    bx: np.ndarray, by: np.ndarray, run_ids: list[str], result: TmfResult, opt: TmfOptions
) -> tuple[np.ndarray, np.ndarray, list[str | None], np.ndarray]:
    """Stage, frontier membership, best run and value area of every bootstrap replicate.

    The value grid is coarser than the estimate's (``BOOT_GRID_POINTS``): the frontier's knots are on it either
    way, so the stage and the best point are unchanged and the area of a linear acceptance curve stays exact.
    """
    n_rep = bx.shape[0]
    stages = np.zeros(n_rep, dtype=int)
    on_front = np.zeros(bx.shape, dtype=bool)
    best: list[str | None] = []
    area = np.full(n_rep, np.nan)
    ids = np.array(run_ids, dtype=object)
    rank = np.argsort(np.argsort(ids))  # run-id order, the last tie-break of ``_assemble``
    acceptance = result.acceptance
    if acceptance is None:
        return stages, on_front, best, area
    for i in range(n_rep):
        ok = np.isfinite(bx[i]) & np.isfinite(by[i]) & (bx[i] > 0)
        x, y = np.where(ok, bx[i], np.nan), np.where(ok, by[i], np.nan)
        mask = pareto_mask(x, y)
        on_front[i] = mask
        f = _sorted_rows(mask, x, y, rank)
        v = f
        if opt.supply == "hull":
            hmask = np.zeros(len(ids), dtype=bool)
            hmask[upper_hull(x, y)] = True
            v = _sorted_rows(hmask, x, y, rank) if hmask.any() else f
        val = value_from_arrays(
            x[f], y[f], ids[f], acceptance, vx=x[v], vy=y[v], supply=opt.supply, grid_points=BOOT_GRID_POINTS
        )
        stages[i], area[i] = val.stage, val.area
        best.append(val.best_run_id)
    return stages, on_front, best, area


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
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    options: TmfOptions | None = None,
    freq: str = "quarter",
    slice_kinds: tuple[str, ...] = ("level",),
) -> Overview:
    """Load and analyse one benchmark (for ``ui.common.cached``: every argument is hashable).

    The small multiples of ``slice_kinds`` come with it so that the page's first render reads the data once;
    another kind, or an earlier period, is ``slice_results``.
    """
    inputs = load(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
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
    *,
    benchmark: str,
    kind: str = "level",
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    options: TmfOptions | None = None,
    as_of: dt.date | None = None,
) -> tuple[TmfResult, ...]:
    """The analysis of every ``level`` (or ``category``) slice, for small multiples (runs up to ``as_of``)."""
    inputs = load(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    return analyse_slices(inputs, kind=kind, options=options, as_of=as_of)


def has_irt_fit(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> bool:
    """True when a stored IRT fit gives abilities for ``benchmark``."""
    return not irt_abilities(con, benchmark=benchmark).empty


# ---------------------------------------------------------------------------------------------
# Report (CLI JSON)
# ---------------------------------------------------------------------------------------------


def report(result: TmfResult) -> dict[str, Any]:
    """The issue's JSON shape (agents only in ``points``; runs without cost have a null cost)."""
    agents = result.points[result.points["kind"] != "human"]
    unc = result.uncertainty
    points = [
        {
            "run_id": str(r.run_id),
            "agent": str(r.agent),
            "cost_per_task_usd": _num(r.cost_per_task_usd),
            "performance": _num(r.performance),
            "on_frontier": bool(r.on_frontier),
            "n_tasks": int(r.n_tasks),
            "is_few_tasks": bool(r.is_few_tasks),
            "p_frontier": None if unc is None else unc.p_frontier.get(str(r.run_id), 0.0),
            "p_best": None if unc is None else unc.p_best.get(str(r.run_id), 0.0),
        }
        for r in agents.itertuples()
    ]
    human: dict[str, float | None] | None = None
    if result.human is not None:
        is_cost = result.x_col == "cost_per_task_usd"
        human = {
            "cost_per_task_usd": _num(result.human.x) if is_cost else None,
            "performance": _num(result.human.performance),
        }
        if not is_cost:
            human["latency_per_task_s"] = _num(result.human.x)
    val = result.value
    return {
        "points": points,
        "frontier": list(result.frontier),
        "human": human,
        "value_area_usd": None if val is None else _num(val.area),
        "best_saving_usd": None if val is None else _num(val.best_saving),
        "best_run_id": None if val is None else val.best_run_id,
        "stage": None if val is None else val.stage,
        "stage_probability": None if unc is None else unc.stage_probability,
        "value_per_task_ci95": None if unc is None else [_num(v) for v in unc.value_ci95],
        "n_replicates": None if unc is None else unc.n_replicates,
        "assumptions": {**result.assumptions, "slice": result.slice_name},
    }


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def text_report(benchmark: str, slice_name: str, result: TmfResult, rep: dict[str, Any]) -> str:
    """The headline and one line per run (``*`` on the frontier): cost per task, performance, agent, run."""
    lines = [f"== {benchmark} [{slice_name}] {headline(result)}"]
    for p in rep["points"]:
        mark = "*" if p["on_frontier"] else " "
        cost = "   (no cost)" if p["cost_per_task_usd"] is None else f"{p['cost_per_task_usd']:12.4f}"
        perf = "n/a" if p["performance"] is None else f"{p['performance']:.3f}"
        lines.append(f"{mark} {cost}  {perf}  {p['agent']}  ({p['run_id']})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Words and figures
# ---------------------------------------------------------------------------------------------


def fmt_x(value: float | None, unit: str) -> str:
    """Money as $1.23 (more digits below a cent); seconds as 12.3 s."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "s":
        return f"{value:,.1f} s" if value < 600 else f"{value / 60:,.1f} min"
    return f"${value:,.4f}" if abs(value) < 0.01 else f"${value:,.2f}"


def fmt_perf(value: float | None, performance: str) -> str:
    """Rates as percentages, IRT abilities as logits."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.2f} logits" if performance == "irt" else f"{100 * value:.1f}%"


def headline(result: TmfResult) -> str:
    """The result in one or two sentences an executive can read."""
    val, hum, u = result.value, result.human, result.unit
    if hum is not None and hum.x is not None and not math.isfinite(hum.performance):
        return "No human run has an IRT ability here: enter the human performance (logits) to place the human."
    if hum is None or val is None or result.acceptance is None:
        return "No human cost for these tasks: enter human minutes per task to place the human curve."
    if not result.frontier:
        return "No run has both a cost and a performance here."
    pts = result.points.set_index("run_id")
    best = pts.loc[val.best_run_id]
    where = (
        f"{best['agent']} reaches {fmt_perf(best['performance'], result.performance)} for "
        f"{fmt_x(best[result.x_col], u)} per task"
    )
    accept = fmt_x(float(result.acceptance.cost(np.array([best["performance"]]))[0]), u)
    stage = stage_label(result)
    few = int(result.points.loc[result.points["kind"] != "human", "is_few_tasks"].sum())
    caution = f" {few} run(s) on fewer than {MIN_TASKS} tasks: their points are uncertain." if few else ""
    if val.stage == 1:
        return (
            f"{stage}: no agent is cheaper than a human of the same quality. Closest: {where}, "
            f"where a buyer pays at most {accept}.{caution}"
        )
    return (
        f"{stage}. AI adds {fmt_x(val.area, u)} of value per task (area between the curves). "
        f"Best operating point: {where}, against {accept} for human-equivalent work — a saving of "
        f"{fmt_x(val.best_saving, u)} per task.{_best_odds(result)}{caution}"
    )


def stage_label(result: TmfResult) -> str:
    """``Stage 2 (99%) · Agents and humans collaborating``: the stage with the share of bootstrap replicates that
    agree (the estimate alone when there is no bootstrap)."""
    if result.value is None:
        return ""
    name = STAGE_NAMES[result.value.stage]
    unc = result.uncertainty
    if unc is None:
        return name
    share = unc.stage_probability.get(str(result.value.stage), 0.0)
    head, _, tail = name.partition(" · ")
    return f"{head} ({100 * share:.0f}%) · {tail}"


def _best_odds(result: TmfResult) -> str:
    unc, val = result.uncertainty, result.value
    if unc is None or val is None or val.best_run_id is None:
        return ""
    return (
        f" It is the best point in {100 * unc.p_best.get(val.best_run_id, 0.0):.0f}% and on the frontier in "
        f"{100 * unc.p_frontier.get(val.best_run_id, 0.0):.0f}% of {unc.n_replicates} task-bootstrap replicates; "
        f"value per task 95% interval {fmt_x(unc.value_ci95[0], result.unit)} to "
        f"{fmt_x(unc.value_ci95[1], result.unit)}."
    )


COLORS = {
    "frontier": "#1f5fbf",
    "other": "#9aa4b2",
    "human": "#d9480f",
    "market": "rgba(47,158,68,0.10)",
    "tech": "rgba(31,95,191,0.10)",
    "value": "rgba(47,158,68,0.55)",
    "accept": "#2f9e44",
    "hull": "#7048e8",
    "no_cost": "#c92a2a",
}
STAGE_COLORS = {1: "#c92a2a", 2: "#e67700", 3: "#2f9e44"}


# Figures are assembled as plain dicts and validated once, by the final ``go.Figure(data, layout)``: building
# them from ``go.Scatter`` objects, ``update_layout``/``update_xaxes`` calls and ``add_trace(row=, col=)`` validated
# every property several times and copied the template on each layout update (0.1-0.2 s per figure at 1M attempts).
Trace = dict[str, Any]


@functools.cache
def _template() -> dict[str, Any]:
    """Plotly's ``plotly_white`` template, keeping only the defaults of the one trace type drawn here (scatter):
    the same look, at half the cost of validating and copying the whole template for every figure."""
    import plotly.io as pio

    white = pio.templates["plotly_white"].to_plotly_json()
    return {"layout": white["layout"], "data": {"scatter": white["data"]["scatter"]}}


def _hover(df: pd.DataFrame, result: TmfResult) -> list[str]:
    u, perf = result.unit, result.performance
    lo, hi = ("cost_lo", "cost_hi") if result.x_col == "cost_per_task_usd" else ("latency_lo", "latency_hi")
    cols = [
        "agent",
        "agent_version",
        "run_id",
        "eval_date",
        result.x_col,
        lo,
        hi,
        "performance",
        "perf_lo",
        "perf_hi",
        "n_tasks",
        "is_repriced",
    ]
    return [
        f"<b>{agent}</b> {'' if pd.isna(version) else version}<br>"
        f"run {run_id} · {date}<br>"
        f"{'cost' if u == 'USD' else 'latency'}/task {fmt_x(x, u)} [{fmt_x(x_lo, u)}, {fmt_x(x_hi, u)}]<br>"
        f"performance {fmt_perf(p, perf)} [{fmt_perf(p_lo, perf)}, {fmt_perf(p_hi, perf)}]"
        f"<br>{int(n_tasks)} tasks{' · repriced' if repriced else ''}"
        for agent, version, run_id, date, x, x_lo, x_hi, p, p_lo, p_hi, n_tasks, repriced in zip(
            *(df[c].tolist() for c in cols), strict=True
        )
    ]


def _rows(result: TmfResult, run_ids: Sequence[str]) -> pd.DataFrame:
    """The points of ``run_ids``, in that order."""
    return result.points.iloc[pd.Index(result.points["run_id"]).get_indexer(list(run_ids))]


def _scale(result: TmfResult) -> float:
    return 1.0 if result.performance == "irt" else 100.0


def _x_range(result: TmfResult) -> tuple[float, float]:
    pts = result.points[result.points["has_cost"] & (result.points["kind"] != "human")]
    xs = list(pts[result.x_col].astype(float))
    if result.human is not None and result.human.x:
        xs.append(result.human.x)
    xs = [v for v in xs if v > 0 and math.isfinite(v)] or [0.01, 1.0]
    return math.log10(min(xs)) - 0.4, math.log10(max(xs)) + 0.4


def _y_range(result: TmfResult) -> tuple[float, float]:
    if result.performance != "irt":
        return 0.0, 1.0
    ys = list(result.points["performance"].dropna()) + ([result.human.performance] if result.human else [])
    ys = [v for v in ys if math.isfinite(v)]
    return (min(ys) - 0.3, max(ys) + 0.3) if ys else (-1.0, 1.0)


def _region_traces(result: TmfResult, row: int | None = None) -> list[Trace]:
    """Market-acceptable region, tech-accessible region and their intersection as filled polygons."""
    acc = result.acceptance
    x0, x1 = (10**v for v in _x_range(result))
    y0, y1 = _y_range(result)
    s = _scale(result)
    p = np.linspace(max(y0, acc.p0) if acc else y0, y1, 240)
    region = {"type": "scatter", "fill": "toself", "mode": "none", "hoverinfo": "skip"}
    traces: list[Trace] = []
    if acc is not None:
        ax = np.clip(acc.cost(p), x0, x1)
        traces.append(
            {
                **region,
                "x": np.concatenate([[x0], ax, [x0]]),
                "y": np.concatenate([[p[0] * s], p * s, [p[-1] * s]]),
                "fillcolor": COLORS["market"],
                "name": "Market-acceptable region",
                "legendgroup": "market",
                "showlegend": row in (None, 1),
            }
        )
    if result.frontier:
        front = _rows(result, result.frontier)
        sx = supply_cost(p, front[result.x_col].to_numpy(float), front["performance"].to_numpy(float), supply="step")
        keep = np.isfinite(sx)
        traces.append(
            {
                **region,
                "x": np.concatenate([sx[keep], [x1, x1]]),
                "y": np.concatenate([p[keep] * s, [p[keep][-1] * s, p[0] * s]]),
                "fillcolor": COLORS["tech"],
                "name": "Tech-accessible region",
                "legendgroup": "tech",
                "showlegend": row in (None, 1),
            }
        )
        if acc is not None:
            traces.extend(_intersection(p, sx, acc.cost(p), s, show=row in (None, 1)))
    return traces


def _intersection(p: np.ndarray, sx: np.ndarray, ax: np.ndarray, s: float, *, show: bool) -> list[Trace]:
    inside = np.isfinite(sx) & (ax > sx)
    out, start, first = [], None, True
    for i, flag in enumerate([*inside, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            seg = slice(start, i)
            out.append(
                {
                    "type": "scatter",
                    "x": np.concatenate([sx[seg], ax[seg][::-1]]),
                    "y": np.concatenate([p[seg] * s, p[seg][::-1] * s]),
                    "fill": "toself",
                    "mode": "none",
                    "fillcolor": COLORS["value"],
                    "hoverinfo": "skip",
                    "name": "AI value (intersection)",
                    "legendgroup": "value",
                    "showlegend": show and first,
                }
            )
            start, first = None, False
    return out


def _frontier_trace(result: TmfResult, x1: float, *, show: bool) -> Trace | None:
    if not result.frontier:
        return None
    pts = _rows(result, result.frontier)
    s = _scale(result)
    y = pts["performance"].to_numpy(float) * s
    return {
        "type": "scatter",
        "x": np.append(pts[result.x_col].to_numpy(float), x1),
        "y": np.append(y, y[-1]),
        "mode": "lines",
        "line": {"shape": "hv", "color": COLORS["frontier"], "width": 3},
        "name": "Optimal supply curve (Pareto frontier)",
        "legendgroup": "frontier",
        "showlegend": show,
        "hoverinfo": "skip",
    }


def _point_traces(result: TmfResult, *, show: bool, labels: bool) -> list[Trace]:
    s = _scale(result)
    pts = result.points[(result.points["kind"] != "human") & result.points["has_cost"]]
    traces: list[Trace] = []
    for on, color, name in ((False, COLORS["other"], "Other runs"), (True, COLORS["frontier"], "Frontier runs")):
        part = pts[pts["on_frontier"] == on]
        if part.empty:
            continue
        trace: Trace = {
            "type": "scatter",
            "x": part[result.x_col].to_numpy(float),
            "y": part["performance"].to_numpy(float) * s,
            "mode": "markers+text" if on and labels else "markers",
            "textposition": [
                "top right" if i == 0 else ("top left" if i % 2 else "bottom right") for i in range(len(part))
            ],
            "textfont": {"size": 11, "color": COLORS["frontier"]},
            "marker": {"size": 11 if on else 8, "color": color, "line": {"width": 1, "color": "white"}},
            "customdata": part[["run_id"]].to_numpy(),
            "hovertext": _hover(part, result),
            "hoverinfo": "text",
            "name": name,
            "legendgroup": name,
            "showlegend": show,
        }
        if on and labels:
            trace["text"] = frontier_labels(part, result)
        traces.append(trace)
    if result.performance != "irt" and not pts.empty:
        perf = pts["performance"].to_numpy(float)
        traces.append(
            {
                "type": "scatter",
                "x": pts[result.x_col].to_numpy(float),
                "y": perf * s,
                "mode": "markers",
                "marker": {"size": 0, "opacity": 0},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": (pts["perf_hi"].to_numpy(float) - perf) * s,
                    "arrayminus": (perf - pts["perf_lo"].to_numpy(float)) * s,
                    "color": "rgba(80,80,80,0.35)",
                    "thickness": 1,
                    "width": 0,
                },
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
    return traces


def short_labels(names: Sequence[str]) -> list[str]:
    """Agent names without the words they all share at the start (``HAL Generalist Agent (GPT-5)`` -> ``GPT-5``)."""
    names = [str(n) for n in names]
    if len(names) < 2:
        return names
    prefix = 0
    while all(len(n) > prefix and n[prefix] == names[0][prefix] for n in names):
        prefix += 1
    # only a shared scaffold name followed by "(model)" is dropped; "Agent A"/"Agent B" stay whole
    cut = names[0].rfind("(", 0, prefix) + 1
    out = []
    for n in names:
        label = n[cut:].strip() or n
        if label.count(")") > label.count("("):
            label = label[: label.rfind(")")]
        out.append(label)
    return out


def frontier_labels(part: pd.DataFrame, result: TmfResult) -> list[str]:
    """Short agent names for frontier points; a name used twice gets its month; near-coincident points share
    one label ("Gemini-3-Pro / o3") so the chart stays readable."""
    names = short_labels(list(part["agent"]))
    dates = pd.to_datetime(part["eval_date"])
    counts = pd.Series(names).value_counts()
    names = [f"{n} ({d:%Y-%m})" if counts[n] > 1 and pd.notna(d) else n for n, d in zip(names, dates, strict=True)]
    lx = np.log10(part[result.x_col].to_numpy(dtype=float))
    y = part["performance"].to_numpy(dtype=float) * (0.01 * _scale(result))
    order = np.argsort(lx, kind="mergesort")
    out = list(names)
    for a, b in zip(order[:-1], order[1:], strict=True):
        if abs(lx[b] - lx[a]) < 0.08 and abs(y[b] - y[a]) < 0.03:
            out[b] = f"{out[a]} / {out[b]}"
            out[a] = ""
    return out


def _human_traces(result: TmfResult, x0: float, *, show: bool) -> list[Trace]:
    acc, hum = result.acceptance, result.human
    if acc is None or hum is None:
        return []
    s = _scale(result)
    y0, y1 = _y_range(result)
    p = np.linspace(max(acc.p0, y0) + 1e-6, y1, 200)
    ax = acc.cost(p)
    keep = ax >= x0
    return [
        {
            "type": "scatter",
            "x": ax[keep],
            "y": p[keep] * s,
            "mode": "lines",
            "name": "Human cost curve (market acceptance)",
            "hoverinfo": "skip",
            "legendgroup": "accept",
            "line": {"color": COLORS["accept"], "dash": "dash", "width": 2},
            "showlegend": show,
        },
        {
            "type": "scatter",
            "x": [hum.x],
            "y": [hum.performance * s],
            "mode": "markers+text",
            "text": ["Human"],
            "textposition": "middle left",
            "textfont": {"color": COLORS["human"], "size": 12},
            "marker": {"symbol": "star", "size": 18, "color": COLORS["human"], "line": {"width": 1, "color": "white"}},
            "hovertext": [
                f"<b>Human</b><br>{fmt_x(hum.x, result.unit)} per task ({hum.x_source})<br>"
                f"performance {fmt_perf(hum.performance, result.performance)} ({hum.performance_source})"
            ],
            "hoverinfo": "text",
            "name": "Human",
            "legendgroup": "human",
            "showlegend": show,
        },
    ]


def _panel_traces(result: TmfResult, *, row: int | None, labels: bool) -> list[Trace]:
    x0, x1 = (10**v for v in _x_range(result))
    show = row in (None, 1)
    traces = _region_traces(result, row)
    front = _frontier_trace(result, x1, show=show)
    traces += [front] if front is not None else []
    traces += _human_traces(result, x0, show=show)
    traces += _point_traces(result, show=show, labels=labels)
    return traces


def _axis_titles(result: TmfResult) -> tuple[str, str]:
    x_title = "Cost per task (USD, log scale)" if result.unit == "USD" else "Latency per task (s, log scale)"
    y_title = {"pass@1": "Pass@1 (%)", "mean_score": "Mean score (%)", "irt": "IRT ability (logits)"}
    return x_title, y_title[result.performance]


def fig_tmf(result: TmfResult, *, title: str | None = None, height: int = 620) -> go.Figure:
    """The executive chart: regions, intersection, frontier step, human point and curve, stage badge."""
    x_title, y_title = _axis_titles(result)
    y0, y1 = _y_range(result)
    s = _scale(result)
    annotations: list[dict[str, Any]] = []
    stage = result.value.stage if result.value else None
    if stage:
        annotations.append(
            {
                "text": f"<b>{STAGE_NAMES[stage]}</b>",
                "xref": "paper",
                "yref": "paper",
                "x": 0.01,
                "y": 0.99,
                "xanchor": "left",
                "yanchor": "top",
                "showarrow": False,
                "font": {"color": "white", "size": 14},
                "bgcolor": STAGE_COLORS[stage],
                "borderpad": 6,
            }
        )
    annotations += _best_annotation(result)
    if result.value and result.value.area > 0:
        annotations.append(
            {
                "text": f"AI value ≈ {fmt_x(result.value.area, result.unit)} per task",
                "xref": "paper",
                "yref": "paper",
                "x": 0.01,
                "y": 0.90,
                "xanchor": "left",
                "showarrow": False,
                "font": {"color": "#2b8a3e", "size": 13},
                "bgcolor": "rgba(255,255,255,0.8)",
            }
        )
    layout = {
        "xaxis": {"type": "log", "title": {"text": x_title}, "range": list(_x_range(result)), "gridcolor": "#eef0f3"},
        "yaxis": {
            "title": {"text": y_title},
            "range": [y0 * s - 2 * (s > 1), y1 * s + 4 * (s > 1)],
            "gridcolor": "#eef0f3",
        },
        "annotations": annotations,
        "height": height,
        "template": _template(),
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.15},
        "margin": {"l": 60, "r": 20, "t": 60, "b": 40},
    }
    if title:
        layout["title"] = {"text": title}
    return go.Figure(data=_panel_traces(result, row=None, labels=True), layout=layout)


def _best_annotation(result: TmfResult) -> list[dict[str, Any]]:
    val = result.value
    if val is None or val.best_run_id is None or val.best_saving <= 0:
        return []
    best = _rows(result, [val.best_run_id]).iloc[0]
    return [
        {
            "x": math.log10(float(best[result.x_col])),
            "y": float(best["performance"]) * _scale(result),
            "text": f"<b>Best operating point</b><br>saves {fmt_x(val.best_saving, result.unit)} per task",
            "showarrow": True,
            "arrowhead": 2,
            "ax": 40,
            "ay": -60,
            "font": {"color": "#2b8a3e", "size": 12},
            "bgcolor": "rgba(255,255,255,0.85)",
            "bordercolor": "#2b8a3e",
        }
    ]


def subplot_grid(
    rows: int, cols: int, titles: Sequence[str], *, horizontal_spacing: float = 0.2, vertical_spacing: float = 0.3
) -> dict[str, Any]:
    """The layout ``plotly.subplots.make_subplots`` builds for a plain grid (axes ``x``, ``x2``... row by row from
    the top left, each anchored to its ``y``; one title annotation per panel), without building its figure."""
    width = (1.0 - horizontal_spacing * (cols - 1)) / cols
    height = (1.0 - vertical_spacing * (rows - 1)) / rows
    layout: dict[str, Any] = {}
    annotations = []
    for k in range(rows * cols):
        r, c = divmod(k, cols)
        x0 = c * (width + horizontal_spacing)
        y1 = 1.0 - r * (height + vertical_spacing)
        suffix = "" if k == 0 else str(k + 1)
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": [x0, x0 + width]}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": [max(0.0, y1 - height), y1]}
        if k < len(titles):
            annotations.append(
                {
                    "font": {"size": 16},
                    "showarrow": False,
                    "text": titles[k],
                    "x": x0 + width / 2,
                    "xanchor": "center",
                    "xref": "paper",
                    "y": y1,
                    "yanchor": "bottom",
                    "yref": "paper",
                }
            )
    layout["annotations"] = annotations
    return layout


def fig_small_multiples(results: Sequence[TmfResult], *, height: int = 380) -> go.Figure:
    """One panel per slice (level or category), each with its own stage in the panel title."""
    n = len(results)
    cols = min(n, 3) or 1
    rows = max(1, math.ceil(n / cols))
    titles = [
        f"{r.slice_name.split('=', 1)[-1]} · "
        f"{'stage ' + str(r.value.stage) if r.value else 'no human cost'}"
        + (f" · {fmt_x(r.value.area, r.unit)}/task" if r.value else "")
        for r in results
    ]
    layout = subplot_grid(rows, cols, titles, horizontal_spacing=0.06, vertical_spacing=0.14)
    traces: list[Trace] = []
    for i, res in enumerate(results):
        suffix = "" if i == 0 else str(i + 1)  # panel i sits on axes x{i+1}/y{i+1}, row by row as make_subplots
        traces += [
            {**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
            for trace in _panel_traces(res, row=i + 1, labels=False)
        ]
        y0, y1 = _y_range(res)
        layout[f"xaxis{suffix}"] = {**layout.get(f"xaxis{suffix}", {}), "type": "log", "range": list(_x_range(res))}
        layout[f"yaxis{suffix}"] = {
            **layout.get(f"yaxis{suffix}", {}),
            "range": [y0 * _scale(res), y1 * _scale(res) + 3],
        }
    layout.update(
        {
            "height": height * rows,
            "template": _template(),
            "legend": {"orientation": "h", "y": -0.08},
            "margin": {"l": 50, "r": 20, "t": 50, "b": 40},
        }
    )
    return go.Figure(data=traces, layout=layout)


def fig_movie(movie: Sequence[tuple[str, TmfResult]], *, height: int = 480) -> go.Figure:
    """The frontier of every period on one chart, older periods lighter."""
    traces: list[Trace] = []
    n = len(movie)
    last: TmfResult | None = None
    for i, (label, res) in enumerate(movie):
        if not res.frontier:
            continue
        alpha = 0.25 + 0.75 * (i + 1) / max(n, 1)
        pts = _rows(res, res.frontier)
        traces.append(
            {
                "type": "scatter",
                "x": pts[res.x_col].to_numpy(float),
                "y": pts["performance"].to_numpy(float) * _scale(res),
                "mode": "lines+markers",
                "name": label,
                "line": {"shape": "hv", "width": 1.5 + 1.5 * (i == n - 1), "color": f"rgba(31,95,191,{alpha:.2f})"},
                "customdata": pts[["run_id"]].to_numpy(),
                "hovertext": _hover(pts, res),
                "hoverinfo": "text",
            }
        )
        last = res
    layout: dict[str, Any] = {
        "height": height,
        "template": _template(),
        "title": {"text": "Optimal supply curve per period (cumulative)"},
    }
    if last is not None:
        traces += _human_traces(last, 10 ** _x_range(last)[0], show=True)
        x_title, y_title = _axis_titles(last)
        layout["xaxis"] = {"type": "log", "title": {"text": x_title}}
        layout["yaxis"] = {"title": {"text": y_title}}
    return go.Figure(data=traces, layout=layout)


# ---------------------------------------------------------------------------------------------
# Page helpers (pure): tables, links, words, export
# ---------------------------------------------------------------------------------------------

DEFINITIONS_MD = """
**Performance**: Pass@1 (mean over tasks of passed/samples, 95% Wilson interval over tasks), mean score
(seeded bootstrap over tasks) or IRT ability (newest stored fit, subject = agent + version).

**Cost per task**: mean over tasks of the logged `cost_usd` (ingest fills it from tokens × the run's prices when
a log has none), or tokens × the run's prices. 95% interval: seeded bootstrap over tasks. Runs with no cost are
listed in the table, never silently dropped. *Reprice* recomputes cost from tokens at the prices of the newest
run (by evaluation date) of the same family (agent when no family); runs without tokens keep their cost.

**Optimal supply curve**: the Pareto frontier, the runs no other run beats by being both cheaper (or equal) and
better (or equal), one strictly; drawn as a step: S(p) = cost of the cheapest frontier run with performance ≥ p.
The *hull* option is the upper convex hull in linear cost: what routing a share of tasks to each of two agents buys.

**Human**: cost per task = mean human_minutes of the tasks × hourly rate / 60 (USD); performance from the
benchmark's human runs (kind = human), else the override, else 100%.

**Market acceptance curve** (human cost curve): A(p) = willingness × human cost × (p / human performance)^exponent.
The default (1, 1) is xbench's worst case: a buyer pays at most what a human costs, scaled by quality relative
to the human. The **market-acceptable region** is left of it (cheaper than the buyer accepts); the
**tech-accessible region** is right of the supply curve (what agents can deliver).

**Value per task**: the area where the two regions overlap, ∫ max(0, A(p) − S(p)) dp over performance on a 0–1
scale, in USD per task: the saving averaged over all quality levels. **Best operating point**: the performance
where A(p) − S(p) is largest (negative = how far the cheapest agent is from TMF).

**Stages** (xbench): 1 = the regions do not meet; 2 = they meet but no frontier agent reaches human performance
below human cost (agents and humans collaborate); 3 = a frontier agent matches human performance below human cost.
Point estimates decide the stage; the intervals in the table show how firm it is.

**Over time**: each period shows the frontier of every run evaluated up to its end.
"""


def period_end(label: str, freq: str) -> dt.date:
    """Last day of a period label such as ``2025Q3`` (quarter), ``2025-07`` (month) or ``2025`` (year)."""
    return pd.Period(label, freq=PERIODS[freq]).end_time.date()


def run_url(run_id: str) -> str:
    """Relative link that opens one run on the drilldown page."""
    from urllib.parse import urlencode

    return "drilldown?" + urlencode({"run": run_id})


def points_table(result: TmfResult) -> pd.DataFrame:
    """The runs behind the chart, frontier first, with intervals, flags and a link to open each run."""
    pts = result.points.copy()
    pts = pts.sort_values(["on_frontier", result.x_col], ascending=[False, True], na_position="last")
    s = 1.0 if result.performance == "irt" else 100.0
    out = pd.DataFrame(
        {
            "agent": pts["agent"],
            "version": pts["agent_version"],
            "kind": pts["kind"],
            "eval_date": pd.to_datetime(pts["eval_date"]).dt.date,
            "run_id": pts["run_id"],
            "performance": (pts["performance"] * s).round(2),
            "perf_lo": (pts["perf_lo"] * s).round(2),
            "perf_hi": (pts["perf_hi"] * s).round(2),
            result.x_col: pts[result.x_col],
            "x_lo": pts["cost_lo" if result.unit == "USD" else "latency_lo"],
            "x_hi": pts["cost_hi" if result.unit == "USD" else "latency_hi"],
            "n_tasks": pts["n_tasks"],
            "n_cost_tasks": pts["n_cost_tasks"],
            "has_cost": pts["has_cost"],
            "on_frontier": pts["on_frontier"],
            "on_hull": pts["on_hull"],
            "is_repriced": pts["is_repriced"],
            "is_few_tasks": pts.get("is_few_tasks", False),
            "p_frontier": _odds(result, "p_frontier", pts["run_id"]),
            "p_best": _odds(result, "p_best", pts["run_id"]),
            "open": [run_url(r) for r in pts["run_id"]],
        }
    )
    return out.reset_index(drop=True)


def _odds(result: TmfResult, name: str, run_ids: pd.Series) -> list[float | None]:
    """Per run, its share of bootstrap replicates (None for humans or without a bootstrap)."""
    unc = result.uncertainty
    table = {} if unc is None else getattr(unc, name)
    return [table.get(str(r), 0.0 if unc is not None else None) if unc is not None else None for r in run_ids]


def comparison_caption(result: TmfResult) -> str:
    """Which task set the chart compares, which runs are left out, and the bootstrap behind the odds."""
    a = result.assumptions
    other = a.get("runs_on_other_tasks") or []
    text = f"Compared on the {a.get('comparison_set_size', 0)} tasks most runs share"
    text += (
        f"; {len(other)} run(s) on other tasks are left out (the IRT Progress page compares across pools)"
        if other
        else ""
    )
    unc = result.uncertainty
    if unc is not None:
        text += (
            f". Odds from {unc.n_replicates} seeded paired task-bootstrap replicates over {unc.n_tasks} tasks "
            "(the human curve held at its estimate)"
        )
    return text + "."


def stage_table(results: Sequence[TmfResult]) -> pd.DataFrame:
    """One row per slice: stage, value per task, best saving, human cost and performance, frontier."""
    return pd.DataFrame(
        [
            {
                "slice": r.slice_name,
                "stage": None if r.value is None else r.value.stage,
                "p_stage": None
                if r.value is None or r.uncertainty is None
                else r.uncertainty.stage_probability[str(r.value.stage)],
                "value_per_task": None if r.value is None else r.value.area,
                "best_saving": None if r.value is None else r.value.best_saving,
                "human_x": None if r.human is None else r.human.x,
                "human_performance": None if r.human is None else r.human.performance,
                "frontier": ", ".join(r.frontier),
            }
            for r in results
        ]
    )


def page_export(result: TmfResult, fig: go.Figure, benchmark: str) -> str:
    """A standalone HTML page (chart, words, assumptions, runs) for slides."""
    from analytics.export import page_html

    table = points_table(result).drop(columns=["open"])
    assumptions = "\n".join(f"{k}: {v}" for k, v in result.assumptions.items())
    return page_html(
        f"Tech-Market-Fit: {benchmark}",
        [("", headline(result)), ("", fig), ("Assumptions", assumptions), ("Runs", table.to_string(index=False))],
        note=f"Runlens export, {dt.date.today().isoformat()}",
    )

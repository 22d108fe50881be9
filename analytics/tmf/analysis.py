"""Orchestration: one TMF analysis of a slice, its paired task bootstrap, the slices side by side and the periods over time."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypedDict

import numpy as np
import pandas as pd
from typing_extensions import Unpack

from analytics import compare
from analytics.runs import comparable_runs_of
from analytics.tmf.bootstrap import Replicates, Uncertainty, replicates, uncertainty
from analytics.tmf.codes import (
    CODE_COLUMNS,
    coded_rows,
    factorize_codes,
    first_rows,
    ids_in,
    last_rows,
    rows_where,
    run_is_agent,
    run_values_at,
)
from analytics.tmf.load import TmfInputs
from analytics.tmf.model import (
    AXES,
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
    run_points,
    slice_tasks,
    upper_hull,
    value_and_stage,
)


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
class TmfOptions:
    """The user's choices (all have defaults). ``MARKET_OPTIONS`` are the human's and the market's: only
    ``finish`` reads them."""

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
    include_incomplete: bool = False  # incomplete runs are points (the leaderboard's "rank incomplete runs")

    def supply_side(self) -> TmfOptions:
        """These options with the human and market ones at their defaults: all that ``prepare`` reads, so that
        a prepared analysis cached by them serves every hourly rate, human figure, willingness and exponent."""
        return dataclasses.replace(self, **{name: getattr(_DEFAULT_OPTIONS, name) for name in MARKET_OPTIONS})


MARKET_OPTIONS = ("hourly_usd", "human_minutes", "human_performance", "willingness", "exponent")
_DEFAULT_OPTIONS = TmfOptions()


@dataclass(frozen=True)
class Supply:
    """One slice's analysis up to the human and the market (``prepare``): the runs' points, frontier, hull and the
    bootstrap's replicates, which no hourly rate, human figure, willingness or exponent changes. ``finish`` adds
    the human, the acceptance curve, the value, the stage and the bootstrap's shares.

    Attributes:
        points: every run of the analysis (humans too) with has_cost / on_frontier / on_hull.
        frontier, hull: their rows by increasing x, then performance, then run id.
        human_tasks: the tasks the human is costed on (one row per task, ``human_minutes``).
        p0: the acceptance curve's performance floor (0 for rates, the lowest ability shown for IRT).
        facts: the comparison set's entries of ``TmfResult.assumptions``.
        replicates: the bootstrap's replicates (None: no bootstrap, or ``pending``).
        pending: the agent rows, current prices and run details of a bootstrap that waits for a human time (the data times no
            task, so only a ``human_minutes`` input gives a value to bootstrap): made in ``finish``.
    """

    points: pd.DataFrame
    frontier: pd.DataFrame
    hull: pd.DataFrame
    human_tasks: pd.DataFrame
    x_col: str
    unit: str
    performance: str
    slice_name: str
    p0: float
    facts: dict[str, Any]
    replicates: Replicates | None = None
    pending: tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None] | None = None


class PrepareArgs(TypedDict, total=False):
    """The keywords of ``prepare`` (its signature holds their defaults), which ``analyse`` passes on as they are
    (tests/test_tmf.py checks that the two lists are the same)."""

    slice_name: str
    options: TmfOptions | None
    as_of: dt.date | None
    points: pd.DataFrame | None
    with_uncertainty: bool
    sliced: SliceRows | None


def analyse(inputs: TmfInputs, **kwargs: Unpack[PrepareArgs]) -> TmfResult:
    """Points, frontier, hull, human, acceptance, value and stage for one slice (runs up to ``as_of``):
    ``finish(prepare(inputs, **kwargs), options)``.

    Only runs in the slice's ranked comparison set (``compare.comparison_sets`` over the agent runs up to ``as_of``)
    are analysed, on its common tasks; the others are listed in ``assumptions["runs_on_other_tasks"]``. With ``with_uncertainty`` a
    paired task bootstrap (``bootstrap_tmf``) gives the stage probabilities, p_frontier and p_best. ``sliced`` is
    ``slice_rows(inputs, slice_name)`` when the caller analyses the slice more than once (``by_period``).
    """
    return finish(prepare(inputs, **kwargs), kwargs.get("options"))


def prepare(
    inputs: TmfInputs,
    *,
    slice_name: str = "all",
    options: TmfOptions | None = None,
    as_of: dt.date | None = None,
    points: pd.DataFrame | None = None,
    with_uncertainty: bool = True,
    sliced: SliceRows | None = None,
) -> Supply:
    """The part of ``analyse`` that no human or market option changes (it reads ``options.supply_side()``)."""
    opt = (options or TmfOptions()).supply_side()
    if opt.axis not in AXES:
        raise TmfError(f"axis {opt.axis!r}: expected cost or latency")
    x_col, unit = AXES[opt.axis]
    sliced = sliced or slice_rows(inputs, slice_name)
    rows, baselines, runs = sliced.rows, sliced.baselines, inputs.runs
    if points is None:
        points = run_points(
            rows,
            performance=opt.performance,
            cost_source=opt.cost_source,
            is_repriced=opt.is_repriced,
            abilities=inputs.abilities,
            seed=opt.seed,
            n_boot=opt.n_boot,
            runs=runs,
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
            rows[ids_in(rows, "run_id", keep)],
            performance=opt.performance,
            cost_source=opt.cost_source,
            is_repriced=opt.is_repriced,
            abilities=inputs.abilities,
            seed=opt.seed,
            n_boot=opt.n_boot,
            runs=runs,
        ).set_index("run_id")
        points = points.set_index("run_id")
        changed = points.index.isin(trimmed.index)
        points.loc[changed, trimmed.columns.intersection(points.columns)] = trimmed.loc[points.index[changed]]
        points = points.reset_index()
    is_agent = (points["kind"] != "human").to_numpy()
    other = sorted(map(str, points.loc[is_agent & ~points["run_id"].isin(keep), "run_id"]))
    points = points[~is_agent | points["run_id"].isin(keep).to_numpy()]
    points = points.assign(is_few_tasks=points["n_tasks"].to_numpy() < MIN_TASKS)
    table = sliced.table if sliced.table is not None else slice_tasks(inputs.task_table, slice_name)
    if cset and len(cset) == len(sliced.matrix.tasks) and sliced.table is not None:  # every task of the matrix
        table = table[sliced.table_in_matrix]
    elif cset:  # the human is costed on the tasks the agents are compared on
        table = table[table["task_id"].astype(str).isin(cset)]
    facts = dict(
        comparison_set_size=len(cset),
        runs_on_other_tasks=other,
        baseline_runs=baselines,
        superseded_runs=list(inputs.superseded),
        incomplete_runs=list(inputs.incomplete),
        incomplete_included=inputs.included_incomplete,
        min_tasks=MIN_TASKS,
    )
    supply = _supply(table, points, opt, x_col, unit, slice_name, facts)
    if not with_uncertainty or opt.performance == "irt" or opt.n_replicates <= 0:
        return supply
    cur = current_prices(rows, runs).set_index("run_id") if opt.is_repriced else None
    agent_rows = rows_where(rows, ids_in(rows, "run_id", keep))
    humans = supply.points[supply.points["kind"] == "human"]
    is_timed = table["human_minutes"].notna().any() or (
        opt.axis == "latency" and humans["latency_per_task_s"].notna().any()
    )
    if not is_timed:  # no value without a human time: bootstrap once one is given
        boot_rows = agent_rows[[c for c in _BOOT_COLUMNS if c in agent_rows]]
        return dataclasses.replace(supply, pending=(boot_rows, cur, runs))
    return dataclasses.replace(supply, replicates=_replicates(agent_rows, supply.points, opt, slice_name, cur, runs))


_BOOT_COLUMNS = [  # what ``bootstrap.replicates`` reads of the rows (``row_costs`` included)
    "run_id",
    "task_id",
    "c",
    "n",
    "score",
    "latency_s",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "run_code",  # the run details' row when the rows do not hold them (``TmfInputs.runs``)
]


def _replicates(
    rows: pd.DataFrame,
    points: pd.DataFrame,
    opt: TmfOptions,
    slice_name: str,
    cur: pd.DataFrame | None,
    runs: pd.DataFrame | None = None,
) -> Replicates | None:
    return replicates(
        rows,
        points,
        cost_source=opt.cost_source,
        axis=opt.axis,
        performance=opt.performance,
        supply=opt.supply,
        seed=opt.seed,
        n_replicates=opt.n_replicates,
        slice_name=slice_name,
        cur=cur,
        runs=runs,
    )


def finish(supply: Supply, options: TmfOptions | None = None) -> TmfResult:
    """``supply`` under the human and market options of ``options`` (its other options must be those ``supply``
    was prepared with): human, acceptance curve, value, stage and the bootstrap's shares."""
    opt = options or TmfOptions()
    human = human_baseline(
        supply.human_tasks,
        supply.points,
        axis=opt.axis,
        hourly_usd=opt.hourly_usd,
        human_minutes=opt.human_minutes,
        human_performance=opt.human_performance,
        default_performance=None if opt.performance == "irt" else DEFAULT_HUMAN_PERFORMANCE,
    )
    p0 = supply.p0
    acceptance = value = None
    if human.x is not None and math.isfinite(human.performance) and human.performance > p0:
        acceptance = Acceptance(human.x, human.performance, p0, opt.willingness, opt.exponent)
        value = value_and_stage(supply.frontier, acceptance, x_col=supply.x_col, supply=opt.supply, hull=supply.hull)
    assumptions = _assumptions(opt, human, supply.unit, supply.points, p0)
    assumptions.update(supply.facts)
    result = TmfResult(
        supply.points,
        tuple(supply.frontier["run_id"]),
        tuple(supply.hull["run_id"]),
        human,
        acceptance,
        value,
        supply.x_col,
        supply.unit,
        supply.performance,
        supply.slice_name,
        assumptions,
    )
    if value is None or acceptance is None:
        return result
    rep = supply.replicates
    if supply.pending is not None:
        boot_rows, cur, runs = supply.pending
        rep = _replicates(boot_rows, supply.points, opt, supply.slice_name, cur, runs)
    return result if rep is None else dataclasses.replace(result, uncertainty=uncertainty(rep, acceptance))


def drop_baselines(rows: pd.DataFrame, runs: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` without baseline-marked runs (``compare.is_rankable``, as on the leaderboard), and their ids
    (``runs``: the run details when ``rows`` has only their ``run_code``)."""
    if rows.empty or ("is_baseline" not in rows and (runs is None or "is_baseline" not in runs)):
        return rows, []
    if "is_baseline" in rows:
        flag = rows["is_baseline"].fillna(False).astype(bool).to_numpy()
    else:  # one flag per run, taken by each row
        assert runs is not None
        flag = runs["is_baseline"].fillna(False).astype(bool).to_numpy()[rows["run_code"].to_numpy()]
    return rows_where(rows, ~flag), sorted(map(str, pd.unique(rows["run_id"].to_numpy()[flag])))


@dataclass(frozen=True)
class SliceRows:
    """A slice's rows without baseline-marked runs (``drop_baselines``) and which agent run has which task, made
    once for every analysis of the slice (the periods of ``by_period``).

    Attributes:
        rows: the slice's rows (humans too), baseline-marked runs left out.
        table: the slice's tasks (``TmfInputs.task_table``; None: not made).
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
    table: pd.DataFrame | None = None

    @cached_property
    def table_in_matrix(self) -> np.ndarray:
        """Per row of ``table``: its task is one of the matrix's (the human's tasks when the comparison set holds
        every task of the matrix, found once for every period instead of once per period)."""
        assert self.table is not None
        return self.table["task_id"].astype(str).isin(set(self.matrix.tasks)).to_numpy(dtype=bool)

    def outside(self, runs: set[str], tasks: frozenset[str]) -> np.ndarray:
        """Per row of ``rows``: a row of one of ``runs`` on a task not in ``tasks`` (one lookup per run and per
        task, none per row). ``tasks`` are some of the matrix's (a comparison set of its runs)."""
        if len(tasks) == len(self.matrix.tasks):  # every task of the matrix: no row is outside
            return np.zeros(len(self.row_run), dtype=bool)
        run_in = np.array([r in runs for r in self.matrix.runs] + [False])  # the last entry: human rows (-1)
        task_out = np.append(~pd.Index(self.matrix.tasks).isin(list(tasks)), False)
        return run_in[self.row_run] & task_out[self.row_task]


def slice_rows(inputs: TmfInputs, slice_name: str = "all") -> SliceRows:
    """The ``SliceRows`` of one slice of ``inputs``."""
    rows, baselines = drop_baselines(inputs.slice(slice_name), inputs.runs)
    matrix, kinds, row_run, row_task = _agent_matrix(rows, inputs.runs)
    table = slice_tasks(inputs.task_table, slice_name)
    return SliceRows(rows, baselines, matrix, kinds, row_run, row_task, table)


def _agent_matrix(
    rows: pd.DataFrame, runs: pd.DataFrame | None = None
) -> tuple[compare.TaskMatrix, dict[str, object], np.ndarray, np.ndarray]:
    """The agent runs x tasks of ``rows`` (ids as text: ``str`` of each distinct id, one hash per row), each
    agent run's kind (its last row's), and per row its run's row and its task's column (-1 for human rows)."""
    is_agent = run_is_agent(rows, runs)
    agent_rows = None if is_agent.all() else np.flatnonzero(is_agent)
    r_codes, r_uniq = _factorize(rows, "run_id", agent_rows)
    t_codes, t_uniq = _factorize(rows, "task_id", agent_rows)
    r_names, t_names = [str(r) for r in r_uniq], [str(t) for t in t_uniq]
    if len(set(r_names)) < len(r_names):  # ids that differ only by type (1 and "1") are one id as text
        r_codes, r_uniq = pd.factorize(_agent_ids(rows, "run_id", agent_rows).astype(str), use_na_sentinel=False)
        r_names = [str(r) for r in r_uniq]
    if len(set(t_names)) < len(t_names):
        t_codes, t_uniq = pd.factorize(_agent_ids(rows, "task_id", agent_rows).astype(str), use_na_sentinel=False)
        t_names = [str(t) for t in t_uniq]
    held = np.zeros((len(r_names), len(t_names)), dtype=bool)
    held[r_codes, t_codes] = True
    last = last_rows(r_codes)
    last_kinds = run_values_at(rows, "kind", runs, last if agent_rows is None else agent_rows[last])
    kinds = dict(zip(r_names, last_kinds.astype(object).tolist(), strict=True))
    row_run, row_task = np.full(len(rows), -1, dtype=np.int64), np.full(len(rows), -1, dtype=np.int64)
    row_run[is_agent], row_task[is_agent] = r_codes, t_codes
    return compare.TaskMatrix(tuple(r_names), np.array(t_names, dtype=object), held), kinds, row_run, row_task


def _agent_ids(rows: pd.DataFrame, id_col: str, agent_rows: np.ndarray | None) -> np.ndarray:
    """``rows[id_col]`` as objects at ``agent_rows`` (every row when None)."""
    ids = rows[id_col].to_numpy(dtype=object)
    return ids if agent_rows is None else ids[agent_rows]


def _factorize(rows: pd.DataFrame, id_col: str, agent_rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(ids, use_na_sentinel=False)`` of ``ids``, ``rows[id_col]`` at ``agent_rows`` (every row when
    None): from the rows' integer code when they have one (``codes.CODE_COLUMNS``: one id per code, so the same
    codes and ids), taking the ids of the codes' first rows only (not a copy of 867k ids at 10M attempts)."""
    code_col = CODE_COLUMNS[id_col]
    if code_col not in rows:
        return pd.factorize(_agent_ids(rows, id_col, agent_rows), use_na_sentinel=False)
    if agent_rows is None:
        codes, first = coded_rows(rows, code_col)
        return codes, rows[id_col].to_numpy(dtype=object)[first]
    codes = factorize_codes(rows[code_col].to_numpy()[agent_rows])
    return codes, rows[id_col].to_numpy(dtype=object)[agent_rows[first_rows(codes)]]


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
    """Resample the comparison set's tasks (one seeded draw for all runs) and redo frontier, value and stage
    (``bootstrap.replicates``, then ``bootstrap.uncertainty``).

    The human side (cost per task, performance, acceptance curve) is held at its estimate: the replicates
    measure how much the agents' points move with the task sample.
    """
    if result.acceptance is None:
        return None
    rep = _replicates(rows, result.points, opt, result.slice_name, cur)
    return None if rep is None else uncertainty(rep, result.acceptance)


def _supply(
    tasks: pd.DataFrame,
    points: pd.DataFrame,
    opt: TmfOptions,
    x_col: str,
    unit: str,
    slice_name: str,
    facts: dict[str, Any],
) -> Supply:
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
    p0 = 0.0 if opt.performance != "irt" else float(np.nanmin(y)) if np.isfinite(y).any() else 0.0
    human_tasks = tasks.drop_duplicates("task_id")[["task_id", "human_minutes"]]
    return Supply(pts, frontier, hull, human_tasks, x_col, unit, opt.performance, slice_name, p0, facts)


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
    return [(label, finish(supply, options)) for label, supply in prepare_periods(inputs, slice_name, options, freq)]


def prepare_periods(
    inputs: TmfInputs,
    slice_name: str = "all",
    options: TmfOptions | None = None,
    freq: str = "quarter",
    *,
    sliced: SliceRows | None = None,
) -> list[tuple[str, Supply]]:
    """``prepare`` of ``by_period``'s analyses (``sliced``: ``slice_rows(inputs, slice_name)`` when the caller
    has it already)."""
    if freq not in PERIODS:
        raise TmfError(f"period {freq!r}: expected one of {', '.join(PERIODS)}")
    opt = (options or TmfOptions()).supply_side()
    tasks = inputs.slice(slice_name)
    sliced = sliced or slice_rows(inputs, slice_name)
    points = run_points(
        tasks,
        performance=opt.performance,
        cost_source=opt.cost_source,
        is_repriced=opt.is_repriced,
        abilities=inputs.abilities,
        seed=opt.seed,
        n_boot=opt.n_boot,
        runs=inputs.runs,
    )
    dates = pd.to_datetime(points.loc[points["kind"] != "human", "eval_date"]).dropna()
    periods = sorted(dates.dt.to_period(PERIODS[freq]).unique())
    return [
        (
            str(per),
            prepare(
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


def analyse_slices(
    inputs: TmfInputs, *, kind: str = "level", options: TmfOptions | None = None, as_of: dt.date | None = None
) -> tuple[TmfResult, ...]:
    """The analysis of every ``level`` (or ``category``) slice of ``inputs``."""
    return finish_slices(prepare_slices(inputs, kind=kind, options=options, as_of=as_of), options)


def prepare_slices(
    inputs: TmfInputs, *, kind: str = "level", options: TmfOptions | None = None, as_of: dt.date | None = None
) -> tuple[Supply, ...]:
    """``prepare`` of ``analyse_slices``'s analyses."""
    return tuple(prepare(inputs, slice_name=name, options=options, as_of=as_of) for name in inputs.slice_names(kind))


def finish_slices(supplies: tuple[Supply, ...], options: TmfOptions | None = None) -> tuple[TmfResult, ...]:
    """``finish`` of every slice."""
    return tuple(finish(supply, options) for supply in supplies)


def period_end(label: str, freq: str) -> dt.date:
    """Last day of a period label such as ``2025Q3`` (quarter), ``2025-07`` (month) or ``2025`` (year)."""
    return pd.Period(label, freq=PERIODS[freq]).end_time.date()

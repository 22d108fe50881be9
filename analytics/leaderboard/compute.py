"""leaderboard: Pass@k, pass^k, mean score, steps and cost per run, with 95% intervals and ties.

Definitions (also in the README):
    * Pass@k: the unbiased estimator of Chen et al. (2021), averaged over tasks; k in 1, 2, 3, 5, 10, 20, 50,
      100, ... up to the smallest number of samples any task of the run has (``k_max``).
    * pass^k: the probability that k samples of a task all succeed, ``C(c,k)/C(n,k)``, averaged over tasks.
    * Intervals: Wilson over tasks for rates (Pass@1: with the task-clustered effective size); mean score:
      ``compare.score_interval`` (clustered Wilson with Student's t); a seeded percentile bootstrap over tasks for
      mean steps (tool calls per attempt) and mean cost per task.
    * Verdicts: the ranked runs of a slice (its ranked comparison set, ``compare.comparison_sets``) are tested
      against the data-chosen leader by a selection-aware max-gap permutation test (``compare.max_gap_test``);
      ``is_tied`` rows and the leader form the ``top_group``. Rows shown apart (humans, baselines, other task pools)
      get their own paired tests, Holm-adjusted among themselves. Human rows are never ranked and never lead.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import compare, scorers, stats
from analytics import formatting as fmt
from analytics.sqlfiles import load_sql
from store import query_df, query_rows, run_filter_params

SLICE_KINDS = ("all", "level", "category")


def runs_in(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    run_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The runs that match the filters (run_id, agent, agent_version, family, kind, eval_date, is_baseline, and
    log_status, completed, total, is_complete), newest first; ``is_baseline`` is ``compare.IS_BASELINE_SQL``.
    A run an eval set's retry superseded is left out. ``is_complete``: the log's status is a finished one (or
    unknown: not an Inspect log) and it holds every sample it counts (``total``)."""
    sql = load_sql("leaderboard_runs").replace("$is_baseline", compare.IS_BASELINE_SQL)
    runs = query_df(con, sql, run_filter_params(benchmark, agents, date_from, date_to, run_ids=run_ids))
    counted = runs["run_id"][runs["total"].notna()].astype(str).tolist()  # logs that say how many samples they hold
    held_n = dict(query_rows(con, load_sql("run_attempt_counts"), {"run_ids": counted})) if counted else {}
    status_ok = runs["log_status"].isna() | runs["log_status"].isin(COMPLETE_STATUSES)
    held = runs["total"].isna() | (runs["run_id"].map(held_n).fillna(0) >= runs["total"])
    return runs.assign(is_complete=(status_ok & held).astype(bool))


COMPLETE_STATUSES = ("success", "completed")  # a log's status when it finished (Inspect: success)


def task_outcomes(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    run_ids: Sequence[str] | None = None,
    runs: pd.DataFrame | None = None,
    exclude_errored: bool = False,
    scorer: str | None = None,
    threshold: float | None = None,
) -> pd.DataFrame:
    """One row per (run, task), ordered by run and task: samples, successes, mean score, tool calls, cost, and
    the task's level and category. ``scorer`` reads that scorer's values (``analytics.scorers``; ``threshold``
    is its pass mark, None for no pass rate) instead of the headline score.

    The aggregation happens in DuckDB, so only runs x tasks rows reach pandas; the task's level and category are
    read once per task and attached here (cheaper than one text value per row from the database). ``runs`` is
    the result of ``runs_in`` for the same filters, when the caller has it already. ``exclude_errored`` leaves
    errored attempts (status ``crashed``) out, as Inspect's accuracy does; by default they count as failures.
    """
    if runs is None:
        runs = runs_in(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to, run_ids=run_ids)
    params = {"run_ids": runs["run_id"].astype(str).tolist(), "exclude_errored": bool(exclude_errored)}
    if scorer is not None:
        ids = params["run_ids"]
        out = scorers.scorer_outcomes(
            con, run_ids=ids, scorer=scorer, threshold=threshold, exclude_errored=bool(exclude_errored)
        )
    else:
        out = query_df(con, load_sql("task_outcomes"), params)
    tasks = query_df(con, "SELECT task_id, level, category FROM tasks WHERE benchmark = ?", [benchmark])
    at = pd.Index(tasks["task_id"]).get_indexer(out["task_id"])
    for col in ("level", "category"):
        values = tasks[col].to_numpy(dtype=object)
        out[col] = np.where(at >= 0, values[np.maximum(at, 0)] if len(values) else None, None)
    return out


def _slice_groups(
    run_pos: np.ndarray, outcomes: pd.DataFrame, kinds: Sequence[str]
) -> list[tuple[int, np.ndarray, list[tuple[str, np.ndarray]]]]:
    """Per run with outcomes (``run_pos`` sorted): its position, all its rows, and its slices in display order
    as ``(name, row indices into outcomes)``."""
    by_run = np.split(np.arange(len(run_pos)), np.flatnonzero(np.diff(run_pos)) + 1) if len(run_pos) else []
    groups = [(int(run_pos[rows[0]]), rows, [("all", rows)] if "all" in kinds else []) for rows in by_run]
    for kind in ("level", "category"):
        if kind not in kinds:
            continue
        values = outcomes[kind].to_numpy(dtype=object)
        has = pd.notna(values)
        names = sorted({str(v) for v in values[has]})
        codes = np.full(len(values), -1)
        codes[has] = pd.Index(names).get_indexer(values[has].astype(str))
        for _, rows, run_slices in groups:
            part = codes[rows]
            for code in np.unique(part[part >= 0]):
                run_slices.append((f"{kind}={names[code]}", rows[part == code]))
    return groups


def _nanmean(x: np.ndarray) -> float:
    ok = np.isfinite(x)
    return float(x[ok].mean()) if ok.any() else float("nan")


def _run_rows(
    run: dict[str, Any],
    k_max: int,
    slices: list[tuple[str, np.ndarray]],
    arrays: dict[str, np.ndarray],
    rates: dict[str, dict[int, np.ndarray]],
) -> list[dict[str, Any]]:
    """The leaderboard rows of one run (bootstrap intervals are added later, for all runs at once)."""
    out = []
    for name, rows in slices:
        n_tasks = len(rows)
        ci: dict[str, list[float]] = {}
        pass_at: dict[str, float] = {}
        pass_hat: dict[str, float] = {}
        for k in k_values(k_max):
            p, h = _nanmean(rates["pass_at"][k][rows]), _nanmean(rates["pass_hat"][k][rows])
            pass_at[str(k)], pass_hat[str(k)] = p, h
            ci[f"pass@{k}"] = list(stats.wilson(p, n_tasks))
            ci[f"pass^{k}"] = list(stats.wilson(h, n_tasks))
        cost = arrays["cost_usd"][rows]
        has_cost = bool(np.isfinite(cost).any())
        out.append(
            {
                **run,
                "slice": name,
                "n_tasks": n_tasks,
                "n_attempts": int(arrays["n"][rows].sum()),
                "k_max": k_max,
                "pass_at": pass_at,
                "pass_hat": pass_hat,
                "mean_score": _nanmean(arrays["score"][rows]),
                "ci95": ci,
                "mean_steps": _nanmean(arrays["steps"][rows]),
                "mean_cost_usd": _nanmean(cost) if has_cost else None,
            }
        )
    return out


BOOTSTRAPPED = (("mean_steps", "steps"), ("mean_cost_usd", "cost_usd"))  # mean score: compare.score_interval


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
        matrix = np.column_stack([arrays[col][indices[i]] for i in members for _, col in BOOTSTRAPPED])
        cis = stats.bootstrap_mean_cis(matrix, stats.stable_rng(seed, slice_name, str(size)), n_boot=n_boot)
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
) -> pd.DataFrame:
    """The leaderboard from ``runs_in`` and ``task_outcomes`` frames: one row per run and slice (``COLUMNS``).

    Pass@k and pass^k are computed once per (run, task) row for every k and averaged per slice; a clustered
    Wilson interval for Pass@1 and plain Wilson over tasks for the other rates; bootstrap intervals for all rows
    at once (see ``_add_bootstrap_cis``); then ranks and paired tests per slice by ``metric`` (``compare_rows``).
    """
    if metric not in compare.METRIC_BY_SCORING.values():
        raise ValueError(f"metric: expected pass@1 or mean_score, got {metric!r}")
    known = pd.Index(runs["run_id"]).get_indexer(outcomes["run_id"])
    part = outcomes[known >= 0]
    run_pos = known[known >= 0]
    order = np.argsort(run_pos, kind="stable")  # rows of one run together, in task order
    part, run_pos = part.iloc[order].reset_index(drop=True), run_pos[order]
    arrays = {col: part[col].to_numpy(dtype=float) for col in ("n", "c", "score", "steps", "cost_usd")}
    k_top = int(arrays["n"].max()) if len(part) else 0
    rates = {
        "pass_at": {k: stats.pass_at_k(arrays["n"], arrays["c"], k) for k in k_values(k_top)},
        "pass_hat": {k: stats.pass_hat_k(arrays["n"], arrays["c"], k) for k in k_values(k_top)},
    }
    if "is_baseline" not in runs:
        runs = runs.assign(is_baseline=False)
    for col, default in RUN_STATE_DEFAULTS.items():
        if col not in runs:
            runs = runs.assign(**{col: default})
    meta = runs[["run_id", "agent", "agent_version", "family", "kind", "eval_date", "is_baseline", *RUN_STATE_DEFAULTS]]
    meta = [{**m, "may_lead": bool(m["is_complete"]) or rank_incomplete} for m in meta.to_dict("records")]
    rows: list[dict[str, Any]] = []
    indices: list[np.ndarray] = []
    for pos, run_rows, run_slices in _slice_groups(run_pos, part, slices):
        k_max = int(arrays["n"][run_rows].min())  # Pass@k is defined up to the run's fewest samples per task
        rows += _run_rows(meta[pos], k_max, run_slices, arrays, rates)
        indices += [idx for _, idx in run_slices]
    _add_bootstrap_cis(rows, indices, arrays, seed=seed, n_boot=n_boot)
    per_task = {"pass@1": rates["pass_at"][1] if rates["pass_at"] else arrays["c"], "mean_score": arrays["score"]}
    _add_pass1_clustered_cis(rows, indices, per_task["pass@1"], arrays["n"], arrays["score"])
    tasks = part["task_id"].astype(str).to_numpy(dtype=object)
    compare_rows(rows, indices, tasks, per_task[metric], arrays["n"], metric=metric, seed=seed)
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


def leaderboard(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    slices: Sequence[str] = SLICE_KINDS,
    seed: int = 0,
    n_boot: int = 1000,
    exclude_errored: bool = False,
    scorer: str | None = None,
    rank_incomplete: bool = False,
) -> pd.DataFrame:
    """The leaderboard of one benchmark: one row per run and slice (``all``, ``level=L``, ``category=C``).

    Errored attempts (status ``crashed``) count as failures unless ``exclude_errored`` leaves them out, as
    Inspect's accuracy does. ``scorer`` ranks by that scorer (``analytics.scorers``; a name the benchmark lacks
    raises ``ScorerNotFoundError`` listing those it has) instead of the headline score; a scorer on its own scale
    (a 0-10 rating) is ranked by its raw mean and has no pass rate. An incomplete run (``runs_in``) is shown but
    never ranked, unless ``rank_incomplete``. Returns an empty frame (with the columns) when nothing matches.
    """
    runs = runs_in(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    scoring = benchmark_scoring(con, benchmark=benchmark)
    threshold: float | None = None
    if scorer is not None:
        scorer = scorers.check_scorer(con, benchmark=benchmark, scorer=scorer)
        scoring = scorers.scorer_scale(con, benchmark=benchmark, scorer=scorer)
        is_continuous = benchmark_scoring(con, benchmark=benchmark) == "continuous"  # else its 1.0 is for 0/1 values
        cut = benchmark_threshold(con, benchmark=benchmark) if is_continuous else 0.5
        threshold = {"binary": 1.0, "continuous": cut}.get(scoring)
    outcomes = task_outcomes(
        con, benchmark=benchmark, runs=runs, exclude_errored=exclude_errored, scorer=scorer, threshold=threshold
    )
    metric = compare.ranking_metric("continuous" if scoring == "raw" else scoring)
    out = leaderboard_rows(
        runs, outcomes, slices=slices, metric=metric, seed=seed, n_boot=n_boot, rank_incomplete=rank_incomplete
    )
    none = [None] * len(runs)
    results = dict(zip(runs["run_id"].astype(str), runs.get("inspect_results", none), strict=True))
    headline = dict(zip(runs["run_id"].astype(str), runs.get("headline_scorer", none), strict=True))
    out["inspect_metrics"] = pd.Series(  # for the score ranked: the chosen scorer, else each run's headline
        [scorers.inspect_metrics(results.get(str(r)), scorer or headline.get(str(r))) for r in out["run_id"]],
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


def benchmark_threshold(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> float:
    """The benchmark's pass threshold (0.5 when unknown)."""
    rows = query_df(con, "SELECT pass_threshold FROM benchmarks WHERE benchmark = ?", [benchmark])
    return 0.5 if rows.empty else float(rows["pass_threshold"].iloc[0])


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


def comparable_runs(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    kinds: Sequence[str] = ("all", "level"),
) -> pd.DataFrame:
    """Per run and slice, whether the run is in the slice's ranked comparison set (``compare.comparison_sets``).

    The same rule as the leaderboard's ``is_comparable`` (over the rankable runs: not human, not baseline), for
    views that need only the membership (coverage correlation). Columns: run_id, slice, is_comparable,
    comparison_set_size.
    """
    runs = runs_in(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    out = task_outcomes(con, benchmark=benchmark, runs=runs)
    rankable = {str(r.run_id) for r in runs.itertuples() if compare.is_rankable(r.kind, bool(r.is_baseline))}
    rows = []
    for kind in kinds:
        if kind == "all":
            groups = {"all": out}
        else:
            part = out.dropna(subset=[kind])
            groups = {f"{kind}={v}": g for v, g in part.groupby(kind, sort=True)}
        for name, g in groups.items():
            sets = {str(r): frozenset(t.astype(str)) for r, t in g.groupby("run_id", sort=False)["task_id"]}
            primary = compare.comparison_sets(sets, eligible=[r for r in sets if r in rankable]).primary
            members = primary.n_compared if primary is not None else {}
            size = len(primary.tasks) if primary is not None else 0
            rows += [(r, name, r in members, size) for r in sets]
    return pd.DataFrame(rows, columns=["run_id", "slice", "is_comparable", "comparison_set_size"])


def benchmark_scoring(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str | None:
    """The benchmark's scoring (``binary``, ``graded``, ``continuous``), None when unknown."""
    rows = query_df(con, "SELECT scoring FROM benchmarks WHERE benchmark = ?", [benchmark])
    return None if rows.empty else str(rows["scoring"].iloc[0])


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
# Added per slice by ``compare_rows``: the comparison against the slice's leader.
COMPARISON_COLUMNS = [
    "metric",
    "metric_value",
    "rank",
    "is_leader",
    "is_comparable",
    "comparison_set_size",
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
    "top_group",
]
# Further per-row columns (another report's fields) join by appending here and filling them in a step of
# ``leaderboard``; ``report`` and ``display_table`` read this list, nothing else needs to change.
COLUMNS = BASE_COLUMNS + COMPARISON_COLUMNS + ["is_pareto_optimal", "inspect_metrics", "scale"]


def _add_pass1_clustered_cis(
    rows: list[dict[str, Any]],
    indices: list[np.ndarray],
    pass1: np.ndarray,
    n: np.ndarray,
    score: np.ndarray | None = None,
) -> None:
    """Pass@1 interval of every row: Wilson with the task-clustered effective sample size; mean score interval:
    the same with Student's t (``compare.score_interval``, for small samples and zero-inflated scores). In place."""
    for row, idx in zip(rows, indices, strict=True):
        row["pass_at_1"] = row["pass_at"].get("1", float("nan"))
        if "pass@1" in row["ci95"]:
            row["ci95"]["pass@1"] = list(compare.wilson_clustered(pass1[idx], n[idx]))
        if score is not None:
            row["ci95"]["mean_score"] = list(compare.score_interval(score[idx]))


def _competition_ranks(values: np.ndarray) -> np.ndarray:
    """1 + the number of strictly better values; equal values (to 1e-12) share a rank, whatever the row order."""
    v = np.round(values, 12)
    return 1 + (v[None, :] > v[:, None]).sum(axis=1)


def compare_rows(
    rows: list[dict[str, Any]],
    indices: list[np.ndarray],
    tasks: np.ndarray,
    values: np.ndarray,
    n: np.ndarray,
    *,
    metric: str,
    seed: int = 0,
) -> None:
    """Comparison set, rank and paired test against the leader for every slice, in place.

    Args:
        rows: leaderboard rows (one per run and slice).
        indices: per row, its (run, task) positions into ``tasks`` / ``values`` / ``n``.
        tasks: task id per (run, task) position.
        values: the per-task value of the ranking metric (c/n for Pass@1, mean score otherwise).
        n: samples per (run, task) position (one binary sample per task -> exact McNemar).
        metric: ``pass@1`` or ``mean_score``.
        seed: seed of the sign flips and bootstrap draws.
    """
    by_slice: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_slice.setdefault(row["slice"], []).append(i)
    for members in by_slice.values():
        per_row = [dict(zip(tasks[indices[i]], values[indices[i]], strict=True)) for i in members]
        single = [bool((n[indices[i]] == 1).all()) and metric == "pass@1" for i in members]
        _compare_slice([rows[i] for i in members], per_row, single, metric=metric, seed=seed)


def _compare_slice(
    rows: list[dict[str, Any]], per_task: list[dict[str, float]], single: list[bool], *, metric: str, seed: int
) -> None:
    """Rank the rows of the slice's ranked comparison set and test every row against the leader (in place).

    The comparison sets are ``compare.comparison_sets`` over the rankable runs; members of the ranked set are ranked
    by the metric over the set's common tasks they have (``n_compared``), so a run on a superset is ranked on the
    common tasks, not its extra ones.
    """
    sets = [frozenset(t) for t in per_task]
    rankable = [
        i
        for i, r in enumerate(rows)
        if compare.is_rankable(r["kind"], bool(r["is_baseline"])) and r.get("may_lead", True)  # complete runs
    ]
    found = compare.comparison_sets(dict(enumerate(sets)), eligible=rankable)
    primary = found.primary
    core = primary.tasks if primary is not None else frozenset()
    members = {i for i in range(len(rows)) if primary is not None and i in primary.n_compared}
    point = np.array([r["pass_at_1"] if metric == "pass@1" else r["mean_score"] for r in rows], dtype=float)
    compared = [
        {t: v for t, v in per_task[i].items() if t in core} if i in members else per_task[i] for i in range(len(rows))
    ]
    for i in members:
        point[i] = _nanmean(np.fromiter(compared[i].values(), dtype=float, count=len(compared[i])))
    ranked = [i for i in sorted(members) if i in rankable and np.isfinite(point[i])]
    ranks = dict(zip(ranked, _competition_ranks(point[ranked]).tolist(), strict=True)) if ranked else {}
    leaders = sorted((i for i in ranked if ranks[i] == 1), key=lambda i: str(rows[i]["run_id"]))
    ref = leaders[0] if leaders else None
    for i, row in enumerate(rows):
        k = found.index_of(i)
        row.update(
            metric=metric,
            metric_value=float(point[i]),
            rank=ranks.get(i),
            is_leader=i in leaders,
            is_comparable=i in members,
            comparison_set_size=len(core),
            n_shared_with_leader=None if ref is None else len(sets[i] & sets[ref]),
            n_compared=primary.n_compared.get(i) if primary is not None else None,
            comparison_set_index=k,
            own_set_size=None if k is None else len(found.sets[k - 1].tasks),
            excluded_reason=found.excluded.get(i),
            **dict.fromkeys(TEST_COLUMNS),
        )
        row["top_group"] = False
    if ref is not None:
        tag = str(rows[ref]["slice"])
        _test_ranked(rows, compared, single, ranked, ref, seed=seed, tag=tag)
        apart = [i for i in range(len(rows)) if i not in ranked]
        _test_apart(rows, per_task, single, apart, ref, seed=seed)  # on every task shared with the leader


# Filled by the tests against the leader (None where there is no test).
TEST_COLUMNS = (
    "diff_vs_leader",
    "diff_vs_leader_ci95",
    "p_raw_vs_leader",
    "p_vs_leader",
    "test_method",
    "is_tied",
    "p_method",
    "mde80",
)
RANKED_P_METHOD = "max-gap permutation, step-down (leader chosen by the data)"
APART_P_METHOD = "Holm among the rows shown apart"


def _shared_diffs(mine: dict[str, float], theirs: dict[str, float]) -> tuple[tuple[str, ...], np.ndarray]:
    """The tasks both have a finite value for (sorted) and ``mine - theirs`` on them."""
    shared = tuple(
        sorted(t for t in mine.keys() & theirs.keys() if math.isfinite(mine[t]) and math.isfinite(theirs[t]))
    )
    return shared, np.fromiter((mine[t] - theirs[t] for t in shared), dtype=float, count=len(shared))


def _paired(
    rows: list[dict[str, Any]],
    per_task: list[dict[str, float]],
    single: list[bool],
    which: list[int],
    ref: int,
    *,
    seed: int,
) -> list[tuple[int, compare.PairedTest, np.ndarray]]:
    """The leaderboard's paired test (``compare.paired_tests``) of each row of ``which`` against ``ref``."""
    groups: dict[tuple[str, ...], list[int]] = {}
    diffs: dict[int, np.ndarray] = {}
    for i in which:
        shared, d = _shared_diffs(per_task[i], per_task[ref])
        if shared:
            groups.setdefault(shared, []).append(i)
            diffs[i] = d
    tested: list[tuple[int, compare.PairedTest, np.ndarray]] = []
    for members in groups.values():
        d = np.column_stack([diffs[i] for i in members])
        flags = [single[i] and single[ref] for i in members]
        tests = compare.paired_tests(d, is_binary_single=flags, seed=seed)
        tested += [(i, t, diffs[i]) for i, t in zip(members, tests, strict=True)]
    return tested


def _set_test(row: dict[str, Any], test: compare.PairedTest, p_adj: float, method: str, mde: float) -> None:
    """Write one row's test; ``mde80`` stays None when no gap within the metric's range (0 to 1) would be found
    with 80% power (too few shared tasks)."""
    mde = mde if mde <= 1.0 else float("nan")
    row.update(
        diff_vs_leader=test.diff,
        diff_vs_leader_ci95=list(test.ci95),
        p_raw_vs_leader=test.p_value,
        p_vs_leader=float(p_adj),
        test_method=test.method,
        is_tied=bool(p_adj >= compare.ALPHA),
        p_method=method,
        mde80=None if not np.isfinite(mde) else float(mde),
    )


def _test_ranked(
    rows: list[dict[str, Any]],
    compared: list[dict[str, float]],
    single: list[bool],
    ranked: list[int],
    ref: int,
    *,
    seed: int,
    tag: str,
) -> None:
    """The ranked rows against the leader: the paired test's difference, interval and raw p per row, and the
    selection-aware verdict (``compare.max_gap_test`` over the ranked rows only) as ``p_vs_leader``.

    ``mde80``: the smallest gap to the leader marked behind with 80% power, the test's critical gap plus
    ``z_0.8`` standard errors of the row's paired difference (for the leader: the median of the others').
    """
    rows[ref]["top_group"] = True
    others = [i for i in ranked if i != ref]
    if not others:
        return
    tasks = sorted(set().union(*(compared[i].keys() for i in ranked)))
    x = np.array([[compared[i].get(t, np.nan) for i in ranked] for t in tasks], dtype=float)
    rng = stats.stable_rng(seed, "max-gap", tag, str(len(tasks)), str(len(ranked)))
    sel = compare.max_gap_test(x, leader=ranked.index(ref), rng=rng)
    ses = []
    for i, test, d in _paired(rows, compared, single, others, ref, seed=seed):
        se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
        ses.append(se)
        p_adj = float(sel.p_adjusted[ranked.index(i)])
        _set_test(rows[i], test, p_adj, RANKED_P_METHOD, sel.critical_gap + compare.Z80 * se)
        rows[i]["top_group"] = bool(p_adj >= compare.ALPHA)
    finite = [se for se in ses if np.isfinite(se)]  # one-task comparisons have no standard error
    lead = sel.critical_gap + compare.Z80 * float(np.median(finite)) if finite else float("nan")
    rows[ref]["mde80"] = float(lead) if np.isfinite(lead) and lead <= 1.0 else None


def _test_apart(
    rows: list[dict[str, Any]],
    per_task: list[dict[str, float]],
    single: list[bool],
    apart: list[int],
    ref: int,
    *,
    seed: int,
) -> None:
    """Rows shown apart (humans, baselines, other task pools) against the leader on every task they share with
    it: their own family, Holm-adjusted among themselves; ``mde80`` two-sided at alpha over the family's size."""
    tested = _paired(rows, per_task, single, apart, ref, seed=seed)
    adjusted = compare.holm([t.p_value for _, t, _ in tested])
    for (i, test, d), p_adj in zip(tested, adjusted, strict=True):
        sd = float(np.sqrt(np.mean(d * d))) if d.size else float("nan")
        mde = compare.mde80_normal(sd, d.size, alpha=compare.ALPHA / max(1, len(tested)))
        _set_test(rows[i], test, float(p_adj), APART_P_METHOD, mde)


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """A flat, human-readable table of one slice (percentages, intervals as text), ranked rows first."""
    if df.empty:
        return pd.DataFrame()
    k_max = int(df["k_max"].max())
    by_score = str(df["metric"].iloc[0]) == "mean_score"
    rows = []
    for _, r in df.iterrows():
        row: dict[str, Any] = {
            "Rank": r["rank"],
            "vs leader": comparison_label(r),
            "p vs leader (adjusted)": fmt.p_value(r["p_vs_leader"]),
            "p method": r.get("p_method") or "",
            "Top group": bool(r.get("top_group")),
            "MDE80 (pp)": _pct(r.get("mde80")),
            "Compared on": r.get("n_compared"),
            "Agent": r["agent"],
            "Version": r["agent_version"] or "",
            "Kind": r["kind"],
            "Eval date": _date_text(r["eval_date"]),
            "Tasks": r["n_tasks"],
            "Shared with leader": r["n_shared_with_leader"],
            "Attempts": r["n_attempts"],
        }
        if by_score:
            row["Mean score %"] = _pct(r["mean_score"])
            row["Mean score 95% CI"] = _pct_ci(r["ci95"]["mean_score"])
        row["Δ vs leader (pp)"] = _pct(r["diff_vs_leader"])
        row["Δ 95% CI (pp)"] = _signed_ci(r["diff_vs_leader_ci95"])
        for k in k_values(k_max):
            row[f"Pass@{k} %"] = _pct(r["pass_at"].get(str(k)))
            row[f"Pass@{k} 95% CI"] = _pct_ci(r["ci95"].get(f"pass@{k}"))
        for k in k_values(k_max)[1:]:
            row[f"pass^{k} %"] = _pct(r["pass_hat"].get(str(k)))
        if not by_score:
            row["Mean score %"] = _pct(r["mean_score"])
            row["Mean score 95% CI"] = _pct_ci(r["ci95"]["mean_score"])
        row["Mean steps"] = round(r["mean_steps"], 2)
        row["Cost per task"] = fmt.usd(r["mean_cost_usd"])
        row["Cost-accuracy Pareto"] = {True: "✓ optimal", False: "dominated"}.get(r.get("is_pareto_optimal"), "")
        row["run_id"] = r["run_id"]
        rows.append(row)
    return pd.DataFrame(rows)


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns people read first, as text that fits a 1440-px screen: rank, run (agent · version · date), the
    ranking metric with its 95% interval, the paired difference to the leader with its interval and verdict,
    tasks, cost per task and the cost-accuracy Pareto flag (``display_table`` has every column)."""
    if df.empty:
        return pd.DataFrame()
    by_score = str(df["metric"].iloc[0]) == "mean_score"
    name, key = ("Mean score % [95% CI]", "mean_score") if by_score else ("Pass@1 % [95% CI]", "pass@1")
    is_raw = "scale" in df and str(df["scale"].iloc[0]) == "raw"  # a scorer on its own scale (a 0-10 rating)
    if is_raw:
        name = "Mean score (its own scale) [95% CI]"
    scale, digits = (1.0, 2) if is_raw else (100.0, 1)
    labels = unique_run_labels(df)
    rows = []
    for _, r in df.iterrows():
        verdict = comparison_label(r)
        if r["p_vs_leader"] is not None and not pd.isna(r["p_vs_leader"]):
            verdict += f" (p {fmt.p_value(r['p_vs_leader'])})"
        rows.append(
            {
                "Rank": fmt.count(r["rank"]) if r["rank"] is not None and not pd.isna(r["rank"]) else fmt.MISSING,
                "Run": labels[str(r["run_id"])],
                name: fmt.interval(r["metric_value"], r["ci95"].get(key), scale=scale, digits=digits),
                "Δ vs leader [95% CI]": fmt.signed_interval(
                    r["diff_vs_leader"], r["diff_vs_leader_ci95"], scale=scale, digits=digits
                ).removesuffix(" pp" if is_raw else "\0"),
                "vs leader": verdict,
                "Top group": "✓" if r.get("top_group") is True else "",
                "MDE80": f"{100 * float(r['mde80']):.1f} pp" if _is_number(r.get("mde80")) else fmt.MISSING,
                "Tasks": fmt.count(r["n_tasks"]),
                "Cost/task": fmt.usd(r["mean_cost_usd"]),
                "Pareto": {True: "✓ optimal", False: "dominated"}.get(r.get("is_pareto_optimal"), fmt.MISSING),
                "run_id": r["run_id"],
            }
        )
    return pd.DataFrame(rows)


def comparison_label(row: Mapping[str, Any]) -> str:
    """``leader``, ``tied``, ``behind``/``ahead`` (significant after Holm), or why the row is not tested."""
    if row["is_leader"] and row["p_vs_leader"] is None:
        return "leader"
    if row["is_tied"] is None:
        return "no shared tasks" if row["n_shared_with_leader"] is not None else "no leader"
    if row["is_tied"]:
        return "co-leader" if row["is_leader"] else "tied"
    return "behind" if (row["diff_vs_leader"] or 0.0) < 0 else "ahead"


def apart_reason(row: Mapping[str, Any]) -> str:
    """Why a row is shown apart from the ranking (empty for ranked rows)."""
    if row["kind"] == "human":
        return "human baseline"
    if row["is_baseline"]:
        return "baseline run"
    if not row.get("is_complete", True):
        return f"incomplete run ({incomplete_label(row)})"
    if not row["is_comparable"]:
        why = row.get("excluded_reason")
        if why and not str(why).startswith("evaluated on other tasks"):
            return str(why)
        return f"evaluated on other tasks: {row['n_shared_with_leader'] or 0} shared"
    return "" if row["rank"] is not None and not pd.isna(row["rank"]) else "no score"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and bool(np.isfinite(value))


def _date_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return ""
    return str(value)[:10]


def _pct(value: float | None) -> float | None:
    return None if value is None or not _is_number(value) else round(100.0 * float(value), 1)


def _signed_ci(ci: Sequence[float] | None) -> str:
    if not ci or not all(np.isfinite(v) for v in ci):
        return ""
    return f"{100 * ci[0]:+.1f} to {100 * ci[1]:+.1f}"


def _pct_ci(ci: Sequence[float] | None) -> str:
    if not ci or not all(np.isfinite(v) for v in ci):
        return ""
    return f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f}"


def report(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    seed: int = 0,
    exclude_errored: bool = False,
    scorer: str | None = None,
    rank_incomplete: bool = False,
) -> dict[str, Any]:
    """The JSON report of DESIGN.md / the foundation issue (``errored`` says how errored attempts counted,
    ``scorer`` which score ranked (null: the headline), ``scale`` its scale, ``incomplete`` whether incomplete
    runs were ranked)."""
    df = leaderboard(
        con,
        benchmark=benchmark,
        agents=agents,
        date_from=date_from,
        date_to=date_to,
        seed=seed,
        exclude_errored=exclude_errored,
        scorer=scorer,
        rank_incomplete=rank_incomplete,
    )
    if scorer is not None:
        scorer = scorers.check_scorer(con, benchmark=benchmark, scorer=scorer)
    rows = [{k: _jsonable(r[k]) for k in REPORT_KEYS} for _, r in df.iterrows()]
    sets = {str(name): comparison_set_entry(part) for name, part in df.groupby("slice", sort=False)}
    errored = "excluded" if exclude_errored else "failures"
    return {
        "benchmark": benchmark,
        "errored": errored,
        "comparison_sets": sets,
        "rows": rows,
        "scorer": scorer,
        "scale": str(df["scale"].iloc[0]) if not df.empty else None,
        "incomplete": "ranked" if rank_incomplete else "not ranked",
    }


def comparison_set_entry(part: pd.DataFrame) -> dict[str, Any]:
    """The JSON entry of one slice's comparison sets: the ranked set's size and metric, its runs (with the n each
    is compared on), every other run with the reason it is not ranked, and the other sets (own ranking apart)."""
    first = part.iloc[0]
    members = part[part["is_comparable"].astype(bool)]
    others: dict[int, list[str]] = {}
    sizes: dict[int, int] = {}
    for _, r in part.iterrows():
        k = r["comparison_set_index"]
        if k is not None and not pd.isna(k) and int(k) > 1:
            others.setdefault(int(k), []).append(str(r["run_id"]))
            sizes[int(k)] = int(r["own_set_size"])
    return {
        "n_tasks": int(first["comparison_set_size"]),
        "metric": first["metric"],
        "rule": COMPARISON_SET_RULE,
        "runs": [str(r) for r in members["run_id"]],
        "n_compared": {str(r["run_id"]): _jsonable(r["n_compared"]) for _, r in members.iterrows()},
        "excluded": [
            {"run_id": str(r["run_id"]), "reason": apart_reason(r)}
            for _, r in part[~part["is_comparable"].astype(bool)].iterrows()
        ],
        "other_sets": [{"n_tasks": sizes[k], "runs": runs} for k, runs in sorted(others.items())],
    }


COMPARISON_SET_RULE = (
    "a set's common tasks are those more than half of its runs have, and its runs every run with at least 80% of "
    "them, each compared on the common tasks it has; of the sets of two or more runs, the one comparing the most "
    "(run, task) pairs is ranked (then more runs, then more tasks)"
)


# The keys of each row of ``report`` (``python -m analytics leaderboard --json``); append new fields here.
REPORT_KEYS = [
    "run_id",
    "agent",
    "agent_version",
    "kind",
    "eval_date",
    "is_baseline",
    "slice",
    "n_tasks",
    "n_attempts",
    "pass_at",
    "pass_hat",
    "mean_score",
    "ci95",
    "mean_steps",
    "mean_cost_usd",
    *COMPARISON_COLUMNS,
    "is_pareto_optimal",
    *RUN_STATE_COLUMNS,
    "inspect_metrics",
]


def _jsonable(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:  # NaT is a Timestamp: before the date branch
        return None
    if isinstance(value, (dt.date, pd.Timestamp)):
        return value.isoformat()[:10]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def fig_pass_at_1(df: pd.DataFrame, *, title: str | None = None):  # -> go.Figure
    """Horizontal dot-and-whisker chart of the ranking metric per run (Pass@1 with its clustered Wilson interval,
    or mean score with its bootstrap interval); humans drawn apart; run ids in custom_data."""
    import plotly.graph_objects as go

    by_score = "metric" in df and not df.empty and str(df["metric"].iloc[0]) == "mean_score"
    value, ci_key, name = ("mean_score", "mean_score", "Mean score") if by_score else ("pass_at_1", "pass@1", "Pass@1")
    part = df.sort_values(value)
    full = unique_run_labels(part)
    fig = go.Figure()
    for is_human, group in part.groupby(part["kind"] == "human", sort=False):
        lo = np.array([c[ci_key][0] for c in group["ci95"]])
        hi = np.array([c[ci_key][1] for c in group["ci95"]])
        p = group[value].to_numpy(dtype=float)
        labels = [full[r] for r in group["run_id"]]
        fig.add_trace(
            go.Scatter(
                x=100 * p,
                y=labels,
                mode="markers",
                name="human baseline" if is_human else "agents",
                marker={
                    "size": 10,
                    "symbol": "diamond" if is_human else "circle",
                    "color": "#7f7f7f" if is_human else "#1f77b4",
                },
                error_x={"type": "data", "symmetric": False, "array": 100 * (hi - p), "arrayminus": 100 * (p - lo)},
                customdata=np.stack([group["run_id"], group["n_tasks"]], axis=1),
                hovertemplate="%{y}<br>" + name + " %{x:.1f}%<br>tasks %{customdata[1]}<br>run %{customdata[0]}"
                "<extra></extra>",
            )
        )
    fig.update_layout(
        title=title or f"{name} with its 95% interval",
        xaxis_title=f"{name} (%)",
        xaxis_range=[0, 100],
        height=120 + 28 * len(part),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def run_label(row: Mapping[str, Any]) -> str:
    """Agent, version (when it adds something) and evaluation date: one label per run, so runs of one agent
    never share a row or a point label."""
    return fmt.run_label(row["agent"], row.get("agent_version"), row.get("eval_date"))


def unique_run_labels(df: pd.DataFrame) -> dict[str, str]:
    """``run_label`` per run id, with the run id added where two runs would otherwise share a label (a chart
    row or point per run, never two runs drawn as one)."""
    labels = {str(r["run_id"]): run_label(r) for _, r in df.iterrows()}
    counts = pd.Series(list(labels.values())).value_counts()
    return {rid: f"{lab} · {rid}" if counts[lab] > 1 else lab for rid, lab in labels.items()}


def fig_cost_accuracy(df: pd.DataFrame):  # -> go.Figure
    """HAL's view: mean cost per task (x) against the ranking metric (y) of the ranked runs with a cost; the
    Pareto-optimal runs (``is_pareto_optimal``) joined by the frontier line and labelled, the dominated ones grey.
    Run ids in custom_data. A log x axis when costs span more than 20x (major ticks only)."""
    import plotly.graph_objects as go

    part = df[df["is_pareto_optimal"].notna()].copy()
    by_score = not part.empty and str(part["metric"].iloc[0]) == "mean_score"
    name = "Mean score" if by_score else "Pass@1"
    part["x"] = part["mean_cost_usd"].astype(float)
    part["y"] = 100 * part["metric_value"].astype(float)
    labels = unique_run_labels(part)
    part["label"] = [labels[str(r)] for r in part["run_id"]]
    fig = go.Figure()
    for is_optimal, group in part.groupby(part["is_pareto_optimal"].astype(bool), sort=True):
        group = group.sort_values("x")
        fig.add_trace(
            go.Scatter(
                x=group["x"],
                y=group["y"],
                mode="lines+markers+text" if is_optimal else "markers",
                line={"color": "#1f77b4", "width": 2, "shape": "hv"} if is_optimal else None,
                text=group["label"] if is_optimal else None,
                textposition="top left",
                name="Pareto frontier" if is_optimal else "dominated",
                marker={"size": 11 if is_optimal else 8, "color": "#1f77b4" if is_optimal else "#adb5bd"},
                customdata=np.stack([group["run_id"], group["label"], group["n_tasks"]], axis=1),
                hovertemplate="%{customdata[1]}<br>$%{x:.4f} per task<br>" + name + " %{y:.1f}%<br>"
                "tasks %{customdata[2]}<br>run %{customdata[0]}<extra></extra>",
            )
        )
    positive = part["x"][part["x"] > 0]
    is_log = len(positive) == len(part) and len(part) > 1 and positive.max() / positive.min() > 20
    fig.update_layout(
        title=f"Cost vs {name}: the Pareto frontier (HAL)",
        xaxis={
            "title": "Mean cost per task (USD)",
            "type": "log" if is_log else "linear",
            "dtick": 1 if is_log else None,
        },
        yaxis_title=f"{name} (%)",
        height=480,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def slice_pivot(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Pass@1 (%) per run (rows) and slice value (columns) for ``kind`` in {'level', 'category'}."""
    part = df[df["slice"].str.startswith(f"{kind}=")]
    if part.empty:
        return pd.DataFrame()
    labels = unique_run_labels(part.drop_duplicates("run_id"))  # the one run-label rule (formatting.run_label)
    part = part.assign(value=part["slice"].str.split("=", n=1).str[1], label=part["run_id"].astype(str).map(labels))
    pivot = part.pivot_table(index="label", columns="value", values="pass_at_1", aggfunc="first")
    return (100 * pivot).round(1).reset_index().rename(columns={"label": "Run"})


def text_report(rep: dict[str, Any]) -> str:
    """The leaderboard of one benchmark as text: rank, agent, date, Pass@1, score, tasks, comparison."""
    cset = rep["comparison_sets"].get("all", {})
    lines = [f"== {rep['benchmark']} (ranked by {cset.get('metric')} on {cset.get('n_tasks')} shared tasks)"]
    if rep.get("scorer"):
        lines[0] += f", scorer {rep['scorer']}" + (
            " (raw scale: mean of its values)" if rep.get("scale") == "raw" else ""
        )
    rows = [r for r in rep["rows"] if r["slice"] == "all"]
    for r in sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["run_id"])):
        rank = f"{r['rank']:>3}" if r["rank"] is not None else "  -"
        pass1 = r["pass_at"].get("1")
        score = r["mean_score"] or 0
        lines.append(
            f"{rank} {r['agent']:<24} {r['eval_date'] or '':<10} "
            + ("pass@1     -  " if pass1 is None else f"pass@1 {100 * pass1:5.1f}%  ")
            + (f"score {score:7.3f}  " if rep.get("scale") == "raw" else f"score {100 * score:5.1f}%  ")
            + f"tasks {r['n_tasks']:>5}  {comparison_label(r) if r['rank'] is not None else apart_reason(r)}"
            + ("" if r.get("is_complete", True) or r["rank"] is None else f"  [incomplete: {incomplete_label(r)}]")
        )
    return "\n".join(lines)


def incomplete_label(row: Mapping[str, Any]) -> str:
    """``started, 2 of 6 samples``: why a run is not complete (its log status and sample counts)."""
    parts = [str(row.get("log_status") or "status unknown")]
    if row.get("total") is not None and not pd.isna(row.get("total")):
        done = row.get("completed")
        parts.append(f"{'?' if done is None or pd.isna(done) else int(done)} of {int(row['total'])} samples")
    return ", ".join(parts)

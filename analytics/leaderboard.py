"""leaderboard: Pass@k, pass^k, mean score, steps and cost per run, with 95% intervals and ties.

Definitions (also in the README):
    * Pass@k: the unbiased estimator of Chen et al. (2021), averaged over tasks; k runs from 1 to the
      smallest number of samples any task of the run has (``k_max``).
    * pass^k: the probability that k samples of a task all succeed, ``C(c,k)/C(n,k)``, averaged over tasks.
    * Intervals: Wilson over tasks for rates; a seeded percentile bootstrap over tasks for mean score,
      mean steps (tool calls per attempt) and mean cost per task.
    * Ties: a non-human row whose Pass@1 interval overlaps the leader's (best Pass@1 in its slice) is
      ``is_tied`` with it. Human rows (kind = human) are ranked apart and never lead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import stats
from analytics.cliargs import add_benchmark_and_dates, date_range
from analytics.db import load_sql, query_df, reader

SLICE_KINDS = ("all", "level", "category")


def _filter_params(
    benchmark: str,
    agents: Sequence[str] | None,
    date_from: dt.date | None,
    date_to: dt.date | None,
    run_ids: Sequence[str] | None,
) -> dict[str, Any]:
    return {
        "benchmark": benchmark,
        "agents": list(agents) if agents else None,
        "date_from": date_from,
        "date_to": date_to,
        "run_ids": list(run_ids) if run_ids else None,
    }


def runs_in(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    run_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The runs that match the filters (run_id, agent, agent_version, family, kind, eval_date), newest first."""
    return query_df(con, load_sql("leaderboard_runs"), _filter_params(benchmark, agents, date_from, date_to, run_ids))


def task_outcomes(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    run_ids: Sequence[str] | None = None,
    runs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per (run, task), ordered by run and task: samples, successes, mean score, tool calls, cost, and
    the task's level and category.

    The aggregation happens in DuckDB, so only runs x tasks rows reach pandas; the task's level and category are
    read once per task and attached here (cheaper than one text value per row from the database). ``runs`` is
    the result of ``runs_in`` for the same filters, when the caller has it already.
    """
    if runs is None:
        runs = runs_in(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to, run_ids=run_ids)
    out = query_df(con, load_sql("task_outcomes"), {"run_ids": runs["run_id"].astype(str).tolist()})
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
    rates: dict[str, list[np.ndarray]],
) -> list[dict[str, Any]]:
    """The leaderboard rows of one run (bootstrap intervals are added later, for all runs at once)."""
    out = []
    for name, rows in slices:
        n_tasks = len(rows)
        ci: dict[str, list[float]] = {}
        pass_at: dict[str, float] = {}
        pass_hat: dict[str, float] = {}
        for k in range(1, k_max + 1):
            p, h = _nanmean(rates["pass_at"][k - 1][rows]), _nanmean(rates["pass_hat"][k - 1][rows])
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


BOOTSTRAPPED = (("mean_score", "score"), ("mean_steps", "steps"), ("mean_cost_usd", "cost_usd"))


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
    seed: int = 0,
    n_boot: int = 1000,
) -> pd.DataFrame:
    """The leaderboard from ``runs_in`` and ``task_outcomes`` frames: one row per run and slice (``COLUMNS``).

    Pass@k and pass^k are computed once per (run, task) row for every k and averaged per slice; Wilson intervals
    per row; bootstrap intervals for all rows at once (see ``_add_bootstrap_cis``).
    """
    known = pd.Index(runs["run_id"]).get_indexer(outcomes["run_id"])
    part = outcomes[known >= 0]
    run_pos = known[known >= 0]
    order = np.argsort(run_pos, kind="stable")  # rows of one run together, in task order
    part, run_pos = part.iloc[order].reset_index(drop=True), run_pos[order]
    arrays = {col: part[col].to_numpy(dtype=float) for col in ("n", "c", "score", "steps", "cost_usd")}
    k_top = int(arrays["n"].max()) if len(part) else 0
    rates = {
        "pass_at": [stats.pass_at_k(arrays["n"], arrays["c"], k) for k in range(1, k_top + 1)],
        "pass_hat": [stats.pass_hat_k(arrays["n"], arrays["c"], k) for k in range(1, k_top + 1)],
    }
    meta = runs[["run_id", "agent", "agent_version", "family", "kind", "eval_date"]].to_dict("records")
    rows: list[dict[str, Any]] = []
    indices: list[np.ndarray] = []
    for pos, run_rows, run_slices in _slice_groups(run_pos, part, slices):
        k_max = int(arrays["n"][run_rows].min())  # Pass@k is defined up to the run's fewest samples per task
        rows += _run_rows(meta[pos], k_max, run_slices, arrays, rates)
        indices += [idx for _, idx in run_slices]
    _add_bootstrap_cis(rows, indices, arrays, seed=seed, n_boot=n_boot)
    return pd.DataFrame(rows, columns=COLUMNS)


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
) -> pd.DataFrame:
    """The leaderboard of one benchmark: one row per run and slice (``all``, ``level=L``, ``category=C``).

    Returns an empty frame (with the columns) when nothing matches.
    """
    runs = runs_in(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    outcomes = task_outcomes(con, benchmark=benchmark, runs=runs)
    return mark_ties(leaderboard_rows(runs, outcomes, slices=slices, seed=seed, n_boot=n_boot))


COLUMNS = [
    "run_id",
    "agent",
    "agent_version",
    "family",
    "kind",
    "eval_date",
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
]


def mark_ties(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``pass_at_1``, ``rank``, ``is_leader`` and ``is_tied`` (Pass@1 interval overlaps the leader's)."""
    out = df.copy()
    out["pass_at_1"] = [p.get("1", np.nan) for p in out["pass_at"]] if not out.empty else []
    rank = np.zeros(len(out), dtype=int)  # 0 = unranked (humans)
    is_leader = np.zeros(len(out), dtype=bool)
    is_tied = np.zeros(len(out), dtype=bool)
    is_machine = (out["kind"] != "human").to_numpy()
    p1 = out["pass_at_1"].to_numpy(dtype=float)
    ci = [tuple(c.get("pass@1", (np.nan, np.nan))) for c in out["ci95"]]
    for idx in out.groupby("slice", sort=False).indices.values():
        machines = idx[is_machine[idx]]
        if machines.size == 0:
            continue
        machines = machines[np.argsort(-p1[machines], kind="stable")]  # best first, NaN last
        rank[machines] = np.arange(1, machines.size + 1)
        is_leader[machines[0]] = True
        for i in machines[1:]:
            is_tied[i] = stats.intervals_overlap(ci[i], ci[machines[0]])
    out["rank"] = pd.array([r if r else pd.NA for r in rank.tolist()], dtype="Int64")
    out["is_leader"] = is_leader
    out["is_tied"] = is_tied
    return out


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """A flat, human-readable table of one slice (percentages, intervals as text)."""
    if df.empty:
        return pd.DataFrame()
    k_max = int(df["k_max"].max())
    rows = []
    for _, r in df.iterrows():
        row: dict[str, Any] = {
            "Rank": r["rank"],
            "Tied with leader": "leader" if r["is_leader"] else ("tied" if r["is_tied"] else ""),
            "Agent": r["agent"],
            "Version": r["agent_version"] or "",
            "Kind": r["kind"],
            "Eval date": _date_text(r["eval_date"]),
            "Tasks": r["n_tasks"],
            "Attempts": r["n_attempts"],
        }
        for k in range(1, k_max + 1):
            row[f"Pass@{k} %"] = _pct(r["pass_at"].get(str(k)))
            row[f"Pass@{k} 95% CI"] = _pct_ci(r["ci95"].get(f"pass@{k}"))
        for k in range(2, k_max + 1):
            row[f"pass^{k} %"] = _pct(r["pass_hat"].get(str(k)))
        row["Mean score %"] = _pct(r["mean_score"])
        row["Mean score 95% CI"] = _pct_ci(r["ci95"]["mean_score"])
        row["Mean steps"] = round(r["mean_steps"], 2)
        row["Mean cost/task $"] = None if r["mean_cost_usd"] is None else round(r["mean_cost_usd"], 4)
        row["run_id"] = r["run_id"]
        rows.append(row)
    return pd.DataFrame(rows)


def _date_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return ""
    return str(value)[:10]


def _pct(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else round(100.0 * value, 1)


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
) -> dict[str, Any]:
    """The JSON report of DESIGN.md / the foundation issue."""
    df = leaderboard(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to, seed=seed)
    keys = [
        "run_id",
        "agent",
        "agent_version",
        "kind",
        "eval_date",
        "slice",
        "n_tasks",
        "n_attempts",
        "pass_at",
        "pass_hat",
        "mean_score",
        "ci95",
        "mean_steps",
        "mean_cost_usd",
        "is_tied",
    ]
    rows = [{k: _jsonable(r[k]) for k in keys} for _, r in df.iterrows()]
    return {"benchmark": benchmark, "rows": rows}


def _jsonable(value: Any) -> Any:
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m analytics leaderboard``."""
    add_benchmark_and_dates(parser)


def cli(args: argparse.Namespace) -> int:
    """Print the leaderboard of one or every benchmark."""
    date_from, date_to = date_range(args)
    with reader(args.db) as con:
        names = (
            [args.benchmark]
            if args.benchmark
            else [r[0] for r in con.execute("SELECT benchmark FROM benchmarks ORDER BY 1").fetchall()]
        )
        reports = [report(con, benchmark=b, date_from=date_from, date_to=date_to) for b in names]
    if args.json:
        print(json.dumps(reports[0] if args.benchmark else reports, indent=1))
        return 0
    for rep in reports:
        print(f"== {rep['benchmark']}")
        for r in rep["rows"]:
            if r["slice"] == "all":
                print(
                    f"  {r['agent']:<24} {r['eval_date'] or '':<10} pass@1 {100 * r['pass_at']['1']:5.1f}%  "
                    f"tasks {r['n_tasks']:>5}  attempts {r['n_attempts']:>6}"
                )
    return 0


def fig_pass_at_1(df: pd.DataFrame, *, title: str = "Pass@1 with 95% Wilson interval"):  # -> go.Figure
    """Horizontal dot-and-whisker chart of Pass@1 per run; humans drawn apart; run ids in custom_data."""
    import plotly.graph_objects as go

    part = df.sort_values("pass_at_1")
    fig = go.Figure()
    for is_human, group in part.groupby(part["kind"] == "human", sort=False):
        lo = np.array([c["pass@1"][0] for c in group["ci95"]])
        hi = np.array([c["pass@1"][1] for c in group["ci95"]])
        p = group["pass_at_1"].to_numpy()
        labels = [
            f"{a} {v}" if isinstance(v, str) and v and v not in a else a
            for a, v in zip(group["agent"], group["agent_version"], strict=True)
        ]
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
                hovertemplate="%{y}<br>Pass@1 %{x:.1f}%<br>tasks %{customdata[1]}<br>run %{customdata[0]}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="Pass@1 (%)",
        xaxis_range=[0, 100],
        height=120 + 28 * len(part),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def slice_pivot(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Pass@1 (%) per run (rows) and slice value (columns) for ``kind`` in {'level', 'category'}."""
    part = df[df["slice"].str.startswith(f"{kind}=")]
    if part.empty:
        return pd.DataFrame()
    part = part.assign(
        value=part["slice"].str.split("=", n=1).str[1], label=part["agent"] + " (" + part["run_id"] + ")"
    )
    pivot = part.pivot_table(index="label", columns="value", values="pass_at_1", aggfunc="first")
    return (100 * pivot).round(1).reset_index().rename(columns={"label": "Run"})

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


def task_outcomes(con: duckdb.DuckDBPyConnection, *, benchmark: str, agents: Sequence[str] | None = None,
                  date_from: dt.date | None = None, date_to: dt.date | None = None,
                  run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (run, task): samples, successes, mean score, mean tool calls, mean cost.

    The aggregation happens in DuckDB, so only runs x tasks rows reach pandas.
    """
    return query_df(con, load_sql("task_outcomes"), {
        "benchmark": benchmark, "agents": list(agents) if agents else None,
        "date_from": date_from, "date_to": date_to, "run_ids": list(run_ids) if run_ids else None,
    })


def _slices(df: pd.DataFrame, kinds: Sequence[str]) -> list[tuple[str, pd.DataFrame]]:
    out: list[tuple[str, pd.DataFrame]] = []
    if "all" in kinds:
        out.append(("all", df))
    for kind in ("level", "category"):
        if kind in kinds:
            for value, part in df.dropna(subset=[kind]).groupby(kind, sort=True):
                out.append((f"{kind}={value}", part))
    return out


def _run_row(run: pd.Series, tasks: pd.DataFrame, slice_name: str, k_max: int, *, seed: int,
             n_boot: int) -> dict[str, Any]:
    n = tasks["n"].to_numpy()
    c = tasks["c"].to_numpy()
    n_tasks = len(tasks)
    pass_at: dict[str, float] = {}
    pass_hat: dict[str, float] = {}
    ci: dict[str, list[float]] = {}
    for k in range(1, k_max + 1):
        p = float(np.nanmean(stats.pass_at_k(n, c, k)))
        h = float(np.nanmean(stats.pass_hat_k(n, c, k)))
        pass_at[str(k)], pass_hat[str(k)] = p, h
        ci[f"pass@{k}"] = list(stats.wilson(p, n_tasks))
        ci[f"pass^{k}"] = list(stats.wilson(h, n_tasks))
    rng = stats.stable_rng(seed, str(run["run_id"]), slice_name)
    costs = tasks["cost_usd"].to_numpy(dtype=float)
    for name, values in (("mean_score", tasks["score"]), ("mean_steps", tasks["steps"]), ("mean_cost_usd", costs)):
        ci[name] = list(stats.bootstrap_mean_ci(np.asarray(values, dtype=float), rng, n_boot=n_boot))
    has_cost = bool(np.isfinite(costs).any())
    return {
        "run_id": run["run_id"], "agent": run["agent"], "agent_version": run["agent_version"],
        "family": run["family"], "kind": run["kind"], "eval_date": run["eval_date"], "slice": slice_name,
        "n_tasks": n_tasks, "n_attempts": int(n.sum()), "k_max": k_max,
        "pass_at": pass_at, "pass_hat": pass_hat, "mean_score": float(tasks["score"].mean()),
        "ci95": ci, "mean_steps": float(tasks["steps"].mean()),
        "mean_cost_usd": float(np.nanmean(costs)) if has_cost else None,
    }


def leaderboard(con: duckdb.DuckDBPyConnection, *, benchmark: str, agents: Sequence[str] | None = None,
                date_from: dt.date | None = None, date_to: dt.date | None = None,
                slices: Sequence[str] = SLICE_KINDS, seed: int = 0, n_boot: int = 1000) -> pd.DataFrame:
    """The leaderboard of one benchmark: one row per run and slice (``all``, ``level=L``, ``category=C``).

    Returns an empty frame (with the columns) when nothing matches.
    """
    outcomes = task_outcomes(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to)
    rows: list[dict[str, Any]] = []
    for _, run_tasks in outcomes.groupby("run_id", sort=False):
        run = run_tasks.iloc[0]
        k_max = int(run_tasks["n"].min())
        for slice_name, part in _slices(run_tasks, slices):
            rows.append(_run_row(run, part, slice_name, k_max, seed=seed, n_boot=n_boot))
    df = pd.DataFrame(rows, columns=COLUMNS)
    return mark_ties(df)


COLUMNS = ["run_id", "agent", "agent_version", "family", "kind", "eval_date", "slice", "n_tasks", "n_attempts",
           "k_max", "pass_at", "pass_hat", "mean_score", "ci95", "mean_steps", "mean_cost_usd"]


def mark_ties(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``pass_at_1``, ``rank``, ``is_leader`` and ``is_tied`` (Pass@1 interval overlaps the leader's)."""
    out = df.copy()
    out["pass_at_1"] = [p.get("1", np.nan) for p in out["pass_at"]] if not out.empty else []
    out["rank"] = pd.Series(dtype="Int64")
    out["is_leader"] = False
    out["is_tied"] = False
    for _, idx in out.groupby("slice", sort=False).groups.items():
        part = out.loc[idx]
        machines = part[part["kind"] != "human"].sort_values("pass_at_1", ascending=False)
        if machines.empty:
            continue
        out.loc[machines.index, "rank"] = np.arange(1, len(machines) + 1)
        leader = machines.index[0]
        out.loc[leader, "is_leader"] = True
        lead_ci = tuple(out.loc[leader, "ci95"]["pass@1"])
        for i in machines.index[1:]:
            out.loc[i, "is_tied"] = stats.intervals_overlap(tuple(out.loc[i, "ci95"]["pass@1"]), lead_ci)
    return out


def display_table(df: pd.DataFrame) -> pd.DataFrame:
    """A flat, human-readable table of one slice (percentages, intervals as text)."""
    if df.empty:
        return pd.DataFrame()
    k_max = int(df["k_max"].max())
    rows = []
    for _, r in df.iterrows():
        row: dict[str, Any] = {"Rank": r["rank"],
                               "Tied with leader": "leader" if r["is_leader"] else ("tied" if r["is_tied"] else ""),
                               "Agent": r["agent"], "Version": r["agent_version"] or "",
                               "Kind": r["kind"], "Eval date": _date_text(r["eval_date"]), "Tasks": r["n_tasks"],
                               "Attempts": r["n_attempts"]}
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


def report(con: duckdb.DuckDBPyConnection, *, benchmark: str, agents: Sequence[str] | None = None,
           date_from: dt.date | None = None, date_to: dt.date | None = None, seed: int = 0) -> dict[str, Any]:
    """The JSON report of DESIGN.md / the foundation issue."""
    df = leaderboard(con, benchmark=benchmark, agents=agents, date_from=date_from, date_to=date_to, seed=seed)
    keys = ["run_id", "agent", "agent_version", "kind", "eval_date", "slice", "n_tasks", "n_attempts", "pass_at",
            "pass_hat", "mean_score", "ci95", "mean_steps", "mean_cost_usd", "is_tied"]
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
        names = [args.benchmark] if args.benchmark else [
            r[0] for r in con.execute("SELECT benchmark FROM benchmarks ORDER BY 1").fetchall()]
        reports = [report(con, benchmark=b, date_from=date_from, date_to=date_to) for b in names]
    if args.json:
        print(json.dumps(reports[0] if args.benchmark else reports, indent=1))
        return 0
    for rep in reports:
        print(f"== {rep['benchmark']}")
        for r in rep["rows"]:
            if r["slice"] == "all":
                print(f"  {r['agent']:<24} {r['eval_date'] or '':<10} pass@1 {100 * r['pass_at']['1']:5.1f}%  "
                      f"tasks {r['n_tasks']:>5}  attempts {r['n_attempts']:>6}")
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
        labels = [f"{a} {v}" if isinstance(v, str) and v and v not in a else a
                  for a, v in zip(group["agent"], group["agent_version"], strict=True)]
        fig.add_trace(go.Scatter(
            x=100 * p, y=labels, mode="markers", name="human baseline" if is_human else "agents",
            marker={"size": 10, "symbol": "diamond" if is_human else "circle",
                    "color": "#7f7f7f" if is_human else "#1f77b4"},
            error_x={"type": "data", "symmetric": False, "array": 100 * (hi - p), "arrayminus": 100 * (p - lo)},
            customdata=np.stack([group["run_id"], group["n_tasks"]], axis=1),
            hovertemplate="%{y}<br>Pass@1 %{x:.1f}%<br>tasks %{customdata[1]}<br>run %{customdata[0]}<extra></extra>",
        ))
    fig.update_layout(title=title, xaxis_title="Pass@1 (%)", xaxis_range=[0, 100], height=120 + 28 * len(part),
                      margin={"l": 10, "r": 10, "t": 50, "b": 40}, legend={"orientation": "h", "y": -0.15})
    return fig


def slice_pivot(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Pass@1 (%) per run (rows) and slice value (columns) for ``kind`` in {'level', 'category'}."""
    part = df[df["slice"].str.startswith(f"{kind}=")]
    if part.empty:
        return pd.DataFrame()
    part = part.assign(value=part["slice"].str.split("=", n=1).str[1],
                       label=part["agent"] + " (" + part["run_id"] + ")")
    pivot = part.pivot_table(index="label", columns="value", values="pass_at_1", aggfunc="first")
    return (100 * pivot).round(1).reset_index().rename(columns={"label": "Run"})

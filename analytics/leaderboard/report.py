"""The leaderboard, shown: the JSON report (``python -m analytics leaderboard --json``), its text form, and the
display tables of the page (people's columns, verdicts, why a row is shown apart). No queries, no figures.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics import formatting as fmt
from analytics.leaderboard.compute import RUN_STATE_COLUMNS, STATISTICS, k_values
from analytics.leaderboard.verdicts import COMPARISON_COLUMNS
from analytics.runs import unique_run_labels


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
    out = pd.DataFrame(rows)
    out["Cost per task"] = fmt.usd_column(df["mean_cost_usd"])  # one format per column
    return out


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
    out = pd.DataFrame(rows)
    out["Cost/task"] = fmt.usd_column(df["mean_cost_usd"])  # one format per column
    return out


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
    return f"{100 * ci[0]:.1f} to {100 * ci[1]:.1f}"


def payload(
    df: pd.DataFrame, *, benchmark: str, exclude_errored: bool, scorer: str | None, rank_incomplete: bool
) -> dict[str, Any]:
    """The JSON report of DESIGN.md / the foundation issue from a leaderboard frame (``errored`` says how errored
    attempts counted, ``scorer`` which score ranked (null: the headline), ``scale`` its scale, ``incomplete``
    whether incomplete runs were ranked)."""
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
REPORT_KEYS += [s.name for s in STATISTICS if s.name not in REPORT_KEYS]  # a new statistic's field, appended


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


def slice_pivot(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Pass@1 (%) per run (rows) and slice value (columns) for ``kind`` in {'level', 'category'}."""
    part = df[df["slice"].str.startswith(f"{kind}=")]
    if part.empty:
        return pd.DataFrame()
    labels = unique_run_labels(part.drop_duplicates("run_id"))  # the one run-label rule (runs.run_label)
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

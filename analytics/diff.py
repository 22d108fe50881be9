"""Version-to-version diff of two runs on one benchmark: flipped tasks, exact McNemar test, deltas.

Per task outcome (documented in docs/trajectories.md):

* the **binary outcome** used for flips and McNemar is, by default, the task's lowest sample (sample 0);
  ``basis="majority"`` uses "passed in at least half of the samples" instead;
* the **deltas** per level and category use the Pass@1-style mean over samples per task, averaged over the
  tasks both runs attempted, with a seeded paired bootstrap interval over tasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
from scipy import stats as sps

from analytics.db import RunlensError, query_df
from analytics.stats import bootstrap_mean_ci, stable_rng

BASES = ("sample0", "majority")
CHANGE_ORDER = {"regression": 0, "fix": 1, "both fail": 2, "both pass": 3}
SEED = 20260122


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c`` (binomial, p = 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * sps.binom.cdf(min(b, c), n, 0.5)))


def run_pairs(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Runs of a benchmark, newest first, with family and version (for the pickers)."""
    return query_df(
        con,
        "SELECT run_id, agent, family, agent_version, eval_date FROM runs WHERE benchmark = ? "
        "ORDER BY eval_date DESC NULLS LAST, run_id DESC",
        [benchmark],
    )


def default_pair(runs: pd.DataFrame) -> tuple[str, str] | None:
    """The two latest runs of the family with the most recent run among families with two or more runs.

    Falls back to the two latest runs of the benchmark. Returns ``(older, newer)`` or None.
    """
    if len(runs) < 2:
        return None
    keyed = runs.assign(_family=runs["family"].fillna(runs["agent"]))
    counts = keyed["_family"].value_counts()
    for family in keyed["_family"]:  # newest first
        if counts[family] >= 2:
            two = keyed[keyed["_family"] == family].head(2)
            return str(two["run_id"].iloc[1]), str(two["run_id"].iloc[0])
    return str(runs["run_id"].iloc[1]), str(runs["run_id"].iloc[0])


def _task_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return query_df(
        con,
        "SELECT a.task_id, t.level, t.category, count(*) AS n, avg(a.passed::INT) AS rate, "
        "arg_min(a.passed, a.sample)::INT AS first, min(a.sample) AS first_sample "
        "FROM attempts a JOIN runs r USING (run_id) "
        "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id "
        "WHERE a.run_id = ? AND a.passed IS NOT NULL GROUP BY ALL ORDER BY a.task_id",
        [run_id],
    )


@dataclass(frozen=True)
class RunDiff:
    """Everything the diff page shows for two runs A (before) and B (after)."""

    run_a: str
    run_b: str
    basis: str
    tasks: pd.DataFrame  # one row per matched task
    n_only_a: int
    n_only_b: int
    b_regressions: int  # A pass, B fail
    c_fixes: int  # A fail, B pass
    p_value: float
    deltas: pd.DataFrame  # slice, n_tasks, pass_a, pass_b, delta, lo, hi

    @property
    def flipped(self) -> pd.DataFrame:
        """Tasks whose binary outcome changed: regressions first, then fixes."""
        return self.tasks[self.tasks["change"].isin(["regression", "fix"])].reset_index(drop=True)


def compare_runs(con: duckdb.DuckDBPyConnection, *, run_a: str, run_b: str, basis: str = "sample0") -> RunDiff:
    """Pair two runs task by task and test whether their outcomes differ.

    Args:
        con: read connection.
        run_a: the earlier run (before).
        run_b: the later run (after).
        basis: binary outcome per task for flips and McNemar: ``sample0`` or ``majority``.
    """
    if basis not in BASES:
        raise RunlensError(f"basis must be one of {BASES}, got {basis!r}")
    a, b = _task_outcomes(con, run_a), _task_outcomes(con, run_b)
    if a.empty or b.empty:
        raise RunlensError(f"no scored attempts in run {run_a if a.empty else run_b!r}")
    m = a.merge(b[["task_id", "n", "rate", "first", "first_sample"]], on="task_id", suffixes=("_a", "_b"))
    col = "first" if basis == "sample0" else "rate"
    m["pass_a"] = (m[f"{col}_a"] >= 0.5) if basis == "majority" else m["first_a"].astype(bool)
    m["pass_b"] = (m[f"{col}_b"] >= 0.5) if basis == "majority" else m["first_b"].astype(bool)
    m["change"] = np.select(
        [m.pass_a & ~m.pass_b, ~m.pass_a & m.pass_b, m.pass_a & m.pass_b],
        ["regression", "fix", "both pass"],
        "both fail",
    )
    m["delta"] = m["rate_b"] - m["rate_a"]
    m = m.sort_values(["change", "task_id"], key=lambda s: s.map(CHANGE_ORDER) if s.name == "change" else s)
    n_reg, n_fix = int((m["change"] == "regression").sum()), int((m["change"] == "fix").sum())
    tasks = m[
        [
            "task_id",
            "level",
            "category",
            "n_a",
            "n_b",
            "rate_a",
            "rate_b",
            "delta",
            "pass_a",
            "pass_b",
            "change",
            "first_sample_a",
            "first_sample_b",
        ]
    ].reset_index(drop=True)
    return RunDiff(
        run_a,
        run_b,
        basis,
        tasks,
        int((~a.task_id.isin(b.task_id)).sum()),
        int((~b.task_id.isin(a.task_id)).sum()),
        n_reg,
        n_fix,
        mcnemar_exact(n_reg, n_fix),
        slice_deltas(tasks, seed_labels=(run_a, run_b)),
    )


def slice_deltas(tasks: pd.DataFrame, *, seed_labels: tuple[str, ...] = (), n_boot: int = 2000) -> pd.DataFrame:
    """Pass@1 of A and B and their difference per slice, with a paired bootstrap 95% interval over tasks."""
    cols = ["slice", "n_tasks", "pass_a", "pass_b", "delta", "lo", "hi"]
    groups: list[tuple[str, pd.DataFrame]] = [("all", tasks)]
    for col in ("level", "category"):
        groups += [(f"{col}={v}", g) for v, g in tasks.dropna(subset=[col]).groupby(col, sort=True)]
    rows = []
    for name, g in groups:
        if g.empty:
            continue
        lo, hi = bootstrap_mean_ci(g["delta"].to_numpy(float), stable_rng(SEED, *seed_labels, name), n_boot=n_boot)
        rows.append(
            {
                "slice": name,
                "n_tasks": len(g),
                "pass_a": float(g["rate_a"].mean()),
                "pass_b": float(g["rate_b"].mean()),
                "delta": float(g["delta"].mean()),
                "lo": lo,
                "hi": hi,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def fig_deltas(deltas: pd.DataFrame):  # noqa: ANN201 - plotly Figure
    """Forest plot of Pass@1 deltas (B - A) per slice with intervals; slice names in custom_data."""
    import plotly.graph_objects as go

    d = deltas.iloc[::-1]
    fig = go.Figure(
        go.Scatter(
            x=d["delta"] * 100,
            y=d["slice"],
            mode="markers",
            customdata=d[["slice"]].to_numpy(),
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (d["hi"] - d["delta"]) * 100,
                "arrayminus": (d["delta"] - d["lo"]) * 100,
            },
            hovertemplate="%{y}: %{x:+.1f} pp<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_dash="dot")
    fig.update_layout(
        xaxis_title="Pass@1 change, B - A (percentage points)", yaxis_title=None, height=max(260, 28 * len(d) + 100)
    )
    return fig


def is_significant(p_value: float, *, alpha: float = 0.05) -> bool:
    """Whether a McNemar p-value is below ``alpha`` (NaN never is)."""
    return not math.isnan(p_value) and p_value < alpha

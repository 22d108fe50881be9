"""Simulation (tests and bench): a rotating-item longitudinal design with known abilities, and recovery."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from analytics.irt.fit import IrtResult


def simulate_rotating(
    *,
    n_periods: int = 4,
    agents_per_period: int = 12,
    items_per_period: int = 100,
    overlap: float = 0.3,
    growth: float = 0.8,
    missing: float = 0.0,
    model: str = "1pl",
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Observations and truth for agents that improve while the task pool rotates to harder tasks.

    Each period draws ``items_per_period`` tasks: a share ``overlap`` carried from the previous period (the
    anchors), the rest new and harder by ``growth`` per period, matching the agents' growth, so raw pass rates
    stay flat while true ability rises. Each agent answers its period's tasks (minus ``missing``).

    Returns:
        (obs with subject, agent, agent_version, family, eval_date, task_id, passed; truth with subject,
        true_ability, period).
    """
    rng = np.random.default_rng(seed)
    rows: list[pd.DataFrame] = []
    truth = []
    pool: list[int] = []
    diffs: dict[int, float] = {}
    next_item = 0
    for p in range(n_periods):
        keep = list(rng.choice(pool, size=int(overlap * items_per_period), replace=False)) if pool else []
        fresh = list(range(next_item, next_item + items_per_period - len(keep)))
        next_item += len(fresh)
        diffs.update({j: float(rng.normal(growth * p, 1.0)) for j in fresh})
        pool = keep + fresh
        b = np.array([diffs[j] for j in pool])
        a = np.exp(rng.normal(0.0, 0.3, len(pool))) if model == "2pl" else np.ones(len(pool))
        date = dt.date(2024, 1, 15) + dt.timedelta(days=91 * p)
        for k in range(agents_per_period):
            theta = float(rng.normal(growth * p, 0.7))
            subject = f"A{k % 4}-p{p}-{k}"
            y = rng.random(len(pool)) < 1.0 / (1.0 + np.exp(-a * (theta - b)))
            answered = rng.random(len(pool)) >= missing
            rows.append(
                pd.DataFrame(
                    {
                        "subject": subject,
                        "agent": f"A{k % 4}",
                        "agent_version": f"p{p}-{k}",
                        "family": f"F{k % 4}",
                        "eval_date": date,
                        "task_id": [f"t{j:05d}" for j in np.array(pool)[answered]],
                        "passed": y[answered].astype(int),
                    }
                )
            )
            truth.append({"subject": subject, "true_ability": theta, "period": p})
    return pd.concat(rows, ignore_index=True), pd.DataFrame(truth)


def recovery(result: IrtResult, truth: pd.DataFrame) -> dict[str, float]:
    """Spearman of estimates and raw scores with truth, and 90%-interval coverage after a linear link."""
    df = result.abilities.merge(truth, on="subject")
    rho = float(df["ability"].rank().corr(df["true_ability"].rank()))
    rho_raw = float(df["raw_score"].rank().corr(df["true_ability"].rank()))
    slope, icpt = np.polyfit(df["ability"], df["true_ability"], 1)
    lo, hi = icpt + slope * df["ability_lo"], icpt + slope * df["ability_hi"]
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    covered = float(((df["true_ability"] >= lo) & (df["true_ability"] <= hi)).mean())
    return {
        "spearman": rho,
        "spearman_raw": rho_raw,
        "coverage90": covered,
        "pearson": float(df["ability"].corr(df["true_ability"])),
    }

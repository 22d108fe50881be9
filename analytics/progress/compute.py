"""Progress index views over a stored IRT fit: frontier, velocity and breakthroughs (pure: frames in, frames out)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analytics.irt import StoredFit
from store import ALL_RUNS, RunFilter

DAYS_PER_MONTH = 30.4375


@dataclass(frozen=True)
class ProgressView:
    """What the Progress page draws (all frames empty when ``fit`` is None)."""

    benchmark: str
    model: str
    fit: StoredFit | None
    abilities: pd.DataFrame  # one row per agent version, with raw_score and date
    frontier: pd.DataFrame  # record-setting versions (best ability to date)
    velocity: pd.DataFrame  # per family: ability gained per month
    breakthroughs: pd.DataFrame  # consecutive versions whose 90% intervals do not overlap
    log: pd.DataFrame  # every stored fit of the benchmark (refit log)
    n_subjects_in_data: int
    n_tasks_in_data: int
    n_superseded: int = 0  # runs of the benchmark left out as superseded by a retry (``store.retries``)
    incomplete: tuple[str, ...] = ()  # incomplete runs left out (``runs.IS_COMPLETE_SQL``, the leaderboard's rule)


def shown(view: ProgressView, run_filter: RunFilter = ALL_RUNS) -> ProgressView:
    """The view restricted to the versions of the filter's agents (all when empty) first evaluated within its dates,
    with its frontier, velocity and breakthroughs recomputed over them. The scale is the fit's, made from every run of
    the benchmark (a scale needs all of them); the filter chooses what is shown on it (its benchmark is the view's)."""
    agents, date_from, date_to = run_filter.agents, run_filter.date_from, run_filter.date_to
    if view.fit is None or view.abilities.empty or not (agents or date_from or date_to):
        return view
    ab = view.abilities
    keep = ab["agent"].isin(list(agents)) if agents else pd.Series(True, index=ab.index)
    dates = ab["first_eval_date"].dt.date
    if date_from is not None:
        keep &= dates >= date_from
    if date_to is not None:
        keep &= dates <= date_to
    ab = ab[keep.fillna(False)].reset_index(drop=True)
    return dataclasses.replace(
        view, abilities=ab, frontier=frontier(ab), velocity=velocity(ab), breakthroughs=breakthroughs(ab)
    )


def frontier(abilities: pd.DataFrame) -> pd.DataFrame:
    """The versions that set a new best ability (flagged agents are not ranked), in date order."""
    if abilities.empty:
        return abilities.copy()
    ranked = abilities[~abilities["is_flagged"]].sort_values(["first_eval_date", "ability"])
    best = ranked["ability"].cummax()
    out = ranked[ranked["ability"] >= best].copy()
    out = out[out["ability"] > out["ability"].shift(1).cummax().fillna(-np.inf)]
    return out.reset_index(drop=True)


def velocity(abilities: pd.DataFrame) -> pd.DataFrame:
    """Least-squares slope of ability against time (per month) for each family with 2+ dated versions,
    plus a ``(frontier)`` row over the record-setting versions."""
    cols = ["family", "n_versions", "first_date", "last_date", "ability_per_month", "ability_gain"]
    if abilities.empty:
        return pd.DataFrame(columns=cols)
    ranked = abilities[~abilities["is_flagged"] & abilities["first_eval_date"].notna()]
    groups = [(fam, g) for fam, g in ranked.groupby("family", sort=True)]
    groups.append(("(frontier)", frontier(abilities)))
    rows = []
    for fam, g in groups:
        if len(g) < 2 or g["first_eval_date"].nunique() < 2:
            continue
        months = (g["first_eval_date"] - g["first_eval_date"].min()).dt.days / DAYS_PER_MONTH
        slope = float(np.polyfit(months.to_numpy(float), g["ability"].to_numpy(float), 1)[0])
        rows.append(
            {
                "family": fam,
                "n_versions": len(g),
                "first_date": g["first_eval_date"].min().date(),
                "last_date": g["first_eval_date"].max().date(),
                "ability_per_month": slope,
                "ability_gain": float(
                    g.sort_values("first_eval_date")["ability"].iloc[-1]
                    - g.sort_values("first_eval_date")["ability"].iloc[0]
                ),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def breakthroughs(abilities: pd.DataFrame) -> pd.DataFrame:
    """Consecutive versions of a family (by date) whose 90% intervals do not overlap, rising."""
    cols = ["family", "from_subject", "to_subject", "date", "ability_gain", "ability", "months"]
    if abilities.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    ranked = abilities[~abilities["is_flagged"]]
    for fam, g in ranked.sort_values("first_eval_date").groupby("family", sort=True):
        for prev, cur in zip(g.iloc[:-1].itertuples(), g.iloc[1:].itertuples(), strict=True):
            if cur.ability_lo > prev.ability_hi:
                months = (cur.first_eval_date - prev.first_eval_date).days / DAYS_PER_MONTH
                rows.append(
                    {
                        "family": fam,
                        "from_subject": prev.subject,
                        "to_subject": cur.subject,
                        "date": cur.first_eval_date,
                        "ability_gain": cur.ability - prev.ability,
                        "ability": cur.ability,
                        "months": months,
                    }
                )
    return pd.DataFrame(rows, columns=cols)


def icc(ability: np.ndarray, difficulty: float, discrimination: float) -> np.ndarray:
    """P(pass) of the 2PL/1PL item characteristic curve."""
    return 1.0 / (1.0 + np.exp(-discrimination * (ability - difficulty)))

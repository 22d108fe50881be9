"""Stored fits as values (read back by ``load``: irt_fits, irt_abilities, irt_items; writes: jobs/irt.py) and their
JSON and text report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class StoredFit:
    """A fit read back from the database."""

    fit_key: str
    benchmark: str
    model: str
    created_at: Any
    seconds: float
    scale_shift: float | None
    info: dict[str, Any]
    abilities: pd.DataFrame
    items: pd.DataFrame
    is_current: bool


ABILITY_COLS = [
    "subject",
    "agent",
    "agent_version",
    "family",
    "ability",
    "ability_lo",
    "ability_hi",
    "n_items",
    "first_eval_date",
    "is_flagged",
]


ITEM_COLS = ["task_id", "difficulty", "discrimination", "pass_rate", "n_subjects", "flag"]


def fit_json(fit: StoredFit) -> dict[str, Any]:
    """The JSON document of ``python -m analytics irt --json``: abilities (best first) and items."""
    ab = fit.abilities.sort_values("ability", ascending=False)
    abilities = [
        {
            "agent": r.agent,
            "agent_version": r.agent_version or None,
            "ability": round(float(r.ability), 4),
            "ability_lo": round(float(r.ability_lo), 4),
            "ability_hi": round(float(r.ability_hi), 4),
            "n_items": int(r.n_items),
            "first_eval_date": None if pd.isna(r.first_eval_date) else str(pd.Timestamp(r.first_eval_date).date()),
        }
        for r in ab.itertuples()
    ]
    items = [
        {
            "task_id": r.task_id,
            "difficulty": round(float(r.difficulty), 4),
            "discrimination": round(float(r.discrimination), 4),
            "pass_rate": round(float(r.pass_rate), 4),
            "flag": r.flag or None,
        }
        for r in fit.items.itertuples()
    ]
    return {"model": fit.model, "abilities": abilities, "items": items}


def text_report(benchmark: str, fit: StoredFit) -> str:
    """A header line (model, size, fit time, key) and the abilities table."""
    table = fit.abilities[["agent", "agent_version", "ability", "ability_lo", "ability_hi", "n_items", "is_flagged"]]
    head = (
        f"{benchmark}: {fit.model}, {len(fit.abilities)} agents x {len(fit.items)} tasks, "
        f"fit in {fit.seconds:.1f} s (key {fit.fit_key})"
    )
    return head + "\n" + table.to_string(index=False, float_format=lambda v: f"{v:.2f}")

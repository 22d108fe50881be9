"""Stored fits read back: irt_fits (the refit log), irt_abilities, irt_items (writes: jobs/irt.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

from analytics.irt.data import data_digest, fit_key
from analytics.irt.settings import IrtError, settings_for
from store import query_df, query_rows


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


def latest_fit_key(con: duckdb.DuckDBPyConnection, benchmark: str, model: str, *, exclude: str = "") -> str | None:
    """The newest stored fit of (benchmark, model) other than ``exclude``."""
    rows = query_rows(
        con,
        "SELECT fit_key FROM irt_fits WHERE benchmark = ? AND model = ? AND fit_key <> ? "
        "ORDER BY created_at DESC LIMIT 1",
        [benchmark, model, exclude],
    )
    return rows[0][0] if rows else None


def read_fit(con: duckdb.DuckDBPyConnection, key: str, *, is_current: bool = True) -> StoredFit:
    """A stored fit by key."""
    head = query_rows(
        con,
        "SELECT fit_key, benchmark, model, created_at, seconds, scale_shift, extra FROM irt_fits WHERE fit_key = ?",
        [key],
    )
    if not head:
        raise IrtError(f"no IRT fit with key {key}")
    k, bench, model, created, seconds, shift, extra = head[0]
    abil = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_abilities WHERE fit_key = ? ORDER BY ability DESC", [key])
    items = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_items WHERE fit_key = ? ORDER BY difficulty", [key])
    return StoredFit(
        k,
        bench,
        model,
        created,
        float(seconds or 0.0),
        shift,
        json.loads(extra) if isinstance(extra, str) else (extra or {}),
        abil,
        items,
        is_current,
    )


def get_fit(con: duckdb.DuckDBPyConnection, *, benchmark: str, model: str = "1pl") -> StoredFit | None:
    """The stored fit for the current data (``is_current``), else the latest stale one, else None. Never fits."""
    key = fit_key(data_digest(con, benchmark=benchmark), settings_for(model), benchmark=benchmark)
    if query_rows(con, "SELECT count(*) FROM irt_fits WHERE fit_key = ?", [key])[0][0]:
        return read_fit(con, key)
    latest = latest_fit_key(con, benchmark, model)
    return read_fit(con, latest, is_current=False) if latest else None


def fit_log(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Every stored fit of a benchmark, newest first: the refit log with scale movement."""
    return query_df(
        con,
        "SELECT created_at, model, fit_key, seconds, scale_shift, "
        "extra->>'n_subjects' AS n_agents, extra->>'n_items' AS n_tasks, "
        "extra->>'link_method' AS link, extra->>'n_anchor_items' AS anchor_tasks, "
        "extra->>'old_agents_moved' AS old_agents_moved FROM irt_fits WHERE benchmark = ? "
        "ORDER BY created_at DESC",
        [benchmark],
    )


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

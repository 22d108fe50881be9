"""IRT fits kept through the one writer: fit the current responses (``analytics.irt``), link to the previous fit,
store the three tables (``store.derived.insert_irt_fit``), and return the stored fit."""

from __future__ import annotations

import datetime as dt
import json

import duckdb

from analytics.irt import (
    ABILITY_COLS,
    ITEM_COLS,
    IrtError,
    IrtResult,
    IrtSettings,
    ProgressFn,
    StoredFit,
    data_digest,
    estimate,
    fit_key,
    latest_fit_key,
    load_responses,
    read_fit,
    settings_for,
)
from store import derived, query_rows


def store_fit(
    con: duckdb.DuckDBPyConnection, key: str, benchmark: str, settings: IrtSettings, result: IrtResult
) -> None:
    """Write one fit (three tables) in a single transaction."""
    abil = result.abilities.reindex(columns=ABILITY_COLS)
    abil.insert(0, "fit_key", key)
    items = result.items.reindex(columns=ITEM_COLS)
    items.insert(0, "fit_key", key)
    fit = [
        key,
        benchmark,
        settings.model,
        json.dumps(settings.key_dict()),
        dt.datetime.now(dt.UTC).replace(tzinfo=None),
        result.info["seconds"],
        result.info["scale_shift"],
        json.dumps(result.info, default=str),
    ]
    derived.insert_irt_fit(con, fit, abil, items)


def fit_and_store(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    model: str = "1pl",
    progress: ProgressFn | None = None,
    settings: IrtSettings | None = None,
) -> StoredFit:
    """Return the cached fit for the current data, or fit, link to the previous fit, store, and return it.

    ``con`` must be a writer connection (store.writer).
    """
    settings = settings or settings_for(model)
    obs = load_responses(con, benchmark=benchmark)
    if obs.empty:
        raise IrtError(f"benchmark {benchmark!r} has no attempts to fit")
    key = fit_key(data_digest(con, benchmark=benchmark), settings, benchmark=benchmark)
    if query_rows(con, "SELECT count(*) FROM irt_fits WHERE fit_key = ?", [key])[0][0]:
        return read_fit(con, key)
    prev_key = latest_fit_key(con, benchmark, settings.model, exclude=key)
    prev = read_fit(con, prev_key) if prev_key else None
    result = estimate(
        obs,
        settings,
        progress=progress,
        previous_items=prev.items if prev else None,
        previous_abilities=prev.abilities if prev else None,
    )
    store_fit(con, key, benchmark, settings, result)
    return read_fit(con, key)

"""Scorers, computed: the metrics Inspect computed for a scorer, read from a run's ``results.scores`` (no query)."""

from __future__ import annotations

import json
import math
from typing import Any


def inspect_metrics(results: Any, scorer: str | None) -> dict[str, float] | None:
    """The metrics Inspect computed for ``scorer`` (``results.scores`` of the log): ``{"accuracy": 0.8}``, or with
    epoch reducers ``{"mode/accuracy": ..., "max/accuracy": ...}``. ``scorer`` None: the log's headline (its first
    entry). None when the log has none for it (not an Inspect run, or a log written before scoring)."""
    if isinstance(results, str):
        try:
            results = json.loads(results)
        except ValueError:
            return None
    if not isinstance(results, list):
        return None
    out: dict[str, float] = {}
    for entry in results:
        if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), dict):
            continue
        name, owner = str(entry.get("name")), str(entry.get("scorer") or entry.get("name"))
        if scorer is None:
            scorer = owner if owner == name else f"{owner}/{name}"
        if scorer not in (name, f"{owner}/{name}"):
            continue
        prefix = f"{entry['reducer']}/" if entry.get("reducer") else ""
        for metric, body in entry["metrics"].items():
            value = body.get("value") if isinstance(body, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                out[f"{prefix}{metric}"] = float(value)
    return out or None

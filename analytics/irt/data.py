"""Prepare: responses (``load.load_responses``) -> index arrays; the fit key of a data digest and settings."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analytics.irt.settings import IrtSettings


@dataclass(frozen=True)
class Arrays:
    """Observations as index arrays (what Pyro consumes)."""

    subject_ix: np.ndarray
    item_ix: np.ndarray
    y: np.ndarray
    subject_ids: tuple[str, ...]
    item_ids: tuple[str, ...]


def prepare_arrays(obs: pd.DataFrame) -> Arrays:
    """Index arrays from observation rows (columns ``subject``, ``task_id``, ``passed``).

    Raises:
        ValueError: a required column is missing.
    """
    for col in ("subject", "task_id", "passed"):
        if col not in obs.columns:
            raise ValueError(f"responses need a {col!r} column")
    subjects = tuple(sorted(obs["subject"].astype(str).unique()))
    items = tuple(sorted(obs["task_id"].astype(str).unique()))
    s_ix = pd.Categorical(obs["subject"].astype(str), categories=subjects).codes.astype(np.int64)
    i_ix = pd.Categorical(obs["task_id"].astype(str), categories=items).codes.astype(np.int64)
    y = obs["passed"].astype(float).to_numpy()
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("responses must be 0/1 (passed); graded scores enter through pass_threshold")
    order = np.lexsort((y, i_ix, s_ix))  # canonical order: the same numbers whatever order rows came in
    return Arrays(s_ix[order], i_ix[order], y[order], subjects, items)


def fit_key(digest: str, settings: IrtSettings, *, benchmark: str) -> str:
    """Cache key of a fit: data fingerprint + benchmark + every setting; equal inputs give equal keys."""
    payload = json.dumps({"data": digest, "benchmark": benchmark, **settings.key_dict()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]

"""Prepare: SQL -> one row per attempt (subjects = agent + version) -> index arrays; the data digest and fit key."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from analytics.irt.settings import IrtSettings
from store import query_df, query_rows

# run -> subject. Subject = agent + version. A run without a version whose agent was evaluated on several dates
# takes its evaluation date as the version (leaderboard exports such as SWE-bench reuse one name for different
# systems over time); runs of one version on several dates are pooled (that is what links periods).
SUBJECTS_CTE = """
WITH rs0 AS (
    SELECT run_id, agent, coalesce(family, agent) AS family, eval_date, nullif(agent_version, '') AS v,
           count(DISTINCT eval_date) OVER (PARTITION BY agent, agent_version IS NULL) AS n_dates
    FROM runs WHERE benchmark = ?
), rs AS (
    SELECT run_id, agent, family, eval_date,
           coalesce(v, CASE WHEN n_dates > 1 THEN strftime(eval_date, '%Y-%m-%d') END, '') AS agent_version
    FROM rs0
), subj AS (
    SELECT *, agent || CASE WHEN agent_version = '' THEN '' ELSE ' ' || agent_version END AS subject FROM rs
)
"""


RESPONSES_SQL = (
    SUBJECTS_CTE
    + """
SELECT subject, agent, agent_version, family, eval_date, a.task_id, a.sample,
       coalesce(a.passed, false)::INTEGER AS passed
FROM attempts a JOIN subj USING (run_id)
ORDER BY subject, a.task_id, eval_date, a.sample
"""
)


def load_responses(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """One row per attempt of ``benchmark``: subject, agent, agent_version, family, eval_date, task_id, passed."""
    return query_df(con, RESPONSES_SQL, [benchmark])


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


DIGEST_SQL = """
SELECT count(*), bit_xor(h), sum(h % 1000000007), count(DISTINCT subject)
FROM (SELECT hash(r.agent, coalesce(r.agent_version, ''), r.run_id, a.task_id, a.sample,
                  coalesce(a.passed, false), coalesce(r.family, ''), r.eval_date) AS h,
             r.agent || coalesce(r.agent_version, '') AS subject
      FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?)
"""


def data_digest(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str:
    """An order-free fingerprint of a benchmark's responses, computed in SQL (cheap on every page load)."""
    return ":".join(str(v) for v in query_rows(con, DIGEST_SQL, [benchmark])[0])


def fit_key(digest: str, settings: IrtSettings, *, benchmark: str) -> str:
    """Cache key of a fit: data fingerprint + benchmark + every setting; equal inputs give equal keys."""
    payload = json.dumps({"data": digest, "benchmark": benchmark, **settings.key_dict()}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]

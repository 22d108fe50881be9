"""The IRT feature's database reads (the only module of ``analytics.irt`` that queries): responses per attempt with
their subject (agent + version), the data digest, and stored fits read back (irt_fits, irt_abilities, irt_items)."""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pandas as pd

from analytics.irt.data import fit_key
from analytics.irt.fits import StoredFit
from analytics.irt.settings import IrtError, settings_for
from analytics.runs.compute import IS_COMPLETE_SQL
from store import query_df, query_rows
from store.retries import IS_SUPERSEDED_SQL

# run -> subject. Subject = agent + version. A run without a version whose agent was evaluated on several dates
# takes its evaluation date as the version (leaderboard exports such as SWE-bench reuse one name for different
# systems over time); runs of one version on several dates are pooled (that is what links periods). A run a retry
# superseded (``store.retries``, the leaderboard's rule) is no subject's: its retry answers for it; nor is an
# incomplete run (``runs.IS_COMPLETE_SQL``, the leaderboard's rule): pooled, its part of the tasks would weigh in its
# version's score (``rs_all`` keeps every run of the benchmark with the flags, to name those left out).
SUBJECTS_CTE = f"""
WITH rs_all AS (
    SELECT r.run_id, r.agent, r.family, r.eval_date, r.agent_version, {IS_SUPERSEDED_SQL} AS is_superseded,
           {IS_COMPLETE_SQL} AS is_complete
    FROM runs r WHERE r.benchmark = ?
), rs0 AS (
    SELECT run_id, agent, coalesce(family, agent) AS family, eval_date, nullif(agent_version, '') AS v,
           count(DISTINCT eval_date) OVER (PARTITION BY agent, agent_version IS NULL) AS n_dates
    FROM rs_all WHERE NOT is_superseded AND is_complete
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


# The IRT input of a benchmark is the multiset of (subject, task_id, passed) rows that RESPONSES_SQL returns, plus
# each subject's agent, version, family and first date (the fit is order-free: analytics/irt/data.py sorts the rows).
# Both are functions of (a) the benchmark's runs (run_id, agent, agent_version, family, eval_date: the subjects,
# including a version taken from the date) and (b) per (run, task) the number of attempts and of passed ones
# (``coalesce(passed, false)``: an attempt without a verdict counts as a fail). (b) is ``run_task_stats``
# (n_attempts, n_passed; migration 008), which the writer keeps in the transaction of every change of attempts
# (ingest, re-scored runs, late scores, replaced attempts, deletion), so the digest reads runs x tasks rows instead
# of every attempt and changes whenever the IRT input does. Order-free: xor and a sum of row hashes (rows are unique
# by their keys), plus counts.
# The runs of SUBJECTS_CTE (superseded and incomplete ones left out): a store without either digests as it did
# before the rule.
DIGEST_SQL = f"""
WITH rs AS (
    SELECT run_id, hash(run_id, agent, coalesce(agent_version, ''), coalesce(family, ''), eval_date) AS h,
           agent || coalesce(agent_version, '') AS subject
    FROM runs r WHERE benchmark = ? AND NOT {IS_SUPERSEDED_SQL} AND {IS_COMPLETE_SQL}
), ts AS (
    SELECT hash(s.run_id, s.task_id, s.n_attempts, s.n_passed) AS h, s.n_attempts
    FROM run_task_stats s JOIN rs USING (run_id)
)
SELECT 'v2', (SELECT count(*) FROM rs), (SELECT bit_xor(h) FROM rs), (SELECT count(DISTINCT subject) FROM rs),
       count(*), sum(n_attempts), bit_xor(h), sum(h % 1000000007)
FROM ts
"""


def data_digest(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str:
    """An order-free fingerprint of a benchmark's IRT input, from its runs and their (run, task) counts kept at
    ingest (``run_task_stats``): its cost follows runs x tasks, not attempts."""
    return ":".join(str(v) for v in query_rows(con, DIGEST_SQL, [benchmark])[0])


def latest_fit_key(con: duckdb.DuckDBPyConnection, benchmark: str, model: str, *, exclude: str = "") -> str | None:
    """The newest stored fit of (benchmark, model) other than ``exclude``."""
    rows = query_rows(
        con,
        "SELECT fit_key FROM irt_fits WHERE benchmark = ? AND model = ? AND fit_key <> ? "
        "ORDER BY created_at DESC LIMIT 1",
        [benchmark, model, exclude],
    )
    return rows[0][0] if rows else None


def _stored_fit(head: tuple[Any, ...], abil: pd.DataFrame, items: pd.DataFrame, *, is_current: bool) -> StoredFit:
    """A StoredFit from its irt_fits row (fit_key, benchmark, model, created_at, seconds, scale_shift, extra)."""
    k, bench, model, created, seconds, shift, extra = head
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


# Every stored fit of a benchmark in one read: the fit's head (read_fit's) and the refit log's columns (fit_log's).
FITS_SQL = """
SELECT fit_key, benchmark, model, created_at, seconds, scale_shift, extra,
       extra->>'n_subjects' AS n_agents, extra->>'n_items' AS n_tasks, extra->>'link_method' AS link,
       extra->>'n_anchor_items' AS anchor_tasks, extra->>'old_agents_moved' AS old_agents_moved
FROM irt_fits WHERE benchmark = ?
ORDER BY created_at DESC
"""
LOG_COLUMNS = [
    "created_at", "model", "fit_key", "seconds", "scale_shift", "n_agents", "n_tasks", "link", "anchor_tasks",
    "old_agents_moved",
]  # fmt: skip


def fit_and_log(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, model: str = "1pl"
) -> tuple[StoredFit | None, pd.DataFrame]:
    """``get_fit`` and ``fit_log`` with irt_fits read once (they read it three to four times between them): the
    benchmark's fits with the log's columns in one statement, then the chosen fit's abilities and items."""
    key = fit_key(data_digest(con, benchmark=benchmark), settings_for(model), benchmark=benchmark)
    fits = query_df(con, FITS_SQL, [benchmark])
    log = fits[LOG_COLUMNS]
    current = fits.index[fits["fit_key"] == key]
    latest = fits.index[fits["model"] == model]  # newest first
    at = current[0] if len(current) else (latest[0] if len(latest) else None)
    if at is None:
        return None, log
    row = fits.loc[at]
    created = row["created_at"]
    # read_fit's values as query_rows gives them: a datetime, None for a null scale shift
    head = (
        row["fit_key"],
        row["benchmark"],
        row["model"],
        created.to_pydatetime() if isinstance(created, pd.Timestamp) else created,
        row["seconds"],
        None if pd.isna(row["scale_shift"]) else float(row["scale_shift"]),
        row["extra"],
    )
    chosen = [str(row["fit_key"])]
    abil = query_df(
        con, "SELECT * EXCLUDE (fit_key) FROM irt_abilities WHERE fit_key = ? ORDER BY ability DESC", chosen
    )
    items = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_items WHERE fit_key = ? ORDER BY difficulty", chosen)
    return _stored_fit(head, abil, items, is_current=len(current) > 0), log


def read_fit(con: duckdb.DuckDBPyConnection, key: str, *, is_current: bool = True) -> StoredFit:
    """A stored fit by key."""
    head = query_rows(
        con,
        "SELECT fit_key, benchmark, model, created_at, seconds, scale_shift, extra FROM irt_fits WHERE fit_key = ?",
        [key],
    )
    if not head:
        raise IrtError(f"no IRT fit with key {key}")
    abil = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_abilities WHERE fit_key = ? ORDER BY ability DESC", [key])
    items = query_df(con, "SELECT * EXCLUDE (fit_key) FROM irt_items WHERE fit_key = ? ORDER BY difficulty", [key])
    return _stored_fit(head[0], abil, items, is_current=is_current)


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

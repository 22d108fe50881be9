"""How complete each run of a benchmark is: its log status, completed/total samples, errored, limited and
unscored attempts, and its pass rate with errored attempts counted as failures or left out.

The leaderboard counts an errored attempt (status ``crashed``) as a failure; Inspect's own accuracy leaves errored
samples out. Both rates are given here so the difference is never silent. Samples stopped by a limit
(``timeout``) were scored by Inspect and count in both. Unscored attempts (empty score) count in neither.
"""

from __future__ import annotations

import duckdb
import pandas as pd

from store import query_df

HEALTH_SQL = """
SELECT r.run_id, r.agent, r.status AS log_status,
       TRY_CAST(json_extract_string(r.extra, '$.completed_samples') AS INTEGER) AS completed_samples,
       TRY_CAST(json_extract_string(r.extra, '$.total_samples') AS INTEGER) AS total_samples,
       count(a.attempt_id) AS n_attempts,
       count(a.attempt_id) FILTER (WHERE a.status = 'crashed') AS n_errored,
       count(a.attempt_id) FILTER (WHERE a.status = 'timeout') AS n_limited,
       count(a.attempt_id) FILTER (WHERE a.score IS NULL) AS n_unscored,
       avg(CASE WHEN a.passed THEN 1.0 ELSE 0.0 END) FILTER (WHERE a.score IS NOT NULL) AS pass_rate_errors_failed,
       avg(CASE WHEN a.passed THEN 1.0 ELSE 0.0 END)
           FILTER (WHERE a.score IS NOT NULL AND a.status <> 'crashed') AS pass_rate_errors_excluded
FROM runs r LEFT JOIN attempts a USING (run_id)
WHERE r.benchmark = ?
GROUP BY ALL
ORDER BY r.run_id
"""
COMPLETE_STATUSES = ("success", "completed")
# Runs an eval set's retry superseded (a later log of the same task in the same eval set), with the later run.
SUPERSEDED_SQL = """
SELECT r.run_id, min(later.run_id) AS superseded_by
FROM runs r JOIN runs later
  ON later.benchmark = r.benchmark AND later.run_id <> r.run_id
 AND json_extract_string(later.extra, '$.inspect_eval_set_id') = json_extract_string(r.extra, '$.inspect_eval_set_id')
 AND json_extract_string(later.extra, '$.inspect_task_id') = json_extract_string(r.extra, '$.inspect_task_id')
 AND json_extract_string(later.extra, '$.inspect_created') > json_extract_string(r.extra, '$.inspect_created')
WHERE r.benchmark = ?
GROUP BY r.run_id
"""


def run_health(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """One row per run of ``benchmark``: log status, completed/total, errored/limited/unscored counts, both rates.

    ``is_complete`` is false when the log's status is neither ``success`` nor ``completed`` (Inspect's ``error``,
    ``cancelled``, ``started``), when fewer samples completed than the log counts, or when an attempt errored,
    hit a limit or is unscored. ``superseded_by``: the run of an eval set's retry that replaced this one (the
    leaderboard leaves this one out), else None.
    """
    df = query_df(con, HEALTH_SQL, [benchmark])
    if df.empty:
        return df.assign(is_complete=pd.Series(dtype=bool), superseded_by=pd.Series(dtype=object))
    later = dict(query_df(con, SUPERSEDED_SQL, [benchmark]).itertuples(index=False, name=None))
    df["superseded_by"] = pd.Series([later.get(r) for r in df["run_id"]], index=df.index, dtype=object)
    status_ok = df["log_status"].isna() | df["log_status"].isin(COMPLETE_STATUSES)
    counted = df["total_samples"].isna() | (df["completed_samples"] == df["total_samples"])
    clean = (df[["n_errored", "n_limited", "n_unscored"]] == 0).all(axis=1)
    return df.assign(is_complete=status_ok & counted & clean)


def incomplete_table(df: pd.DataFrame, *, errors_excluded: bool = False) -> pd.DataFrame:
    """The runs that are not complete, for display: the pass rate under the chosen treatment of errors."""
    if df.empty:
        return df
    part = df[~df["is_complete"]].copy()
    rate = "pass_rate_errors_excluded" if errors_excluded else "pass_rate_errors_failed"
    part["completed / total"] = [
        f"{c} / {t}" if pd.notna(t) else f"{n} attempts"
        for c, t, n in zip(part["completed_samples"], part["total_samples"], part["n_attempts"], strict=True)
    ]
    part["Pass rate (%)"] = (100 * part[rate]).round(1)
    if "superseded_by" in part:
        part["log_status"] = [
            f"{s} (superseded by {later}: not ranked)" if isinstance(later, str) else s
            for s, later in zip(part["log_status"], part["superseded_by"], strict=True)
        ]
    return part.rename(
        columns={
            "run_id": "Run",
            "agent": "Agent",
            "log_status": "Log status",
            "n_errored": "Errored",
            "n_limited": "Limit hit",
            "n_unscored": "Unscored",
        }
    )[["Run", "Agent", "Log status", "completed / total", "Errored", "Limit hit", "Unscored", "Pass rate (%)"]]

"""Runs, loaded: the runs a run filter selects (with their columns, baseline flag and log state) and how complete
each run of a benchmark is (``run_health``). The only module of ``analytics.runs`` that queries.

``run_health``: its log status, completed/total samples, errored, limited, unscored and partial-trace attempts, and its pass rate
with errored attempts counted as failures or left out. The leaderboard counts an errored attempt (status
``crashed``) as a failure; Inspect's own accuracy leaves errored samples out. Both rates are given here so the
difference is never silent. Samples stopped by a limit (``timeout``) were scored by Inspect and count in both.
Unscored attempts (empty score) count in neither.
"""

from __future__ import annotations

import duckdb
import pandas as pd

from analytics import compare
from analytics.runs.compute import RUN_STATE_SQL, with_completeness, with_health
from analytics.sqlfiles import load_sql
from store import ALL_RUNS, RunFilter, query_df, query_rows
from store.retries import IS_SUPERSEDED_SQL, RETRY_OF_SQL, latest_key

# A run's own columns, as every view that lists runs selects them (``r.`` the runs table): the one list.
RUN_COLUMNS = ("run_id", "agent", "agent_version", "family", "kind", "eval_date")
RUN_SELECT = ", ".join(f"r.{c}" for c in RUN_COLUMNS)

HEALTH_SQL = """
WITH held AS (  -- the runs' attempts, counted per run by the writer (run_health_sums: its run_task_stats rows summed)
    SELECT rc.run_id, h.n_attempts, h.n_errored, h.n_limited, h.n_unscored, h.n_scored, h.n_scored_passed, h.n_kept,
           h.n_kept_passed
    FROM run_health_sums h JOIN tmf_run_codes rc ON rc.run_code = h.run_code
)
SELECT r.run_id, r.agent, r.status AS log_status,
       TRY_CAST(json_extract_string(r.extra, '$.completed_samples') AS INTEGER) AS completed_samples,
       TRY_CAST(json_extract_string(r.extra, '$.total_samples') AS INTEGER) AS total_samples,
       coalesce(h.n_attempts, 0)::BIGINT AS n_attempts,
       coalesce(h.n_errored, 0)::BIGINT AS n_errored,
       coalesce(h.n_limited, 0)::BIGINT AS n_limited,
       coalesce(h.n_unscored, 0)::BIGINT AS n_unscored,
       -- the share of passes among scored attempts (errored ones as failures / left out), as a mean of 1.0 and 0.0
       CASE WHEN h.n_scored > 0 THEN h.n_scored_passed::DOUBLE / h.n_scored::DOUBLE END AS pass_rate_errors_failed,
       CASE WHEN h.n_kept > 0 THEN h.n_kept_passed::DOUBLE / h.n_kept::DOUBLE END AS pass_rate_errors_excluded
FROM runs r LEFT JOIN held h USING (run_id)
WHERE r.benchmark = $benchmark
ORDER BY r.run_id
"""
# Attempts stored from a trace without its root span (the OTLP reader's and receiver's ``trace_partial`` mark), per
# run. Only the attempts of OTLP files are read (the only reader that writes the mark): a store without any reads
# no attempt, and the file list is a semi join, which DuckDB pushes into the attempts scan.
OTLP_FILES_SQL = "SELECT file_id FROM ingest_log WHERE format = 'otlp' ORDER BY file_id"
PARTIAL_SQL = """
SELECT a.run_id, count(*) AS n_partial
FROM attempts a SEMI JOIN (SELECT unnest(?::BIGINT[]) AS file_id) f ON a.file_id = f.file_id
JOIN runs r USING (run_id)
WHERE r.benchmark = ? AND json_exists(a.extra, '$.trace_partial')
GROUP BY a.run_id
"""


def load_runs(con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS) -> pd.DataFrame:
    """The runs of one benchmark that match the filter (``RUN_COLUMNS``, is_baseline, and log_status, completed,
    total, is_complete, inspect_results, headline_scorer), newest first; ``is_baseline`` is
    ``compare.IS_BASELINE_SQL``. A run a retry superseded is left out (a later Inspect log of the same
    ``eval.task_id``: ``eval_retry`` keeps it, in an eval set or not). ``is_complete``: the log's
    status is a finished one (or unknown: not an Inspect log) and it holds every sample it counts (``total``).
    The filter names the benchmark (none: no run)."""
    sql = load_sql("leaderboard_runs").replace("$is_baseline", compare.IS_BASELINE_SQL)
    sql = sql.replace("$is_superseded", IS_SUPERSEDED_SQL).replace("$run_state", RUN_STATE_SQL)
    runs = query_df(con, sql.replace("$run_columns", RUN_SELECT), run_filter.params())
    counted = runs["run_id"][runs["total"].notna()].astype(str).tolist()  # logs that say how many samples they hold
    held = dict(query_rows(con, load_sql("run_attempt_counts"), {"run_ids": counted})) if counted else {}
    return with_completeness(runs, held)


# run health in one statement: HEALTH_SQL's rows ({health}, put in at the call), each run's retry (``later``: a
# later Inspect log of the same ``eval.task_id``, which ``eval_retry`` keeps in an eval set or not;
# ``store.retries``' rule, the leaderboard's, over one read of the benchmark's runs) and whether the store holds an
# OTLP file (only then are partial traces looked for). At 10M attempts on a lake each statement reads its tables'
# catalog entries: 0.065-0.075 CPU s against 0.09-0.1 for the three statements.
HEALTH_PAGE_SQL = f"""
WITH health AS ({{health}}),
benchmark_runs AS MATERIALIZED (SELECT run_id, benchmark, extra FROM runs WHERE benchmark = $benchmark),
later AS (
    -- the retry that stands: the latest (an eval set retries up to 10 times, each retry keeping the task id)
    SELECT r.run_id,
           arg_max(later.run_id, {latest_key("later")}) AS superseded_by
    FROM benchmark_runs r JOIN benchmark_runs later
      ON {RETRY_OF_SQL}
    GROUP BY r.run_id
)
SELECT h.*, l.superseded_by AS _superseded_by,
       EXISTS (SELECT 1 FROM ingest_log WHERE format = 'otlp') AS _has_otlp
FROM health h LEFT JOIN later l USING (run_id)
ORDER BY h.run_id
"""


def run_health(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """One row per run of ``benchmark``: log status, completed/total, errored/limited/unscored counts, both rates.

    ``is_complete`` is false when the log's status is neither ``success`` nor ``completed`` (Inspect's ``error``,
    ``cancelled``, ``started``), when fewer samples completed than the log counts, or when an attempt errored,
    hit a limit or is unscored, or when it holds partial traces (``n_partial``: attempts stored from a trace whose
    root span never arrived, marked ``trace_partial``). ``superseded_by``: the run of the retry that
    replaced this one (an eval set's or a plain ``inspect eval-retry``'s; the latest of several), else None (the
    leaderboard leaves a superseded run out).
    """
    both = query_df(con, HEALTH_PAGE_SQL.replace("{health}", HEALTH_SQL), {"benchmark": benchmark})
    df = both.drop(columns=["_superseded_by", "_has_otlp"])
    later = {str(r): str(s) for r, s in zip(both["run_id"], both["_superseded_by"], strict=True) if pd.notna(s)}
    has_otlp = not both.empty and bool(both["_has_otlp"].iloc[0])
    files = [int(f) for (f,) in query_rows(con, OTLP_FILES_SQL)] if has_otlp else []
    partial = dict(query_rows(con, PARTIAL_SQL, [files, benchmark])) if files else {}
    return with_health(df, later, partial)

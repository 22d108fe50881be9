"""The pages' reads as they were computed from every attempt before the per (run, task) aggregate (issue 33):
tests/test_aggregates.py runs the pages with these and with the aggregate and compares the results. The SQL is
the text the analytics modules held before migration 008 (run_health's benchmark as a named parameter; the
error queries' list of sources as the bits the page passes now, label 1, rule 2, judge 4)."""

from __future__ import annotations

from analytics import irt

SQL_FILES = {
    "task_outcomes": """
-- One row per (run, task) of the given runs: samples, successes, mean score, tool calls and cost.
-- Lean on purpose: only the two keys are text (run and task details are separate, small queries), since turning
-- text into Python objects costs more than the aggregation itself (86k rows at 1M attempts).
-- Parameters: $run_ids (list; the runs that match the page's filters, from leaderboard_runs.sql);
-- $exclude_errored: leave errored attempts (status crashed) out, as Inspect's accuracy does, instead of counting
-- them as failures (the default).
SELECT a.run_id, a.task_id,
       count(*)               AS n,
       count_if(a.passed)     AS c,
       avg(a.score)           AS score,
       avg(a.n_tool_calls)    AS steps,
       avg(a.cost_usd)        AS cost_usd
FROM attempts a
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
WHERE a.score IS NOT NULL  -- an unscored attempt (Inspect sample before `inspect score`) is neither pass nor fail
  AND NOT ($exclude_errored AND a.status = 'crashed')
GROUP BY a.run_id, a.task_id
ORDER BY a.run_id, a.task_id
""",
    "run_attempt_counts": """
-- Attempts held per run, for the runs given ($run_ids: those whose log counts its samples, i.e. Inspect runs).
SELECT a.run_id, count(*) AS n
FROM attempts a
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
GROUP BY a.run_id
""",
    "tmf_run_tasks": """
-- Tech-Market-Fit input: one row per (run, task) of a benchmark (human runs always included): samples, successes,
-- mean score, cost, tokens and latency. Lean on purpose: the run's and the task's details are read by two small
-- queries and attached in pandas (one text value per row costs more than the aggregation itself).
-- Parameters: the run filter's (store/filters.py) with $with_humans true; $benchmark is required here.
WITH runs_in AS (
    SELECT r.run_id
    FROM runs r
    WHERE r.benchmark = $benchmark AND $run_filter
)
SELECT a.run_id, a.task_id,
       count(*)                 AS n,
       count_if(a.passed)       AS c,
       avg(a.score)             AS score,
       avg(a.cost_usd)          AS cost_usd,
       avg(a.input_tokens)      AS input_tokens,
       avg(a.output_tokens)     AS output_tokens,
       avg(a.latency_s)         AS latency_s
FROM attempts a
JOIN runs_in r USING (run_id)
GROUP BY a.run_id, a.task_id
ORDER BY a.run_id, a.task_id
""",
    "error_failed": """
-- Attempts and failed attempts per (run, level, category) for the runs an error report covers.
-- Parameters: the run filter's (store/filters.py).
SELECT r.run_id, r.benchmark, r.agent, r.agent_version, r.kind, r.eval_date, t.level, t.category,
       count(*) AS n_attempts, count_if(a.passed = false) AS n_failed
FROM runs r
JOIN attempts a USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
WHERE $run_filter
GROUP BY ALL
ORDER BY r.run_id, t.level, t.category
""",
    "error_cells": """
-- Error labels on failed attempts counted per (run, level, category, code): distinct attempts per cell, so a code
-- reported by several sources (log label, rule, judge) or at several steps of one attempt counts once.
-- Parameters: the run filter's (store/filters.py), $sources (list or NULL).
WITH runs_in AS (
    SELECT r.run_id, r.benchmark
    FROM runs r
    WHERE $run_filter
),
failed AS (
    SELECT a.attempt_id, a.run_id, t.level, t.category
    FROM attempts a
    JOIN runs_in r USING (run_id)
    LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
    WHERE a.passed = false
),
labels AS (
    SELECT DISTINCT e.attempt_id, e.code
    FROM error_labels e
    WHERE (CASE e.source WHEN 'label' THEN 1 WHEN 'rule' THEN 2 WHEN 'judge' THEN 4 END & $sources_mask) <> 0
)
SELECT f.run_id, f.level, f.category, l.code, count(*) AS n
FROM failed f
JOIN labels l USING (attempt_id)
GROUP BY ALL
ORDER BY f.run_id, f.level, f.category, l.code
""",
    "error_cooccurrence": """
-- Pairs of codes carried by the same failed attempt, counted per run (the diagonal: attempts with the code).
-- Parameters: the run filter's (store/filters.py), $sources (list or NULL).
WITH failed AS (
    SELECT a.attempt_id, a.run_id
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE a.passed = false
      AND $run_filter
),
labels AS (
    SELECT DISTINCT f.run_id, e.attempt_id, e.code
    FROM error_labels e
    JOIN failed f USING (attempt_id)
    WHERE (CASE e.source WHEN 'label' THEN 1 WHEN 'rule' THEN 2 WHEN 'judge' THEN 4 END & $sources_mask) <> 0
)
SELECT x.run_id, x.code AS code_a, y.code AS code_b, count(*) AS n
FROM labels x
JOIN labels y ON x.attempt_id = y.attempt_id
GROUP BY ALL
ORDER BY x.run_id, code_a, code_b
""",
}
# task_outcome_rows.sql has no order (the leaderboard numbers its rows itself; the diff orders them)
SQL_FILES["task_outcome_rows"] = SQL_FILES.pop("task_outcomes").replace("ORDER BY a.run_id, a.task_id\n", "")
assert "ORDER BY" not in SQL_FILES["task_outcome_rows"]

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
WHERE r.benchmark = $benchmark
GROUP BY ALL
ORDER BY r.run_id
"""

RAW_SQL = (
    irt.SUBJECTS_CTE
    + """
SELECT subject, avg(coalesce(a.passed, false)::INTEGER) AS raw_score, count(DISTINCT a.task_id) AS n_tasks_answered
FROM attempts a JOIN subj USING (run_id)
GROUP BY subject
"""
)

N_TASKS_SQL = "SELECT count(DISTINCT a.task_id) AS n FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?"

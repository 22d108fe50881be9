-- The runs of a benchmark that match the filters, newest first; the order of the leaderboard's rows.
-- Parameters: the run filter's (store/filters.py); $benchmark is required here.
-- is_baseline: the run says it is a reference, not a competitor (`gem_role: baseline`, or `role: baseline`;
-- both are unknown run fields, kept in extra). $is_baseline is replaced by analytics.compare.IS_BASELINE_SQL
-- (a constant expression, not a value), the one definition shared with TMF; $run_columns by the one list of a
-- run's own columns (analytics.runs.RUN_COLUMNS).
-- $run_state: log_status, completed, total, the log's own status and sample counts (Inspect's status and results,
-- kept in the run; analytics.runs.RUN_STATE_SQL, which TMF and Version diff read too); analytics.runs.load_runs
-- counts the attempts of runs with a total and derives is_complete.
-- A run superseded by a retry is left out: a later Inspect log with the same `eval.task_id`, which `eval_retry` keeps
-- (an eval set's retries and a plain `inspect eval-retry` alike; every other eval gets a new task id). $is_superseded
-- is replaced by store.retries.IS_SUPERSEDED_SQL, the one definition (run health, TMF, Version diff, Progress and the
-- ingest line read it too).
SELECT $run_columns, $is_baseline AS is_baseline, $run_state,
       json_extract(r.extra, '$.results') AS inspect_results,
       json_extract_string(r.extra, '$.scorer') AS headline_scorer
FROM runs r
WHERE r.benchmark = $benchmark AND $run_filter
  AND NOT $is_superseded
ORDER BY r.eval_date DESC NULLS LAST, r.agent, r.run_id

-- The runs of a benchmark that match the filters, newest first; the order of the leaderboard's rows.
-- Parameters: the run filter's (store/filters.py); $benchmark is required here.
-- is_baseline: the run says it is a reference, not a competitor (`gem_role: baseline`, or `role: baseline`;
-- both are unknown run fields, kept in extra). $is_baseline is replaced by analytics.compare.IS_BASELINE_SQL
-- (a constant expression, not a value), the one definition shared with TMF.
SELECT r.run_id, r.agent, r.agent_version, r.family, r.kind, r.eval_date, $is_baseline AS is_baseline
FROM runs r
WHERE r.benchmark = $benchmark AND $run_filter
ORDER BY r.eval_date DESC NULLS LAST, r.agent, r.run_id

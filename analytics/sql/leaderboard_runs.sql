-- The runs of a benchmark that match the filters, newest first; the order of the leaderboard's rows.
-- Parameters: $benchmark, $agents (list or NULL), $date_from, $date_to (dates or NULL), $run_ids (list or NULL).
-- is_baseline: the run says it is a reference, not a competitor (`gem_role: baseline`, or `role: baseline`;
-- both are unknown run fields, kept in extra). $is_baseline is replaced by analytics.compare.IS_BASELINE_SQL
-- (a constant expression, not a value), the one definition shared with TMF.
SELECT run_id, agent, agent_version, family, kind, eval_date, $is_baseline AS is_baseline
FROM runs
WHERE benchmark = $benchmark
  AND ($agents IS NULL OR list_contains($agents, agent))
  AND ($run_ids IS NULL OR list_contains($run_ids, run_id))
  AND ($date_from IS NULL OR eval_date >= $date_from)
  AND ($date_to IS NULL OR eval_date <= $date_to)
ORDER BY eval_date DESC NULLS LAST, agent, run_id

-- task_outcome_rows.sql for one scorer of the scores table (its current revision) instead of the headline score.
-- Parameters: $run_ids, $scorer, $threshold (a value at or above it passes; +inf: no pass rate), $exclude_errored.
-- An attempt that errored or hit a limit and has no value for the scorer counts 0, as its headline does; a
-- completed attempt without one (not scored by it) is left out.
SELECT a.run_id, a.task_id,
       count(*)                                  AS n,
       count_if(v.value >= $threshold)           AS c,
       avg(v.value)                              AS score,
       avg(a.n_tool_calls)                       AS steps,
       avg(a.cost_usd)                           AS cost_usd
FROM attempts a
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
LEFT JOIN scores s ON s.attempt_id = a.attempt_id AND s.scorer = $scorer AND s.is_current
CROSS JOIN LATERAL (SELECT coalesce(s.value, CASE WHEN a.status <> 'completed' THEN 0.0 END) AS value) v
WHERE v.value IS NOT NULL
  AND NOT ($exclude_errored AND a.status = 'crashed')
GROUP BY a.run_id, a.task_id
ORDER BY a.run_id, a.task_id

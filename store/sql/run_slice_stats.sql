-- run_slice_stats rows of the runs in the temporary table _rl_agg_keys, from their run_task_stats rows (refreshed
-- first, in the same transaction). Migration 009's backfill is the same SELECT over every run.
SELECT s.run_id, t.level, t.category, sum(s.n_attempts), sum(s.n_failed)
FROM run_task_stats s
JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = s.task_id
SEMI JOIN (SELECT DISTINCT run_id FROM _rl_agg_keys) k ON k.run_id = s.run_id
GROUP BY s.run_id, t.level, t.category

-- run_slice_codes rows of the runs in the temporary table _rl_agg_keys, from their run_task_codes rows (refreshed
-- first, in the same transaction). Migration 009's backfill is the same SELECT over every run.
SELECT c.run_id, t.level, t.category, c.code, c.sources_mask, sum(c.n_failed)
FROM run_task_codes c
JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = c.task_id
SEMI JOIN (SELECT DISTINCT run_id FROM _rl_agg_keys) k ON k.run_id = c.run_id
GROUP BY c.run_id, t.level, t.category, c.code, c.sources_mask

-- Attempts held per run, for the runs given ($run_ids: those whose log counts its samples, i.e. Inspect runs),
-- from the per (run, task) aggregate (run_task_stats).
SELECT s.run_id, sum(s.n_attempts)::BIGINT AS n
FROM run_task_stats s
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
GROUP BY s.run_id

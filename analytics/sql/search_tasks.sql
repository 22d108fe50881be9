-- One run's tasks and their attempts in task_id order, from the aggregate kept at ingest (run_task_stats), so an
-- indexed search reads a large run in parts of whole tasks (analytics/search/load.py, compute.run_windows).
-- Parameters: $run_id.
SELECT task_id, n_attempts
FROM run_task_stats
WHERE run_id = $run_id
ORDER BY task_id

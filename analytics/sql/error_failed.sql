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

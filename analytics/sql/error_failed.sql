-- Attempts and failed attempts per (run, level, category) for the runs an error report covers, summed from the
-- per (run, task) aggregate the writer keeps (run_task_stats, migration 008) instead of every attempt.
-- Parameters: the run filter's (store/filters.py).
SELECT r.run_id, r.benchmark, r.agent, r.agent_version, r.kind, r.eval_date, t.level, t.category,
       sum(s.n_attempts)::BIGINT AS n_attempts, sum(s.n_failed)::HUGEINT AS n_failed  -- HUGEINT as count_if gave it
FROM runs r
JOIN run_task_stats s USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = s.task_id
WHERE $run_filter
GROUP BY ALL
ORDER BY r.run_id, t.level, t.category

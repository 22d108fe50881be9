-- Attempts and failed attempts per (run, level, category) for the runs an error report covers, read from the per
-- (run, slice) sums the writer keeps (run_slice_stats, migration 009, themselves sums of run_task_stats: 008)
-- instead of every attempt or every (run, task) row.
-- Parameters: the run filter's (store/filters.py).
SELECT r.run_id, r.benchmark, r.agent, r.agent_version, r.kind, r.eval_date, s.level, s.category,
       sum(s.n_attempts)::BIGINT AS n_attempts, sum(s.n_failed)::HUGEINT AS n_failed  -- HUGEINT as count_if gave it
FROM runs r
JOIN run_slice_stats s USING (run_id)
WHERE $run_filter
GROUP BY ALL
ORDER BY r.run_id, s.level, s.category

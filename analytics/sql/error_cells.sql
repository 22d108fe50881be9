-- Error labels on failed attempts counted per (run, level, category, code): distinct attempts per cell, so a code
-- reported by several sources (log label, rule, judge) or at several steps of one attempt counts once. Read from
-- the aggregate the writer keeps (run_task_codes, migration 008: failed attempts per run, task, code and set of
-- sources), summing the attempts whose sources share one with the chosen ones.
-- Parameters: the run filter's (store/filters.py), $sources_mask (label 1, rule 2, judge 4; all: 7).
WITH runs_in AS (
    SELECT r.run_id, r.benchmark
    FROM runs r
    WHERE $run_filter
)
SELECT c.run_id, t.level, t.category, c.code, sum(c.n_failed)::BIGINT AS n
FROM run_task_codes c
JOIN runs_in r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = c.task_id
WHERE (c.sources_mask & $sources_mask) <> 0
GROUP BY ALL
ORDER BY c.run_id, t.level, t.category, c.code

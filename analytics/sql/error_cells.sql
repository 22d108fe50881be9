-- Error labels on failed attempts counted per (run, level, category, code): distinct attempts per cell, so a code
-- reported by several sources (log label, rule, judge) or at several steps of one attempt counts once.
-- Parameters: the run filter's (store/filters.py), $sources (list or NULL).
WITH runs_in AS (
    SELECT r.run_id, r.benchmark
    FROM runs r
    WHERE $run_filter
),
failed AS (
    SELECT a.attempt_id, a.run_id, t.level, t.category
    FROM attempts a
    JOIN runs_in r USING (run_id)
    LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
    WHERE a.passed = false
),
labels AS (
    SELECT DISTINCT e.attempt_id, e.code
    FROM error_labels e
    WHERE $sources IS NULL OR list_contains($sources, e.source)
)
SELECT f.run_id, f.level, f.category, l.code, count(*) AS n
FROM failed f
JOIN labels l USING (attempt_id)
GROUP BY ALL
ORDER BY f.run_id, f.level, f.category, l.code

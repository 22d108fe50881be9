-- Error labels on failed attempts counted per (run, level, category, code): distinct attempts per cell, so a code
-- reported by several sources (log label, rule, judge) or at several steps of one attempt counts once.
-- Parameters: $benchmark (or NULL), $agents (list or NULL), $date_from, $date_to, $sources (list or NULL).
WITH runs_in AS (
    SELECT run_id, benchmark
    FROM runs
    WHERE ($benchmark IS NULL OR benchmark = $benchmark)
      AND ($agents IS NULL OR list_contains($agents, agent))
      AND ($date_from IS NULL OR eval_date >= $date_from)
      AND ($date_to IS NULL OR eval_date <= $date_to)
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

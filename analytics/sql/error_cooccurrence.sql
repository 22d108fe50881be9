-- Pairs of codes carried by the same failed attempt, counted per run (the diagonal: attempts with the code).
-- Parameters: the run filter's (store/filters.py), $sources (list or NULL).
WITH failed AS (
    SELECT a.attempt_id, a.run_id
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE a.passed = false
      AND $run_filter
),
labels AS (
    SELECT DISTINCT f.run_id, e.attempt_id, e.code
    FROM error_labels e
    JOIN failed f USING (attempt_id)
    WHERE $sources IS NULL OR list_contains($sources, e.source)
)
SELECT x.run_id, x.code AS code_a, y.code AS code_b, count(*) AS n
FROM labels x
JOIN labels y ON x.attempt_id = y.attempt_id
GROUP BY ALL
ORDER BY x.run_id, code_a, code_b

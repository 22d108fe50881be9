-- Pairs of codes carried by the same failed attempt, counted per run (the diagonal: attempts with the code).
-- Parameters: $benchmark (or NULL), $agents (list or NULL), $date_from, $date_to, $sources (list or NULL),
-- $run_ids (list or NULL).
WITH failed AS (
    SELECT a.attempt_id, a.run_id
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE a.passed = false
      AND ($benchmark IS NULL OR r.benchmark = $benchmark)
      AND ($agents IS NULL OR list_contains($agents, r.agent))
      AND ($date_from IS NULL OR r.eval_date >= $date_from)
      AND ($date_to IS NULL OR r.eval_date <= $date_to)
      AND ($run_ids IS NULL OR list_contains($run_ids, r.run_id))
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

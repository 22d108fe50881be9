-- Failed attempts of one run carrying a code (and optionally a second code), with every code they carry.
-- Parameters: $run_id, $code (or NULL), $code_b (or NULL), $level (or NULL), $category (or NULL),
-- $sources (list or NULL), $limit, $lo and $hi (the run's attempt ids: constants the scans of labels and attempts
-- skip row groups by, so a run's labels are not looked for among every label of the store).
-- The rows shown (at most $limit, by task and sample) are picked from the labels and the attempts' keys first;
-- only those rows' status and answer are read.
WITH labels AS (
    SELECT e.attempt_id, e.code, e.source, a.task_id, a.sample
    FROM error_labels e
    JOIN attempts a USING (attempt_id)
    WHERE a.run_id = $run_id AND a.passed = false
      AND e.attempt_id BETWEEN $lo AND $hi AND a.attempt_id BETWEEN $lo AND $hi
      AND ($sources IS NULL OR list_contains($sources, e.source))
),
per_attempt AS (
    SELECT attempt_id, any_value(task_id) AS task_id, any_value(sample) AS sample,
           list(DISTINCT code ORDER BY code) AS codes, list(DISTINCT source ORDER BY source) AS sources
    FROM labels
    GROUP BY attempt_id
),
picked AS (
    SELECT p.*, t.level, t.category
    FROM per_attempt p
    LEFT JOIN tasks t ON t.benchmark = (SELECT benchmark FROM runs WHERE run_id = $run_id) AND t.task_id = p.task_id
    WHERE ($code IS NULL OR list_contains(p.codes, $code))
      AND ($code_b IS NULL OR list_contains(p.codes, $code_b))
      AND ($level IS NULL OR t.level = $level)
      AND ($category IS NULL OR t.category = $category)
    ORDER BY p.task_id, p.sample
    LIMIT $limit
)
SELECT a.run_id, p.task_id, p.sample, p.level, p.category, array_to_string(p.codes, ', ') AS codes,
       array_to_string(p.sources, ', ') AS sources, a.status, a.answer
FROM picked p
JOIN attempts a USING (attempt_id)
WHERE a.attempt_id BETWEEN $lo AND $hi
ORDER BY p.task_id, p.sample

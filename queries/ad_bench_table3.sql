-- title: AD-Bench Table 3: error types on failed attempts
-- description: Paper snapshot (runs evaluated 2026-01-15). Count of each error code (labels from the logs) on failed attempts; n_errors = sum of the six paper codes; n_total = every label on failed attempts (REDUNDANT, NO_TOOL and TOOL included).
WITH failed AS (
    SELECT attempt_id, agent
    FROM v_attempts
    WHERE benchmark = 'ad-bench' AND eval_date = DATE '2026-01-15' AND NOT passed
),
labels AS (
    SELECT f.agent, e.code
    FROM failed f
    JOIN error_labels e USING (attempt_id)
    WHERE e.source = 'label'
)
SELECT agent                                                             AS model,
       count(*) FILTER (code = 'TE')                                     AS te,
       count(*) FILTER (code = 'PE')                                     AS pe,
       count(*) FILTER (code = 'DE')                                     AS de,
       count(*) FILTER (code = 'CE')                                     AS ce,
       count(*) FILTER (code = 'HAL')                                    AS hal,
       count(*) FILTER (code = 'LC')                                     AS lc,
       count(*) FILTER (code IN ('TE', 'PE', 'DE', 'CE', 'HAL', 'LC'))   AS n_errors,
       count(*)                                                          AS n_total
FROM labels
GROUP BY agent
ORDER BY n_errors, model;

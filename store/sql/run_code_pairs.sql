-- run_code_pairs rows of the runs of the attempts in _rl_agg_attempts, with their error labels in _rl_agg_labels
-- (CTEs store/aggregates.py puts around this SELECT: every attempt of those runs): pairs of codes on one failed
-- attempt (the diagonal too), by each code's set of sources (label 1, rule 2, judge 4). Migration 008's backfill is
-- the same SELECT over every run.
WITH per_attempt AS (
    SELECT a.run_id, e.attempt_id, e.code,
           bit_or(CASE e.source WHEN 'label' THEN 1 WHEN 'rule' THEN 2 WHEN 'judge' THEN 4 ELSE 0 END) AS sources_mask
    FROM _rl_agg_labels e
    JOIN _rl_agg_attempts a USING (attempt_id)
    WHERE a.passed = false
      AND e.attempt_id BETWEEN $lo AND $hi  -- the attempts' ids: a constant range the scan of labels skips by
    GROUP BY a.run_id, e.attempt_id, e.code
)
SELECT x.run_id, x.code AS code_a, x.sources_mask AS mask_a, y.code AS code_b, y.sources_mask AS mask_b, count(*) AS n
FROM per_attempt x
JOIN per_attempt y ON x.attempt_id = y.attempt_id
GROUP BY ALL

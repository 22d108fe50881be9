-- run_task_codes rows of the (run, task) pairs of the attempts in _rl_agg_attempts, with their error labels in
-- _rl_agg_labels (CTEs store/aggregates.py puts around this SELECT): the failed attempts carrying each code, by the
-- set of sources that gave it (label 1, rule 2, judge 4). Migration 008's backfill is the same SELECT over every
-- pair.
WITH per_attempt AS (
    SELECT a.run_id, a.task_id, e.attempt_id, e.code,
           bit_or(CASE e.source WHEN 'label' THEN 1 WHEN 'rule' THEN 2 WHEN 'judge' THEN 4 ELSE 0 END) AS sources_mask
    FROM _rl_agg_labels e
    JOIN _rl_agg_attempts a USING (attempt_id)
    WHERE a.passed = false
      AND e.attempt_id BETWEEN $lo AND $hi  -- the attempts' ids: a constant range the scan of labels skips by
    GROUP BY a.run_id, a.task_id, e.attempt_id, e.code
)
SELECT run_id, task_id, code, sources_mask, count(*) AS n_failed
FROM per_attempt
GROUP BY run_id, task_id, code, sources_mask

-- run_label_codes rows of the runs in the temporary table _rl_agg_keys: per label source and code, the run's
-- attempts (passed or not) that carry it. Migration 009's backfill is the same SELECT over every run.
SELECT a.run_id, e.source, e.code, count(DISTINCT e.attempt_id)
FROM error_labels e
JOIN attempts a USING (attempt_id)
SEMI JOIN (SELECT DISTINCT run_id FROM _rl_agg_keys) k ON k.run_id = a.run_id
WHERE e.attempt_id BETWEEN $lo AND $hi  -- the keys' attempts' ids: a constant range the scan of labels skips by
GROUP BY a.run_id, e.source, e.code

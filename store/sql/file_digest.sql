-- A digest of the attempt rows one ingested file brought (recorded at ingest, re-checked by doctor).
-- Parameter: $file_id.
SELECT md5(coalesce(string_agg(concat_ws('|', run_id, task_id, sample, score, passed, status, n_steps,
                                         coalesce(cost_usd, -1)), ','
                               ORDER BY run_id, task_id, sample), '')) AS rows_digest
FROM attempts
WHERE file_id = $file_id

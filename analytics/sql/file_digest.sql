-- A digest of the attempt rows one ingested file brought (recorded at ingest, re-checked by doctor), with the
-- number of step rows actually present for them. Parameter: $file_id.
WITH file_attempts AS (
    SELECT * FROM attempts WHERE file_id = $file_id
)
SELECT (SELECT count(*) FROM file_attempts) AS n_attempts,
       (SELECT count(*) FROM steps s JOIN file_attempts a USING (attempt_id)) AS n_steps,
       (SELECT md5(coalesce(string_agg(concat_ws('|', run_id, task_id, sample, score, passed, status, n_steps,
                                                 coalesce(cost_usd, -1)), ','
                                       ORDER BY run_id, task_id, sample), ''))
        FROM file_attempts) AS rows_digest

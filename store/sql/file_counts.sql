-- The attempt rows one ingested file brought, and the step rows present for them (checked by doctor against
-- the counts ingest_log recorded). Parameter: $file_id.
WITH file_attempts AS (
    SELECT attempt_id FROM attempts WHERE file_id = $file_id
)
SELECT (SELECT count(*) FROM file_attempts) AS n_attempts,
       (SELECT count(*) FROM steps s JOIN file_attempts a USING (attempt_id)) AS n_steps

-- Attempts the run filter keeps that transcript search's index (idx, store/search_index.py) does not cover, and
-- the smallest of their ids (ingest numbers attempts upwards, so the scan of steps can skip everything below it).
-- covered_files is analytics/sql/search_covered.sql.
WITH kept AS (
    SELECT a.attempt_id, a.file_id
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE $run_filter
),
{covered}
SELECT count(*), min(k.attempt_id)
FROM kept k
WHERE k.file_id IS NULL OR k.file_id NOT IN (SELECT file_id FROM covered_files)

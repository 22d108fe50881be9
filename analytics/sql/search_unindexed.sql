-- Attempts of the runs the filter keeps that transcript search's index does not cover, and the smallest of their
-- ids (ingest numbers attempts upwards, so the scan of steps can skip everything below it). Parameters: the run
-- filter's, $no_file; the uncovered placeholder: the files of ingest_log no segment covers, as integer literals (few, the
-- newest: the zone maps of attempts.file_id skip the rest). $no_file: attempts without a file too.
SELECT count(*), min(a.attempt_id)
FROM attempts a
WHERE (a.file_id IN ({uncovered}) OR ($no_file AND a.file_id IS NULL))
  AND a.run_id IN (SELECT r.run_id FROM runs r WHERE $run_filter)

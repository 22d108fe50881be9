-- Transcript search through its index: one run's attempts in the order search lists its hits (by task, then
-- sample), so a run far larger than the page needs is read in slices of whole tasks (analytics/search/load.py),
-- each by the few ranges of attempt ids its attempts hold. task_start: the task id at the first attempt of each
-- task, else null. Parameters: $run, $lo, $hi (the run's attempt ids).
SELECT a.attempt_id,
       CASE WHEN a.task_id IS DISTINCT FROM lag(a.task_id) OVER w THEN a.task_id END AS task_start
FROM attempts a
WHERE a.attempt_id BETWEEN $lo AND $hi AND a.run_id = $run
WINDOW w AS (ORDER BY a.task_id, a.sample, a.attempt_id)
ORDER BY a.task_id, a.sample, a.attempt_id

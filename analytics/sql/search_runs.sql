-- The runs the filter keeps, in the order search lists its hits, with the range of their attempt ids (transcript
-- search walks them in this order and stops when its page is full). Parameters: the run filter's.
SELECT a.run_id, min(a.attempt_id) AS lo, max(a.attempt_id) AS hi, count(*) AS n
FROM attempts a
WHERE a.run_id IN (SELECT r.run_id FROM runs r WHERE $run_filter)
GROUP BY a.run_id
ORDER BY a.run_id

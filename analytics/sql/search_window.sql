-- Transcript search through its index, one window of runs (analytics/search/load.py walks the runs the filter keeps
-- in run_id order, in windows): the attempts of those runs with a candidate text, in the order search lists its
-- hits, and per attempt how many hits its candidates make (one per step for the inline fields, the answer and a
-- long result apart: search.sql's rule). When holding the query's tokens is the same as matching (if_verify false)
-- these are the hits; otherwise they are checked on the text, attempt by attempt (search_chunk.sql).
-- The candidates placeholder: fixed SQL, per segment the (attempt_id, step, field) whose text holds a token of every chosen run
-- of the query, among the window's attempt ids, counted only when the attempt's file is one that segment covers ($f<i>).
-- The in_ids placeholder: fixed SQL, the window's attempt ids as a few ranges of integer literals (the zone maps
-- skip the rest); in_tasks: true, or for a slice of one run (a stretch of its tasks in the order hits are listed)
-- a.task_id BETWEEN $t0 AND $t1.
-- Parameters: $runs (its run ids), $t0 and $t1 for a slice, $f0.. and the runs' token ids (literals).
WITH win AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed, a.file_id
    FROM attempts a
    WHERE {in_ids} AND list_contains($runs, a.run_id) AND {in_tasks}
),
cand AS (
    {candidates}
)
SELECT w.attempt_id, w.run_id, w.task_id, w.sample, w.passed,
       count(DISTINCT c.step * 8 + CASE WHEN c.field IN (0, 5) THEN c.field ELSE 1 END) AS n_units
FROM cand c
JOIN win w ON w.attempt_id = c.attempt_id
GROUP BY ALL
ORDER BY w.run_id, w.task_id, w.sample

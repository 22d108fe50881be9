-- Tech-Market-Fit input: one row per (run, task) of a benchmark (human runs always included): samples, successes,
-- mean score, cost, tokens and latency. Lean on purpose: the run's and the task's details are read by two small
-- queries and attached in pandas (one text value per row costs more than the aggregation itself).
-- Parameters: the run filter's (store/filters.py) with $with_humans true; $benchmark is required here.
WITH runs_in AS (
    SELECT r.run_id
    FROM runs r
    WHERE r.benchmark = $benchmark AND $run_filter
)
SELECT a.run_id, a.task_id,
       count(*)                 AS n,
       count_if(a.passed)       AS c,
       avg(a.score)             AS score,
       avg(a.cost_usd)          AS cost_usd,
       avg(a.input_tokens)      AS input_tokens,
       avg(a.output_tokens)     AS output_tokens,
       avg(a.latency_s)         AS latency_s
FROM attempts a
JOIN runs_in r USING (run_id)
GROUP BY a.run_id, a.task_id
ORDER BY a.run_id, a.task_id

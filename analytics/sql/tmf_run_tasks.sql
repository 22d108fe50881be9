-- Tech-Market-Fit input: one row per (run, task) of a benchmark (human runs always included): samples, successes,
-- mean score, cost, tokens and latency. Lean on purpose: the run's and the task's details are read by two small
-- queries and attached in pandas (one text value per row costs more than the aggregation itself).
-- Parameters: $benchmark, $agents (list or NULL), $date_from, $date_to (dates or NULL).
WITH runs_in AS (
    SELECT run_id
    FROM runs
    WHERE benchmark = $benchmark
      AND ($agents IS NULL OR kind = 'human' OR list_contains($agents, agent))
      AND ($date_from IS NULL OR eval_date >= $date_from)
      AND ($date_to IS NULL OR eval_date <= $date_to)
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

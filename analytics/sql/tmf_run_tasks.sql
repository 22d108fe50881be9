-- Tech-Market-Fit input: one row per (run, task) of a benchmark (human runs always included): samples, successes,
-- mean score, cost, tokens and latency, read from the aggregate the writer keeps per (run, task) (run_task_stats,
-- migration 008): runs x tasks rows, whatever the number of attempts. Lean on purpose: the run's and the task's
-- details are read by two small queries and attached in pandas (one text value per row costs more than the reading).
-- Parameters: the run filter's (store/filters.py) with $with_humans true; $benchmark is required here.
WITH runs_in AS (
    SELECT r.run_id
    FROM runs r
    WHERE r.benchmark = $benchmark AND $run_filter
)
SELECT s.run_id, s.task_id,
       s.n_attempts             AS n,
       s.n_passed::HUGEINT      AS c,  -- as count_if gave it from the attempts (a float in pandas)
       s.score_mean             AS score,
       s.cost_usd_mean          AS cost_usd,
       s.input_tokens_mean      AS input_tokens,
       s.output_tokens_mean     AS output_tokens,
       s.latency_s_mean         AS latency_s
FROM run_task_stats s
JOIN runs_in r USING (run_id)
ORDER BY s.run_id, s.task_id

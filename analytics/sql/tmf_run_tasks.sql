-- Tech-Market-Fit input: one row per (run, task) of a benchmark with the run's prices and the task's
-- human time. Parameters: $benchmark, $agents (list or NULL), $date_from, $date_to (dates or NULL).
WITH runs_in AS (
    SELECT run_id, benchmark, agent, agent_version, family, kind, eval_date,
           price_input_per_mtok, price_output_per_mtok
    FROM runs
    WHERE benchmark = $benchmark
      AND ($agents IS NULL OR kind = 'human' OR list_contains($agents, agent))
      AND ($date_from IS NULL OR eval_date >= $date_from)
      AND ($date_to IS NULL OR eval_date <= $date_to)
),
per_task AS (
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
)
SELECT r.run_id, r.agent, r.agent_version, r.family, r.kind, r.eval_date,
       r.price_input_per_mtok, r.price_output_per_mtok,
       p.task_id, t.level, t.category, t.human_minutes,
       p.n, p.c, p.score, p.cost_usd, p.input_tokens, p.output_tokens, p.latency_s
FROM per_task p
JOIN runs_in r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = p.task_id
ORDER BY r.eval_date NULLS LAST, r.agent, r.run_id, p.task_id

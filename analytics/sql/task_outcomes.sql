-- One row per (run, task) of a benchmark: samples, successes, mean score, tool calls and cost.
-- Parameters: $benchmark, $agents (list or NULL), $date_from, $date_to (dates or NULL), $run_ids (list or NULL).
WITH runs_in AS (
    SELECT run_id, benchmark, agent, agent_version, family, kind, eval_date
    FROM runs
    WHERE benchmark = $benchmark
      AND ($agents IS NULL OR list_contains($agents, agent))
      AND ($run_ids IS NULL OR list_contains($run_ids, run_id))
      AND ($date_from IS NULL OR eval_date >= $date_from)
      AND ($date_to IS NULL OR eval_date <= $date_to)
),
per_task AS (
    SELECT a.run_id, a.task_id,
           count(*)                        AS n,
           count_if(a.passed)              AS c,
           avg(a.score)                    AS score,
           avg(a.n_tool_calls)             AS steps,
           avg(a.cost_usd)                 AS cost_usd
    FROM attempts a
    JOIN runs_in r USING (run_id)
    GROUP BY a.run_id, a.task_id
)
SELECT r.run_id, r.agent, r.agent_version, r.family, r.kind, r.eval_date,
       p.task_id, t.level, t.category, p.n, p.c, p.score, p.steps, p.cost_usd
FROM per_task p
JOIN runs_in r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = p.task_id
ORDER BY r.eval_date DESC NULLS LAST, r.agent, r.run_id, p.task_id

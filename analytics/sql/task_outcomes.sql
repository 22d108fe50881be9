-- One row per (run, task) of a benchmark: samples, successes, mean score, tool calls and cost.
-- Lean on purpose: only the two keys are text (run and task details are separate, small queries), since turning
-- text into Python objects costs more than the aggregation itself (86k rows at 1M attempts).
-- Parameters: $benchmark, $agents (list or NULL), $date_from, $date_to (dates or NULL), $run_ids (list or NULL).
WITH runs_in AS (
    SELECT run_id
    FROM runs
    WHERE benchmark = $benchmark
      AND ($agents IS NULL OR list_contains($agents, agent))
      AND ($run_ids IS NULL OR list_contains($run_ids, run_id))
      AND ($date_from IS NULL OR eval_date >= $date_from)
      AND ($date_to IS NULL OR eval_date <= $date_to)
)
SELECT a.run_id, a.task_id,
       count(*)               AS n,
       count_if(a.passed)     AS c,
       avg(a.score)           AS score,
       avg(a.n_tool_calls)    AS steps,
       avg(a.cost_usd)        AS cost_usd
FROM attempts a
JOIN runs_in r USING (run_id)
GROUP BY a.run_id, a.task_id
ORDER BY a.run_id, a.task_id

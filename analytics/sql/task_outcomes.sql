-- One row per (run, task) of the given runs: samples, successes, mean score, tool calls and cost.
-- Lean on purpose: only the two keys are text (run and task details are separate, small queries), since turning
-- text into Python objects costs more than the aggregation itself (86k rows at 1M attempts).
-- Parameters: $run_ids (list; the runs that match the page's filters, from leaderboard_runs.sql);
-- $exclude_errored: leave errored attempts (status crashed) out, as Inspect's accuracy does, instead of counting
-- them as failures (the default).
SELECT a.run_id, a.task_id,
       count(*)               AS n,
       count_if(a.passed)     AS c,
       avg(a.score)           AS score,
       avg(a.n_tool_calls)    AS steps,
       avg(a.cost_usd)        AS cost_usd
FROM attempts a
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
WHERE a.score IS NOT NULL  -- an unscored attempt (Inspect sample before `inspect score`) is neither pass nor fail
  AND NOT ($exclude_errored AND a.status = 'crashed')
GROUP BY a.run_id, a.task_id
ORDER BY a.run_id, a.task_id

-- task_outcomes.sql without its order: the rows analytics/leaderboard/load.py numbers (run and task keys as
-- integer codes, each distinct key turned into a Python string once) and orders by those codes. Keep the two
-- files' SELECT the same (tests/test_leaderboard_codes.py compares their results).
SELECT s.run_id, s.task_id,
       CASE WHEN $exclude_errored THEN s.n_kept ELSE s.n_scored END                         AS n,
       (CASE WHEN $exclude_errored THEN s.n_kept_passed ELSE s.n_scored_passed END)::HUGEINT AS c,
       CASE WHEN $exclude_errored THEN s.score_mean_kept ELSE s.score_mean END              AS score,
       CASE WHEN $exclude_errored THEN s.tool_calls_mean_kept ELSE s.tool_calls_mean_scored END AS steps,
       CASE WHEN $exclude_errored THEN s.cost_usd_mean_kept ELSE s.cost_usd_mean_scored END AS cost_usd
FROM run_task_stats s
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
WHERE CASE WHEN $exclude_errored THEN s.n_kept ELSE s.n_scored END > 0

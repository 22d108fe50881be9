-- title: Runs at a glance
-- description: One row per run from the v_runs view: attempts, pass rate, mean score, tokens, cost and latency.
SELECT benchmark, agent, agent_version, kind, eval_date, n_tasks, n_attempts,
       round(100 * pass_rate, 1) AS pass_rate_pct, round(mean_score, 3) AS mean_score,
       round(cost_usd, 4) AS cost_usd, round(mean_latency_s, 1) AS mean_latency_s
FROM v_runs
ORDER BY benchmark, eval_date DESC, pass_rate DESC NULLS LAST;

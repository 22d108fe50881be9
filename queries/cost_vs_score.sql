-- title: Cost per task vs score (chart it: x = cost_per_task_usd, y = mean_score_pct, colour = benchmark)
-- description: Mean cost of one task attempt and the mean score per agent, for runs that report cost.
SELECT benchmark, agent,
       round(avg(cost_usd), 5)        AS cost_per_task_usd,
       round(100 * avg(score), 1)     AS mean_score_pct,
       count(*)                       AS n_attempts
FROM v_attempts
WHERE cost_usd IS NOT NULL
GROUP BY ALL
ORDER BY benchmark, cost_per_task_usd;

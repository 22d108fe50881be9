-- title: Pass rate by task capability
-- description: From v_attempt_capabilities: one row per benchmark, agent and capability a task needs (a task needing two capabilities counts for both).
SELECT benchmark, agent, capability, count(*) AS n_attempts, round(100 * avg(passed::DOUBLE), 1) AS pass_rate_pct
FROM v_attempt_capabilities
GROUP BY ALL
ORDER BY benchmark, capability, pass_rate_pct DESC;

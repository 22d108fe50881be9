-- 002: friendly views for the SQL explorer, so common questions need no joins.

CREATE VIEW v_runs AS
SELECT r.run_id, r.benchmark, r.agent, r.family, r.agent_version, r.kind, r.eval_date, r.judge, r.is_demo,
       count(a.attempt_id) AS n_attempts, count(DISTINCT a.task_id) AS n_tasks,
       avg(a.passed::DOUBLE) AS pass_rate, avg(a.score) AS mean_score,
       sum(a.input_tokens) AS input_tokens, sum(a.output_tokens) AS output_tokens, sum(a.cost_usd) AS cost_usd,
       avg(a.latency_s) AS mean_latency_s, avg(a.n_tool_calls) AS mean_tool_calls
FROM runs r
LEFT JOIN attempts a USING (run_id)
GROUP BY ALL;

CREATE VIEW v_tool_calls AS
SELECT s.attempt_id, a.benchmark, a.run_id, a.agent, a.agent_version, a.task_id, a.level, a.category, a.sample,
       a.passed, s.step, s.round, s.tool, s.args, s.result_chars, s.latency_s, s.error,
       s.error IS NOT NULL AS is_error
FROM steps s
JOIN v_attempts a USING (attempt_id)
WHERE s.kind = 'tool_call';

CREATE VIEW v_attempt_capabilities AS
SELECT a.attempt_id, a.benchmark, a.run_id, a.agent, a.kind, a.eval_date, a.task_id, a.level, a.category,
       a.sample, a.score, a.passed, a.status, unnest(t.capabilities) AS capability
FROM v_attempts a
JOIN tasks t ON t.benchmark = a.benchmark AND t.task_id = a.task_id;

-- title: Tool usage and tool errors per agent
-- description: From v_tool_calls: how often each agent calls each tool, how many calls errored, and the pass rate of the attempts that used the tool.
SELECT benchmark, agent, tool,
       count(*)                                   AS n_calls,
       count(*) FILTER (is_error)                 AS n_errors,
       round(100 * avg(passed::DOUBLE), 1)        AS attempt_pass_rate_pct
FROM v_tool_calls
GROUP BY ALL
ORDER BY benchmark, agent, n_calls DESC;

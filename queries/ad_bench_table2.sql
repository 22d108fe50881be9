-- title: AD-Bench Table 2: Pass@1, Pass@3 and average trajectory length by level
-- description: Paper snapshot (runs evaluated 2026-01-15). Pass@1 = successful attempts / attempts; Pass@3 = share of tasks solved at least once in their 3 samples; avg_len = mean tool calls per attempt. Percent.
WITH attempts AS (
    SELECT agent, level, task_id, passed, n_tool_calls
    FROM v_attempts
    WHERE benchmark = 'ad-bench' AND eval_date = DATE '2026-01-15' AND kind <> 'human'
),
per_task AS (
    SELECT agent, level, task_id,
           count(*)                   AS n_attempts,
           count(*) FILTER (passed)   AS n_passed,
           bool_or(passed)::INTEGER   AS is_solved,
           sum(n_tool_calls)          AS n_tool_calls
    FROM attempts
    GROUP BY ALL
)
SELECT agent AS model,
       round(100 * sum(n_passed) / sum(n_attempts), 1)                                           AS overall_pass1,
       round(100 * avg(is_solved), 1)                                                            AS overall_pass3,
       round(100 * sum(n_passed) FILTER (level = 'L1') / sum(n_attempts) FILTER (level = 'L1'), 1) AS l1_pass1,
       round(100 * avg(is_solved) FILTER (level = 'L1'), 1)                                      AS l1_pass3,
       round(100 * sum(n_passed) FILTER (level = 'L2') / sum(n_attempts) FILTER (level = 'L2'), 1) AS l2_pass1,
       round(100 * avg(is_solved) FILTER (level = 'L2'), 1)                                      AS l2_pass3,
       round(100 * sum(n_passed) FILTER (level = 'L3') / sum(n_attempts) FILTER (level = 'L3'), 1) AS l3_pass1,
       round(100 * avg(is_solved) FILTER (level = 'L3'), 1)                                      AS l3_pass3,
       round(sum(n_tool_calls) / sum(n_attempts), 2)                                             AS avg_len
FROM per_task
GROUP BY agent
ORDER BY overall_pass3 DESC, overall_pass1 DESC, model;

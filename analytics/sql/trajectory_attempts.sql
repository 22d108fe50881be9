-- One row per attempt with its tool-call sequence and the task's reference trajectory
-- (analytics/trajectory.py). Filters are parameters; NULL means "no filter".
WITH picked AS (
    SELECT a.attempt_id, a.run_id, r.agent, r.benchmark, r.eval_date, a.task_id, t.level, t.category,
           a.sample, a.passed, a.score, a.n_tool_calls, a.n_rounds, t.reference_trajectory
    FROM attempts a
    JOIN runs r USING (run_id)
    LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
    WHERE $run_filter
),
calls AS (
    SELECT s.attempt_id, list(s.tool ORDER BY s.step) AS calls
    FROM steps s
    SEMI JOIN picked p ON p.attempt_id = s.attempt_id
    WHERE s.kind = 'tool_call' AND s.tool IS NOT NULL
    GROUP BY s.attempt_id
)
SELECT p.*, coalesce(c.calls, []::VARCHAR[]) AS calls
FROM picked p
LEFT JOIN calls c USING (attempt_id)
ORDER BY p.run_id, p.task_id, p.sample

-- run_task_first rows of the (run, task) pairs of the attempts in _rl_agg_attempts, with their error labels in
-- _rl_agg_labels (CTEs store/task_first.py puts around this SELECT: the attempts of the pairs to refresh, or of one
-- ingested file): what the Version diff reads of each task of a run. Over the attempts with a verdict (passed not
-- null): their number, pass rate, the first sample's verdict and number, the means of score, cost, latency, tokens
-- and tool calls; over every attempt: mean latency and tokens, the first attempt id (the order the log recorded the
-- task); the task's error codes from every source, sorted. Migration 011's backfill is the same SELECT over every
-- pair (tests/test_task_first.py checks that a refresh of every pair equals it).
WITH g AS (
    SELECT run_id, task_id,
           count(passed) AS n,
           avg(passed::INT) AS rate,
           -- 0 where the task has no verdict: that row is no outcome (and an integer column stays one)
           coalesce(arg_min(passed, sample) FILTER (WHERE passed IS NOT NULL), false)::INT AS first,
           coalesce(min(sample) FILTER (WHERE passed IS NOT NULL), 0) AS first_sample,
           avg(score) FILTER (WHERE passed IS NOT NULL) AS score,
           avg(cost_usd) FILTER (WHERE passed IS NOT NULL) AS cost_usd,
           avg(latency_s) FILTER (WHERE passed IS NOT NULL) AS latency_s,
           avg(input_tokens + output_tokens) FILTER (WHERE passed IS NOT NULL) AS tokens,
           avg(n_tool_calls) FILTER (WHERE passed IS NOT NULL) AS steps,
           avg(latency_s) AS all_latency_s,
           avg(input_tokens + output_tokens) AS all_tokens,
           min(attempt_id) AS first_attempt
    FROM _rl_agg_attempts
    GROUP BY run_id, task_id
),
codes AS (
    SELECT a.run_id, a.task_id, list_sort(list(DISTINCT e.code)) AS codes
    FROM _rl_agg_labels e
    JOIN _rl_agg_attempts a USING (attempt_id)
    GROUP BY a.run_id, a.task_id
)
SELECT g.run_id, g.task_id, g.n, g.rate, g.first, g.first_sample, g.score, g.cost_usd, g.latency_s, g.tokens,
       g.steps, g.all_latency_s, g.all_tokens, g.first_attempt, c.codes
FROM g
LEFT JOIN codes c ON c.run_id = g.run_id AND c.task_id = g.task_id

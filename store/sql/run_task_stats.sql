-- run_task_stats rows of the (run, task) pairs of the attempts in _rl_agg_attempts (a CTE store/aggregates.py
-- puts around this SELECT: the attempts of the pairs to refresh, or of one ingested file), from their attempts: the
-- same SELECT as migration 008's backfill (tests/test_aggregates.py checks that a refresh of every pair equals it).
SELECT a.run_id, a.task_id,
       count(*),
       count(*) FILTER (WHERE a.passed),
       count(*) FILTER (WHERE a.passed = false),
       count(*) FILTER (WHERE a.status = 'crashed'),
       count(*) FILTER (WHERE a.status = 'timeout'),
       count(*) FILTER (WHERE a.score IS NULL),
       avg(a.score),
       avg(a.cost_usd),
       avg(a.input_tokens),
       avg(a.output_tokens),
       avg(a.latency_s),
       count(*) FILTER (WHERE a.score IS NOT NULL),
       count(*) FILTER (WHERE a.passed AND a.score IS NOT NULL),
       avg(a.n_tool_calls) FILTER (WHERE a.score IS NOT NULL),
       avg(a.cost_usd) FILTER (WHERE a.score IS NOT NULL),
       count(*) FILTER (WHERE a.score IS NOT NULL AND a.status <> 'crashed'),
       count(*) FILTER (WHERE a.passed AND a.score IS NOT NULL AND a.status <> 'crashed'),
       avg(a.score) FILTER (WHERE a.score IS NOT NULL AND a.status <> 'crashed'),
       avg(a.n_tool_calls) FILTER (WHERE a.score IS NOT NULL AND a.status <> 'crashed'),
       avg(a.cost_usd) FILTER (WHERE a.score IS NOT NULL AND a.status <> 'crashed')
FROM _rl_agg_attempts a
GROUP BY a.run_id, a.task_id

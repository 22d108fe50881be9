-- 011_run_task_first: what the Version diff reads of each task of a run, kept per (run, task) by the writer in the
-- transaction that changes the attempts or their error labels (store/task_first.py, called from
-- store/aggregates.py: ingest, deletion, replaced attempts, late scores, judge labels, rule findings), so the diff
-- reads a row per task of the two runs instead of every attempt of both and every label of their id ranges
-- (issue 33). The columns are what the diff computed from the attempts (store/sql/run_task_first.sql says how).
CREATE TABLE run_task_first (
    run_id        VARCHAR   NOT NULL,
    task_id       VARCHAR   NOT NULL,
    n             BIGINT    NOT NULL,  -- attempts with a verdict (passed not null); 0: the task has no outcome
    rate          DOUBLE,              -- their pass rate
    first         INTEGER   NOT NULL,  -- the verdict of the first sample with one (1 passed; 0 also when n is 0)
    first_sample  INTEGER   NOT NULL,  -- that sample's number (0 when n is 0)
    score         DOUBLE,              -- means over the attempts with a verdict
    cost_usd      DOUBLE,
    latency_s     DOUBLE,
    tokens        DOUBLE,              -- input + output tokens
    steps         DOUBLE,              -- tool calls
    all_latency_s DOUBLE,              -- means over every attempt
    all_tokens    DOUBLE,
    first_attempt BIGINT    NOT NULL,  -- the task's first attempt id: the order the run's log recorded its tasks
    codes         VARCHAR[],           -- the error codes of the task's attempts, every source, sorted (null: none)
    PRIMARY KEY (run_id, task_id)
);

-- the backfill in run order, so a lake's files of this table hold runs apart and a read of one run skips the rest
INSERT INTO run_task_first
WITH _rl_agg_attempts AS (SELECT * FROM attempts),
     _rl_agg_labels AS (SELECT attempt_id, code, source FROM error_labels),
g AS (
    SELECT run_id, task_id,
           count(passed) AS n,
           avg(passed::INT) AS rate,
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
ORDER BY g.run_id, g.task_id;

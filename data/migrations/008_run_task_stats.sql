-- 008_run_task_stats: what the pages read of the attempts, per (run, task), kept up to date by the writer in the
-- transaction that changes the attempts (store/aggregates.py: ingest, deletion, replaced attempts, late scores), so
-- the Leaderboard, Tech-Market-Fit, Errors and Progress read runs x tasks rows instead of every attempt (issue 33).
-- Means are the attempts' own avg() of each group (the same values the pages computed from the attempts); the
-- groups: all attempts, scored ones (score not null: the leaderboard's), and scored ones not errored (status not
-- crashed: the leaderboard with errored attempts left out).
CREATE TABLE run_task_stats (
    run_id                 VARCHAR NOT NULL,
    task_id                VARCHAR NOT NULL,
    n_attempts             BIGINT  NOT NULL,
    n_passed               BIGINT  NOT NULL,
    n_failed               BIGINT  NOT NULL,  -- passed = false (an attempt without a verdict is neither)
    n_errored              BIGINT  NOT NULL,  -- status crashed
    n_limited              BIGINT  NOT NULL,  -- status timeout
    n_unscored             BIGINT  NOT NULL,  -- score null
    score_mean             DOUBLE,
    cost_usd_mean          DOUBLE,
    input_tokens_mean      DOUBLE,
    output_tokens_mean     DOUBLE,
    latency_s_mean         DOUBLE,
    n_scored               BIGINT  NOT NULL,
    n_scored_passed        BIGINT  NOT NULL,
    tool_calls_mean_scored DOUBLE,
    cost_usd_mean_scored   DOUBLE,
    n_kept                 BIGINT  NOT NULL,  -- scored and not crashed
    n_kept_passed          BIGINT  NOT NULL,
    score_mean_kept        DOUBLE,
    tool_calls_mean_kept   DOUBLE,
    cost_usd_mean_kept     DOUBLE,
    PRIMARY KEY (run_id, task_id)
);

INSERT INTO run_task_stats
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
FROM attempts a
GROUP BY a.run_id, a.task_id;

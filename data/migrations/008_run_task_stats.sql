-- 008_run_task_stats: what the pages read of the attempts and their error labels, kept up to date by the writer in the
-- transaction that changes them (store/aggregates.py: ingest, deletion, replaced attempts, late scores, judge labels,
-- rule findings), so the Leaderboard, Tech-Market-Fit, Errors and Progress read runs x tasks rows instead of every
-- attempt (issue 33).
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

-- Failed attempts carrying an error code, per (run, task, code) and set of label sources that gave the code to the
-- attempt (sources_mask: label 1, rule 2, judge 4): the Errors page counts the attempts of the sources it is shown
-- (those whose mask shares a bit with the chosen sources') without reading attempts and labels again.
CREATE TABLE run_task_codes (
    run_id       VARCHAR NOT NULL,
    task_id      VARCHAR NOT NULL,
    code         VARCHAR NOT NULL,
    sources_mask INTEGER NOT NULL,
    n_failed     BIGINT  NOT NULL,
    PRIMARY KEY (run_id, task_id, code, sources_mask)
);

-- Pairs of codes carried by the same failed attempt, counted per run and by the two codes' source sets (the
-- diagonal: attempts with the code): the Errors page's co-occurrence matrix for any choice of sources.
CREATE TABLE run_code_pairs (
    run_id  VARCHAR NOT NULL,
    code_a  VARCHAR NOT NULL,
    mask_a  INTEGER NOT NULL,
    code_b  VARCHAR NOT NULL,
    mask_b  INTEGER NOT NULL,
    n       BIGINT  NOT NULL,
    PRIMARY KEY (run_id, code_a, mask_a, code_b, mask_b)
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

INSERT INTO run_task_codes
WITH per_attempt AS (
    SELECT a.run_id, a.task_id, e.attempt_id, e.code,
           bit_or(CASE e.source WHEN 'label' THEN 1 WHEN 'rule' THEN 2 WHEN 'judge' THEN 4 ELSE 0 END) AS sources_mask
    FROM error_labels e
    JOIN attempts a USING (attempt_id)
    WHERE a.passed = false
    GROUP BY a.run_id, a.task_id, e.attempt_id, e.code
)
SELECT run_id, task_id, code, sources_mask, count(*) AS n_failed
FROM per_attempt
GROUP BY run_id, task_id, code, sources_mask;

INSERT INTO run_code_pairs
WITH per_attempt AS (
    SELECT a.run_id, e.attempt_id, e.code,
           bit_or(CASE e.source WHEN 'label' THEN 1 WHEN 'rule' THEN 2 WHEN 'judge' THEN 4 ELSE 0 END) AS sources_mask
    FROM error_labels e
    JOIN attempts a USING (attempt_id)
    WHERE a.passed = false
    GROUP BY a.run_id, e.attempt_id, e.code
)
SELECT x.run_id, x.code AS code_a, x.sources_mask AS mask_a, y.code AS code_b, y.sources_mask AS mask_b, count(*) AS n
FROM per_attempt x
JOIN per_attempt y ON x.attempt_id = y.attempt_id
GROUP BY ALL;

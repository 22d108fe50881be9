-- 009_run_judge_counts: what the judge's corrected figures (Errors and Review pages, PPI++) read of every attempt,
-- kept per run by the writer in the transaction that changes the attempts, their labels or the judge's verdicts
-- (store/aggregates.py: ingest, deletion, replaced attempts, late scores, judge labels, rule findings), so the
-- figures read a row per run and the reviewed attempts themselves instead of every attempt (issue 33). And the
-- Errors table's counts per run and slice (level, category), summed from 008's per (run, task) rows: a task's level
-- and category never change once stored (a conflicting definition is refused), so a run's slices change only
-- with its own rows.

-- Per run: its attempts, those with a judge's verdict and those the judge calls correct. The verdict of an
-- attempt is a Runlens judge's (every non-failed verdict's result_correct, and-ed), else the log's judge's.
CREATE TABLE run_judge_counts (
    run_id           VARCHAR NOT NULL,
    n_attempts       BIGINT  NOT NULL,
    n_judged         BIGINT  NOT NULL,  -- the verdict is not null
    n_judged_correct BIGINT  NOT NULL,  -- the verdict is true
    PRIMARY KEY (run_id)
);

-- Per run, label source and code: the run's attempts (passed or not) that carry the code from that source.
CREATE TABLE run_label_codes (
    run_id     VARCHAR NOT NULL,
    source     VARCHAR NOT NULL,
    code       VARCHAR NOT NULL,
    n_attempts BIGINT  NOT NULL,
    PRIMARY KEY (run_id, source, code)
);

-- Per run and slice (the task's level and category, either may be null): attempts and failed attempts.
CREATE TABLE run_slice_stats (
    run_id     VARCHAR NOT NULL,
    level      VARCHAR,
    category   VARCHAR,
    n_attempts BIGINT  NOT NULL,
    n_failed   BIGINT  NOT NULL
);

-- Per run, slice, code and set of label sources (run_task_codes' sources_mask): failed attempts carrying the code.
CREATE TABLE run_slice_codes (
    run_id       VARCHAR NOT NULL,
    level        VARCHAR,
    category     VARCHAR,
    code         VARCHAR NOT NULL,
    sources_mask INTEGER NOT NULL,
    n_failed     BIGINT  NOT NULL
);

INSERT INTO run_judge_counts
WITH rj AS (
    SELECT attempt_id, bool_and(TRY_CAST(verdict->>'result_correct' AS BOOLEAN)) AS ok
    FROM judge_verdicts WHERE NOT is_failure GROUP BY attempt_id
),
per_attempt AS (
    SELECT a.run_id, coalesce(rj.ok, TRY_CAST(a.judge->>'result_correct' AS BOOLEAN)) AS judge_correct
    FROM attempts a LEFT JOIN rj USING (attempt_id)
)
SELECT run_id, count(*), count(judge_correct), count(*) FILTER (WHERE judge_correct)
FROM per_attempt
GROUP BY run_id;

INSERT INTO run_label_codes
SELECT a.run_id, e.source, e.code, count(DISTINCT e.attempt_id)
FROM error_labels e
JOIN attempts a USING (attempt_id)
GROUP BY a.run_id, e.source, e.code;

INSERT INTO run_slice_stats
SELECT s.run_id, t.level, t.category, sum(s.n_attempts), sum(s.n_failed)
FROM run_task_stats s
JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = s.task_id
GROUP BY s.run_id, t.level, t.category;

INSERT INTO run_slice_codes
SELECT c.run_id, t.level, t.category, c.code, c.sources_mask, sum(c.n_failed)
FROM run_task_codes c
JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = c.task_id
GROUP BY c.run_id, t.level, t.category, c.code, c.sources_mask;

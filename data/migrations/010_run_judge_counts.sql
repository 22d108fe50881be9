-- 010_run_judge_counts: what the judge's corrected figures (Errors and Review pages, PPI++) read of every attempt,
-- kept per run by the writer in the transaction that changes the attempts, their labels or the judge's verdicts
-- (store/aggregates.py: ingest, deletion, replaced attempts, late scores, judge labels, rule findings), so the
-- figures read a row per run and the reviewed attempts themselves instead of every attempt (issue 33).

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

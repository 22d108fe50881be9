-- 012_run_task_tmf: what the Tech-Market-Fit page reads of each (run, task), on integer codes, kept by the writer in
-- the transaction that changes the attempts (store/tmf_rows.py, called from store/aggregates.py: ingest, deletion,
-- replaced attempts, late scores), so the page's first view reads integers and numbers of its benchmark's runs
-- without joining 867k rows on their run and task ids' text at 10M attempts (issue 33). A row is its pair's
-- run_task_stats row (migration 008) under the run's and the task's codes.
-- A run's code: any integer, unique over the store, given when its first rows are written, gone with the run.
CREATE TABLE tmf_run_codes (
    run_id   VARCHAR NOT NULL,
    run_code INTEGER NOT NULL,
    PRIMARY KEY (run_id)
);

-- A task's code: any integer, unique over the store, given when a run first has rows of the (benchmark, task);
-- kept when runs go (the task stays in its benchmark).
CREATE TABLE tmf_task_codes (
    benchmark VARCHAR NOT NULL,
    task_id   VARCHAR NOT NULL,
    task_code INTEGER NOT NULL,
    PRIMARY KEY (benchmark, task_id)
);

CREATE TABLE run_task_tmf (
    run_code      INTEGER NOT NULL,
    task_code     INTEGER NOT NULL,
    n             BIGINT  NOT NULL,  -- run_task_stats.n_attempts
    c             BIGINT  NOT NULL,  -- n_passed
    score         DOUBLE,            -- score_mean
    cost_usd      DOUBLE,            -- cost_usd_mean
    input_tokens  DOUBLE,            -- input_tokens_mean
    output_tokens DOUBLE,            -- output_tokens_mean
    latency_s     DOUBLE,            -- latency_s_mean
    PRIMARY KEY (run_code, task_code)
);

-- the backfill: codes in run id and (benchmark, task id) order, rows in code order, so a lake's files of the rows
-- hold runs apart and a read of one benchmark's runs skips the others' row groups
INSERT INTO tmf_run_codes
SELECT run_id, (row_number() OVER (ORDER BY run_id) - 1)::INTEGER
FROM (SELECT DISTINCT s.run_id FROM run_task_stats s SEMI JOIN runs r ON r.run_id = s.run_id);

INSERT INTO tmf_task_codes
SELECT benchmark, task_id, (row_number() OVER (ORDER BY benchmark, task_id) - 1)::INTEGER
FROM (SELECT DISTINCT r.benchmark, s.task_id FROM run_task_stats s JOIN runs r ON r.run_id = s.run_id);

INSERT INTO run_task_tmf
SELECT rc.run_code, tc.task_code, s.n_attempts, s.n_passed, s.score_mean, s.cost_usd_mean, s.input_tokens_mean,
       s.output_tokens_mean, s.latency_s_mean
FROM run_task_stats s
JOIN runs r ON r.run_id = s.run_id
JOIN tmf_run_codes rc ON rc.run_id = s.run_id
JOIN tmf_task_codes tc ON tc.benchmark = r.benchmark AND tc.task_id = s.task_id
ORDER BY rc.run_code, tc.task_code;

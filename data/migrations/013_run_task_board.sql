-- 013_run_task_board: what the Leaderboard reads of each (run, task), on the integer codes of migration 012
-- (tmf_run_codes, tmf_task_codes), kept by the writer in the transaction that changes the attempts
-- (store/tmf_rows.py, called from store/aggregates.py: ingest, deletion, replaced attempts, late scores), so the
-- Leaderboard's first view reads integers and numbers of its benchmark's runs without joining 867k rows on their run
-- and task ids' text at 10M attempts (issue 33). A row is its pair's run_task_stats row (migration 008): the
-- columns analytics/sql/task_outcome_rows.sql reads, under the run's and the task's codes.
CREATE TABLE run_task_board (
    run_code               INTEGER NOT NULL,
    task_code              INTEGER NOT NULL,
    n_scored               BIGINT  NOT NULL,
    n_scored_passed        BIGINT  NOT NULL,
    score_mean             DOUBLE,
    tool_calls_mean_scored DOUBLE,
    cost_usd_mean_scored   DOUBLE,
    n_kept                 BIGINT  NOT NULL,
    n_kept_passed          BIGINT  NOT NULL,
    score_mean_kept        DOUBLE,
    tool_calls_mean_kept   DOUBLE,
    cost_usd_mean_kept     DOUBLE,
    PRIMARY KEY (run_code, task_code)
);

-- the backfill, from the codes migration 012 gave (every run and task with run_task_stats rows has one), in code
-- order so a lake's files of the rows hold runs apart and a read of one benchmark's runs skips the others' row groups
INSERT INTO run_task_board
SELECT rc.run_code, tc.task_code, s.n_scored, s.n_scored_passed, s.score_mean, s.tool_calls_mean_scored,
       s.cost_usd_mean_scored, s.n_kept, s.n_kept_passed, s.score_mean_kept, s.tool_calls_mean_kept,
       s.cost_usd_mean_kept
FROM run_task_stats s
JOIN runs r ON r.run_id = s.run_id
JOIN tmf_run_codes rc ON rc.run_id = s.run_id
JOIN tmf_task_codes tc ON tc.benchmark = r.benchmark AND tc.task_id = s.task_id
ORDER BY rc.run_code, tc.task_code;

-- 016_task_code_minutes: each coded task's human_minutes (the tasks table's) kept on its code beside migration 015's
-- level and category, by the writer when the code is given (store/tmf_rows.py; a task's row never changes), so the
-- Tech-Market-Fit page's first view reads its benchmark's tasks from this one table instead of joining the tasks
-- table to their codes (66,667 tasks a benchmark at 10M attempts; issue 33). The table is made again with the column
-- rather than altered: DuckDB refuses to commit an ALTER TABLE of a table updated earlier in the same transaction, as
-- 015's backfill does when a store older than 015 takes both at once. doctor checks the column against the tasks
-- table with the other kept columns.
CREATE TABLE tmf_task_codes_016 (
    benchmark     VARCHAR NOT NULL,
    task_id       VARCHAR NOT NULL,
    task_code     INTEGER NOT NULL,
    level         VARCHAR,
    category      VARCHAR,
    is_listed     BOOLEAN,
    human_minutes DOUBLE,
    PRIMARY KEY (benchmark, task_id)
);

-- the backfill: every coded task with the human minutes of the task the tasks table lists (the others have none)
INSERT INTO tmf_task_codes_016
SELECT c.benchmark, c.task_id, c.task_code, c.level, c.category, c.is_listed, t.human_minutes
FROM tmf_task_codes c LEFT JOIN tasks t ON t.benchmark = c.benchmark AND t.task_id = c.task_id;

DROP TABLE tmf_task_codes;
ALTER TABLE tmf_task_codes_016 RENAME TO tmf_task_codes;

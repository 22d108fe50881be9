-- 015_task_code_kinds: each coded task's level and category (migration 012's tmf_task_codes), and whether the
-- benchmark's tasks table lists it, kept on its code by the writer when the code is given (store/tmf_rows.py: a
-- task's row is stored before any attempt of it, in the same transaction or earlier, and never changes), so the
-- Leaderboard's first view reads its benchmark's tasks from this one table instead of joining the tasks table to
-- their codes (66,667 tasks a benchmark at 10M attempts; issue 33). No constraint or default: DuckDB adds no column
-- with one (the writer always gives is_listed; doctor checks the three columns against the tasks table).
ALTER TABLE tmf_task_codes ADD COLUMN level VARCHAR;
ALTER TABLE tmf_task_codes ADD COLUMN category VARCHAR;
ALTER TABLE tmf_task_codes ADD COLUMN is_listed BOOLEAN;

-- the backfill: every coded task the tasks table lists, then the others
UPDATE tmf_task_codes SET level = t.level, category = t.category, is_listed = true
FROM tasks t
WHERE t.benchmark = tmf_task_codes.benchmark AND t.task_id = tmf_task_codes.task_id;
UPDATE tmf_task_codes SET is_listed = false WHERE is_listed IS NULL;

-- run_judge_counts rows of the runs in the temporary table _rl_agg_keys: each run's attempts, those with a judge's
-- verdict (a Runlens judge's non-failed verdicts and-ed, else the log's judge's) and those it calls correct.
-- Migration 009's backfill is the same SELECT over every run.
WITH rj AS (
    SELECT attempt_id, bool_and(TRY_CAST(verdict->>'result_correct' AS BOOLEAN)) AS ok
    FROM judge_verdicts
    WHERE NOT is_failure
      AND attempt_id BETWEEN $lo AND $hi  -- the keys' attempts' ids: a constant range the scan skips by
    GROUP BY attempt_id
),
per_attempt AS (
    SELECT a.run_id, coalesce(rj.ok, TRY_CAST(a.judge->>'result_correct' AS BOOLEAN)) AS judge_correct
    FROM attempts a
    LEFT JOIN rj USING (attempt_id)
    SEMI JOIN (SELECT DISTINCT run_id FROM _rl_agg_keys) k ON k.run_id = a.run_id
    WHERE a.attempt_id BETWEEN $lo AND $hi
)
SELECT run_id, count(*), count(judge_correct), count(*) FILTER (WHERE judge_correct)
FROM per_attempt
GROUP BY run_id

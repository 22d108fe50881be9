-- One row per (run, task) of the given runs: samples, successes, mean score, tool calls and cost, read from the
-- aggregate the writer keeps per (run, task) (run_task_stats, migration 008): runs x tasks rows, whatever the
-- number of attempts. A pair whose attempts are all unscored (Inspect samples before `inspect score`: neither
-- pass nor fail) has no row.
-- Lean on purpose: only the two keys are text (run and task details are separate, small queries), since turning
-- text into Python objects costs more than the reading itself.
-- Parameters: $run_ids (list; the runs that match the page's filters, from leaderboard_runs.sql);
-- $exclude_errored: leave errored attempts (status crashed) out, as Inspect's accuracy does, instead of counting
-- them as failures (the default).
-- c is HUGEINT as count_if gave it when this read the attempts (pandas reads it as a float: the same frame).
-- No order: the leaderboard numbers the rows (run and task keys as integer codes, each distinct key turned into
-- a Python string once) and orders by those codes; the version diff and the leaderboard's fallback append
-- ORDER BY run_id, task_id.
SELECT s.run_id, s.task_id,
       CASE WHEN $exclude_errored THEN s.n_kept ELSE s.n_scored END                         AS n,
       (CASE WHEN $exclude_errored THEN s.n_kept_passed ELSE s.n_scored_passed END)::HUGEINT AS c,
       CASE WHEN $exclude_errored THEN s.score_mean_kept ELSE s.score_mean END              AS score,
       CASE WHEN $exclude_errored THEN s.tool_calls_mean_kept ELSE s.tool_calls_mean_scored END AS steps,
       CASE WHEN $exclude_errored THEN s.cost_usd_mean_kept ELSE s.cost_usd_mean_scored END AS cost_usd
FROM run_task_stats s
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
WHERE CASE WHEN $exclude_errored THEN s.n_kept ELSE s.n_scored END > 0

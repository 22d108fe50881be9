-- Transcript search: a scan of the attempts the index does not cover (of the runs the filter keeps), as search.sql
-- scans everything: their hits with the totals on every row, the first $limit listed. Parameters: the run
-- filter's, the pattern, $no_file (attempts without a file too),
-- $min_unindexed (the smallest id among those attempts), $limit, $context; the uncovered placeholder: the files no segment
-- covers (integer literals). The other brace-delimited placeholders are
-- search.sql's fixed SQL.
WITH unindexed AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed, a.answer
    FROM attempts a
    WHERE a.attempt_id >= $min_unindexed
      AND (a.file_id IN ({uncovered}) OR ($no_file AND a.file_id IS NULL))
      AND a.run_id IN (SELECT r.run_id FROM runs r WHERE $run_filter)
),
matched AS (
    SELECT k.attempt_id, NULL::INTEGER AS step, 'answer' AS field, k.answer AS text
    FROM unindexed k
    WHERE {match_answer}
    UNION ALL
    SELECT s.attempt_id, s.step, {field_case}, {text_case}
    FROM steps s
    SEMI JOIN unindexed k ON k.attempt_id = s.attempt_id
    WHERE s.attempt_id >= $min_unindexed AND ({match_step})
    UNION ALL
    SELECT s.attempt_id, s.step, 'result', t.text
    FROM steps s
    JOIN texts t ON t.text_hash = s.result_hash
    SEMI JOIN unindexed k ON k.attempt_id = s.attempt_id
    -- match_long names a column of steps too, so it runs after the join on the few long texts of the attempts
    -- not covered, instead of being pushed into a scan of every long text
    WHERE s.attempt_id >= $min_unindexed AND {match_long}
),
located AS (
    SELECT attempt_id, step, field, text, {locate} FROM matched
),
windows AS (
    SELECT attempt_id, step, field, pos, mlen, greatest(pos - $context, 1) AS w0, length(text) AS n_chars,
           substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
    FROM located
),
totals AS (
    SELECT count(DISTINCT attempt_id) AS n_attempts, count(*) AS n_hits FROM windows
),
top AS (
    SELECT k.run_id, k.task_id, k.sample, k.passed, w.step, w.field, w.pos, w.mlen, w.w0, w.n_chars, w.win
    FROM windows w
    JOIN unindexed k USING (attempt_id)
    ORDER BY k.run_id, k.task_id, k.sample, w.step NULLS FIRST, w.field
    LIMIT $limit
)
SELECT totals.n_attempts, totals.n_hits, top.*
FROM totals
LEFT JOIN top ON true
ORDER BY top.run_id, top.task_id, top.sample, top.step NULLS FIRST, top.field

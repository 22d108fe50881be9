-- Transcript search's scan (analytics/search/load.py): every attempt the filters keep, or only those the search
-- index does not cover. Parameters: $q (phrase, RE2 pattern) or $w0.. $r0.. (words), the run filter's
-- (store/filters.py), $limit (hits returned), $context; for the attempts the index does not cover also
-- $min_unindexed (the smallest id among them: ingest numbers attempts upwards, so the scans skip everything below)
-- and $no_file (attempts without a file too).
-- The brace-delimited placeholders are fixed SQL from load.py, one form per search mode; the user's query is only
-- ever a parameter. only_attempts and only_steps: true, or the condition that keeps the attempts not covered (their
-- files, as integer literals). long_texts: the long results (stored once in texts) matched before the join (a
-- scan of everything: each text matched once), or all of texts with match_long after the join (a few attempts:
-- match_long names a column of steps too, so it runs on their few long texts instead of being pushed into a scan
-- of every long text).
WITH kept AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed, a.answer
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE $run_filter AND {only_attempts}
),
matched AS (
    SELECT k.attempt_id, NULL::INTEGER AS step, 'answer' AS field, k.answer AS text
    FROM kept k
    WHERE {match_answer}
    UNION ALL
    SELECT s.attempt_id, s.step, {field_case}, {text_case}
    FROM steps s
    SEMI JOIN kept k ON k.attempt_id = s.attempt_id
    WHERE {only_steps} AND ({match_step})
    UNION ALL
    SELECT s.attempt_id, s.step, 'result', t.text
    FROM steps s
    JOIN {long_texts} t ON t.text_hash = s.result_hash
    SEMI JOIN kept k ON k.attempt_id = s.attempt_id
    WHERE {only_steps} AND {match_long}
),
located AS (
    SELECT attempt_id, step, field, text, {locate} FROM matched
),
windows AS (
    -- only a window around the first match travels on: a common phrase may hit millions of long texts
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
    JOIN kept k USING (attempt_id)
    ORDER BY k.run_id, k.task_id, k.sample, w.step NULLS FIRST, w.field
    LIMIT $limit
)
SELECT totals.n_attempts, totals.n_hits, top.*
FROM totals
LEFT JOIN top ON true
ORDER BY top.run_id, top.task_id, top.sample, top.step NULLS FIRST, top.field

-- Transcript search's scan (analytics/search/load.py): every attempt the filters keep, or only those the search
-- index does not cover. Parameters: $q (phrase, RE2 pattern) or $w0.. $r0.. (words), the run filter's
-- (store/filters.py), $limit (hits returned), $context; for the attempts the index does not cover also
-- $min_unindexed (the smallest id among them: ingest numbers attempts upwards, so the scans skip everything below)
-- and $no_file (attempts without a file too).
-- The brace-delimited placeholders are fixed SQL from load.py, one form per search mode; the user's query is only
-- ever a parameter. only_attempts and only_steps: true, or the condition that keeps the attempts not covered (their
-- files, as integer literals). The long results (stored once in texts) are matched in one of two ways:
-- long_windows, a scan of every long text (each matched once, only its window kept: a common word matches most of
-- them, and a hash join built on the whole texts held them all), joined by hash in long_branch; or, for a few
-- attempts, long_text_branch: their long texts joined first, then matched (match_long names a column of steps too,
-- so it runs on their few long texts instead of being pushed into a scan of every long text). The other form's
-- placeholder is empty.
-- Memory: only windows around the first match travel on, and the counts and the first $limit hits in page order
-- come from one streaming aggregate (min_by keeps $limit rows per thread), so nothing holds every match (a CTE read
-- twice is materialised: at ten million attempts a common word held 19.9 GB that way).
WITH kept AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE $run_filter AND {only_attempts}
),
long_windows AS (
    SELECT text_hash, pos, mlen, greatest(pos - $context, 1) AS w0, length(text) AS n_chars,
           substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
    FROM (SELECT t.text_hash, t.text, {locate} FROM texts t WHERE {match_text})
),
matched AS (
    SELECT a.attempt_id, NULL::INTEGER AS step, 'answer' AS field, a.answer AS text
    FROM attempts a
    SEMI JOIN kept k ON k.attempt_id = a.attempt_id
    WHERE {only_answers} AND {match_answer}
    UNION ALL
    SELECT s.attempt_id, s.step, {field_case}, {text_case}
    FROM steps s
    SEMI JOIN kept k ON k.attempt_id = s.attempt_id
    WHERE {only_steps} AND ({match_step})
    {long_text_branch}
),
windows AS (
    -- only a window around the first match travels on: a common phrase may hit millions of long texts
    SELECT attempt_id, step, field, pos, mlen, greatest(pos - $context, 1) AS w0, length(text) AS n_chars,
           substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
    FROM (SELECT attempt_id, step, field, text, {locate} FROM matched)
    {long_branch}
),
found AS (
    SELECT count(DISTINCT w.attempt_id) AS n_attempts, count(*) AS n_hits,
           min_by(
               {{'run_id': k.run_id, 'task_id': k.task_id, 'sample': k.sample, 'passed': k.passed, 'step': w.step,
                 'field': w.field, 'pos': w.pos, 'mlen': w.mlen, 'w0': w.w0, 'n_chars': w.n_chars, 'win': w.win}},
               {{'r': k.run_id, 't': k.task_id, 's': k.sample, 'st': coalesce(w.step, -1), 'f': w.field}},
               greatest($limit, 1)
           ) AS top
    FROM windows w
    JOIN kept k USING (attempt_id)
)
SELECT f.n_attempts, f.n_hits, t.*
FROM found f
LEFT JOIN (SELECT unnest(list_slice(top, 1, $limit), recursive := true) FROM found) t ON true
ORDER BY t.run_id, t.task_id, t.sample, t.step NULLS FIRST, t.field

-- Transcript search through its index (analytics/search/load.py: phrase and words modes); same result as search.sql.
-- The index (store/search_index.py) is a set of segments attached read-only; candidates is, over the segments, every
-- (attempt, step, field) whose text holds tokens matching the query's runs (search_candidates.sql, one per segment),
-- with the file the attempt was indexed from. A candidate counts only for an attempt the filters keep that still
-- comes from that file (search_candidates.sql checks that the file has the same content). When holding the tokens is the same as matching (a phrase of one run of letters, digits
-- and _), if_verify is the literal false and the candidates are the hits; otherwise they are checked against the
-- real text, read from the store for the candidates only. Attempts no segment covers (covered_files:
-- search_covered.sql; all have attempt_id >= $min_unindexed) are scanned as in search.sql; if_unindexed is the
-- literal true or false. Only the $limit hits listed read their text for the snippet.
-- Parameters: $q (or $w0.. and $r0.. for words), $t0.. (the runs), the run filter's, $min_unindexed, $limit,
-- $context.
WITH kept AS (
    -- no answer here: reading every answer costs more than the rest of an indexed search (0.9 CPU s at 1M)
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed, a.file_id
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE $run_filter
),
{covered},
candidates AS (
    {candidates}
),
found AS (
    SELECT c.attempt_id, c.step, c.field
    FROM candidates c
    SEMI JOIN kept k ON k.attempt_id = c.attempt_id AND k.file_id = c.file_id
),
verified AS (
    SELECT f.attempt_id, f.step, f.field
    FROM found f
    JOIN attempts k ON k.attempt_id = f.attempt_id
    WHERE {if_verify} AND f.field = 0 AND {match_answer}
    UNION ALL
    SELECT f.attempt_id, f.step, f.field
    FROM found f
    JOIN steps s ON s.attempt_id = f.attempt_id AND s.step = f.step
    WHERE {if_verify} AND f.field BETWEEN 1 AND 4 AND {match_field}
    UNION ALL
    SELECT f.attempt_id, f.step, f.field
    FROM found f
    JOIN steps s ON s.attempt_id = f.attempt_id AND s.step = f.step
    JOIN texts t ON t.text_hash = s.result_hash
    WHERE {if_verify} AND f.field = 5 AND {match_text}
),
indexed AS (
    SELECT * FROM found WHERE NOT {if_verify}
    UNION ALL
    SELECT * FROM verified
),
index_hits AS (
    -- search.sql's hits: one per step for the inline fields (the first that matches), the answer and the long
    -- result apart (fields: 0 answer, 1 content, 2 args, 3 result, 4 error, 5 the long result; step -1: the answer)
    SELECT attempt_id, CASE WHEN step >= 0 THEN step END AS step,
           CASE field WHEN 0 THEN 'answer' WHEN 1 THEN 'content' WHEN 2 THEN 'args' WHEN 4 THEN 'error'
                ELSE 'result' END AS field,
           field AS src, NULL::VARCHAR AS text
    FROM indexed
    QUALIFY field IN (0, 5) OR row_number() OVER (PARTITION BY attempt_id, step, field IN (0, 5) ORDER BY field) = 1
),
unindexed AS (
    SELECT a.attempt_id, a.answer
    FROM kept k
    JOIN attempts a ON a.attempt_id = k.attempt_id AND a.attempt_id >= $min_unindexed
    WHERE {if_unindexed} AND k.attempt_id >= $min_unindexed
      AND (k.file_id IS NULL OR k.file_id NOT IN (SELECT file_id FROM covered_files))
),
scanned AS (
    SELECT k.attempt_id, NULL::INTEGER AS step, 'answer' AS field, k.answer AS text
    FROM unindexed k
    WHERE {match_unindexed_answer}
    UNION ALL
    SELECT s.attempt_id, s.step, {field_case}, {text_case}
    FROM steps s
    SEMI JOIN unindexed k ON k.attempt_id = s.attempt_id
    WHERE {if_unindexed} AND s.attempt_id >= $min_unindexed AND ({match_step})
    UNION ALL
    SELECT s.attempt_id, s.step, 'result', t.text
    FROM steps s
    JOIN texts t ON t.text_hash = s.result_hash
    SEMI JOIN unindexed k ON k.attempt_id = s.attempt_id
    -- match_long names a column of steps too, so it runs after the join on the few long texts of the attempts
    -- not covered, instead of being pushed into a scan of every long text
    WHERE {if_unindexed} AND s.attempt_id >= $min_unindexed AND {match_long}
),
hits AS (
    SELECT attempt_id, step, field, src, text FROM index_hits
    UNION ALL
    SELECT attempt_id, step, field, NULL AS src, text FROM scanned
),
totals AS (
    SELECT count(DISTINCT attempt_id) AS n_attempts, count(*) AS n_hits FROM hits
),
top AS (
    SELECT k.run_id, k.task_id, k.sample, k.passed, h.attempt_id, h.step, h.field, h.src, h.text
    FROM hits h
    JOIN kept k USING (attempt_id)
    ORDER BY k.run_id, k.task_id, k.sample, h.step NULLS FIRST, h.field
    LIMIT $limit
),
top_long AS (
    -- the long results of the listed hits: a semi-join on their few hashes, not a hash table of every long text
    SELECT x.text_hash, x.text
    FROM texts x
    WHERE x.text_hash IN (
        SELECT s.result_hash FROM top t JOIN steps s ON s.attempt_id = t.attempt_id AND s.step = t.step
        WHERE t.src = 5
    )
),
top_text AS (
    -- the original text of a listed hit (a scanned hit brought its own)
    SELECT t.run_id, t.task_id, t.sample, t.passed, t.step, t.field,
           CASE t.src WHEN 0 THEN a.answer WHEN 1 THEN s.content WHEN 2 THEN s.args::VARCHAR
                WHEN 3 THEN s.result WHEN 4 THEN s.error WHEN 5 THEN x.text ELSE t.text END AS text
    FROM top t
    LEFT JOIN attempts a ON a.attempt_id = t.attempt_id
    LEFT JOIN steps s ON s.attempt_id = t.attempt_id AND s.step = t.step
    LEFT JOIN top_long x ON x.text_hash = CASE WHEN t.src = 5 THEN s.result_hash END
),
located AS (
    SELECT *, {locate} FROM top_text
),
windows AS (
    SELECT run_id, task_id, sample, passed, step, field, pos, mlen, greatest(pos - $context, 1) AS w0,
           length(text) AS n_chars,
           substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
    FROM located
)
SELECT totals.n_attempts, totals.n_hits, w.*
FROM totals
LEFT JOIN windows w ON true
ORDER BY w.run_id, w.task_id, w.sample, w.step NULLS FIRST, w.field

-- Transcript search through its index (analytics/search.py, phrase mode); same result as search.sql.
-- idx is the index file attached read-only (store/search_index.py); its search_text holds every text search.sql
-- reads, lower-cased, so contains(text, $q) there is search.sql's contains(lower(x), $q) without lower() or the
-- join to texts. Attempts the index does not cover (covered: analytics/sql/search_covered.sql; all have
-- attempt_id >= $min_unindexed) are scanned as in search.sql; if_unindexed is the literal true or false, so
-- without such attempts that branch is planned away. Only the $limit hits listed read their original text.
-- Parameters: $q (the lower-cased phrase), the run filter's, $min_unindexed, $limit, $context.
WITH kept AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed, a.answer, a.file_id
    FROM attempts a
    JOIN runs r USING (run_id)
    WHERE $run_filter
),
{covered},
indexed AS (
    SELECT st.attempt_id, st.step, st.field AS src, strpos(st.text, $q) AS pos,
           CASE st.field WHEN 'content' THEN 1 WHEN 'args' THEN 2 WHEN 'result' THEN 3 WHEN 'error' THEN 4
                ELSE 0 END AS ord
    FROM {idx}.search_text st
    SEMI JOIN covered c ON c.attempt_id = st.attempt_id AND c.file_id = st.file_id
    WHERE contains(st.text, $q)
),
index_hits AS (
    -- search.sql's hits: one per step for the inline fields (the first that matches), the long result apart
    SELECT attempt_id, step, CASE src WHEN 'long_result' THEN 'result' ELSE src END AS field, src, pos,
           length($q) AS mlen, NULL::VARCHAR AS text
    FROM indexed
    QUALIFY ord = 0 OR row_number() OVER (PARTITION BY attempt_id, step, ord > 0 ORDER BY ord) = 1
),
unindexed AS (
    SELECT k.*
    FROM kept k
    ANTI JOIN covered c ON c.attempt_id = k.attempt_id
    WHERE {if_unindexed} AND k.attempt_id >= $min_unindexed
),
scanned AS (
    SELECT k.attempt_id, NULL::INTEGER AS step, 'answer' AS field, k.answer AS text
    FROM unindexed k
    WHERE {match_answer}
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
    SELECT attempt_id, step, field, src, pos, mlen, text FROM index_hits
    UNION ALL
    SELECT attempt_id, step, field, NULL AS src, {locate}, text FROM scanned
),
totals AS (
    SELECT count(DISTINCT attempt_id) AS n_attempts, count(*) AS n_hits FROM hits
),
top AS (
    SELECT k.run_id, k.task_id, k.sample, k.passed, k.answer, h.attempt_id, h.step, h.field, h.src, h.pos, h.mlen,
           h.text
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
        WHERE t.src = 'long_result'
    )
),
top_text AS (
    -- the original text of a listed hit (a scanned hit brought its own)
    SELECT t.run_id, t.task_id, t.sample, t.passed, t.step, t.field, t.pos, t.mlen,
           CASE t.src WHEN 'answer' THEN t.answer WHEN 'content' THEN s.content WHEN 'args' THEN s.args::VARCHAR
                WHEN 'result' THEN s.result WHEN 'error' THEN s.error WHEN 'long_result' THEN x.text
                ELSE t.text END AS text
    FROM top t
    LEFT JOIN steps s ON s.attempt_id = t.attempt_id AND s.step = t.step
    LEFT JOIN top_long x ON x.text_hash = CASE WHEN t.src = 'long_result' THEN s.result_hash END
),
windows AS (
    SELECT run_id, task_id, sample, passed, step, field, pos, mlen, greatest(pos - $context, 1) AS w0,
           length(text) AS n_chars,
           substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
    FROM top_text
)
SELECT totals.n_attempts, totals.n_hits, w.*
FROM totals
LEFT JOIN windows w ON true
ORDER BY w.run_id, w.task_id, w.sample, w.step NULLS FIRST, w.field

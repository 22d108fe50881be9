-- Transcript search through its index: the hits of a few attempts (a chunk of a window, search_window.sql), in the
-- order search lists them. Candidates are the (attempt, step, field) whose text holds the chosen runs' tokens,
-- from the segment that covers the attempt's file; unless holding them is the same as matching (if_verify false)
-- each is checked on the real text, read from the store for these attempts only (their ids reach the scans as a
-- list: the zone maps prune to their row groups). Fields: 0 answer, 1 content, 2 args, 3 result, 4 error, 5 the
-- long result (stored once in texts: returned with its hash and checked by search_long.sql); step -1 is the
-- answer.
-- The candidates placeholder: as in search_window.sql, among the chunk's attempt ids; ids_a, ids_k, ids_s: those ids
-- as a few ranges of integer literals on a.attempt_id, k.attempt_id, s.attempt_id (fixed SQL; the zone maps skip
-- the other row groups); field_text: the text of a step's field c.field (1-4); locate: the first match's position
-- (pos) and length (mlen) in text. A hit checked on its text comes back with the window around its first match, as
-- search_page.sql gives it (so the page need not read it again); otherwise the window is null.
-- Parameters: $aids (the attempts), $f0.., the patterns ($q, or $w0.. $r0..), $context.
WITH win AS (
    SELECT a.attempt_id, a.file_id
    FROM attempts a
    WHERE {ids_a} AND a.attempt_id IN (SELECT unnest($aids))
),
cand AS (
    {candidates}
),
verified AS (
    SELECT c.attempt_id, c.step, c.field, NULL::VARCHAR AS result_hash, NULL::VARCHAR AS text
    FROM cand c WHERE NOT {if_verify} AND c.field <> 5
    UNION ALL
    SELECT c.attempt_id, c.step, c.field, NULL::VARCHAR, k.answer
    FROM cand c
    JOIN attempts k ON k.attempt_id = c.attempt_id AND {ids_k}
    WHERE {if_verify} AND c.field = 0 AND {match_answer}
    UNION ALL
    -- the inline fields checked on their text, and a long result's hash (its text is checked by search_long.sql,
    -- read by its row): one read of the candidates' steps
    SELECT c.attempt_id, c.step, c.field, CASE WHEN c.field = 5 THEN s.result_hash END,
           CASE WHEN c.field BETWEEN 1 AND 4 THEN {field_text} END
    FROM cand c
    JOIN steps s ON s.attempt_id = c.attempt_id AND s.step = c.step AND {ids_s}
    WHERE c.field = 5 OR ({if_verify} AND c.field BETWEEN 1 AND 4 AND {match_field})
)
-- search.sql's hits: one per step for the inline fields (the first that matches), the answer and the long result
-- apart
SELECT v.attempt_id, CASE WHEN v.step >= 0 THEN v.step END AS step,
       CASE v.field WHEN 0 THEN 'answer' WHEN 1 THEN 'content' WHEN 2 THEN 'args' WHEN 4 THEN 'error'
            ELSE 'result' END AS field,
       v.field AS src, v.result_hash, v.pos, v.mlen, greatest(v.pos - $context, 1) AS w0, length(v.text) AS n_chars,
       substr(v.text, greatest(v.pos - $context, 1), v.pos - greatest(v.pos - $context, 1) + v.mlen + $context) AS win
FROM (SELECT *, {locate} FROM verified) v
QUALIFY v.field IN (0, 5) OR row_number() OVER (PARTITION BY v.attempt_id, v.step, v.field IN (0, 5) ORDER BY v.field) = 1

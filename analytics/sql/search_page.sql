-- Transcript search through its index: the texts of the hits listed (at most the page's limit), and a window
-- around the first match in each, as search.sql gives them; a long result (stored once in texts) comes back as
-- its hash only, its window from search_long.sql. Parameters: $aids, $steps, $srcs (one entry per hit: attempt,
-- step with -1 for the answer, field as in search_chunk.sql), the pattern, $context. ids_a, ids_s: their attempt
-- ids as a few ranges of integer literals on a.attempt_id and s.attempt_id (fixed SQL).
WITH top AS (
    SELECT unnest($aids) AS attempt_id, unnest($steps) AS step, unnest($srcs) AS src
),
top_text AS (
    SELECT t.attempt_id, t.step, t.src,
           CASE t.src WHEN 0 THEN a.answer WHEN 1 THEN s.content WHEN 2 THEN s.args::VARCHAR
                WHEN 3 THEN s.result WHEN 4 THEN s.error END AS text,
           CASE WHEN t.src = 5 THEN s.result_hash END AS result_hash
    FROM top t
    LEFT JOIN attempts a ON a.attempt_id = t.attempt_id AND {ids_a} AND t.src = 0
    LEFT JOIN steps s ON s.attempt_id = t.attempt_id AND s.step = t.step AND {ids_s}
),
located AS (
    SELECT *, {locate} FROM top_text
)
SELECT attempt_id, step, src, result_hash, pos, mlen, greatest(pos - $context, 1) AS w0, length(text) AS n_chars,
       substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
FROM located

-- Transcript search through its index: long results (stored once in texts) by their row numbers, whether each
-- matches, with a window around the first match. The rows placeholder is a UNION ALL of row ranges of texts
-- (integers from the index's search_long or from a lookup by hash, fixed SQL): a range of rowid prunes the scan to
-- its row groups, where a list of hashes made DuckDB read every long text (9.7 CPU s at 10M attempts for one page
-- from a subquery, 4.2 s as literals). Every row read comes back with its hash, so the caller can tell a row that
-- no longer holds the text it wants (looked up by hash then) from a text that does not match.
-- The match placeholder is the pattern's predicate on text (fixed SQL; true when the postings decided).
-- Parameters: the pattern, $context.
WITH located AS (
    SELECT text_hash, text, coalesce({match}, false) AS matched, {locate}
    FROM ({rows})
)
SELECT text_hash, matched, pos, mlen, greatest(pos - $context, 1) AS w0, length(text) AS n_chars,
       substr(text, greatest(pos - $context, 1), pos - greatest(pos - $context, 1) + mlen + $context) AS win
FROM located

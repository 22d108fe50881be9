covered_files AS (
    -- the files a segment covers with the content hash they have now: their attempts are the ones the index holds
    -- (an attempt ingested after the last refresh, or an id reused after a deletion, comes with another file);
    -- a few rows, so finding what is not covered is a filter on attempts.file_id, not a join of every attempt
    SELECT c.file_id
    FROM ({segment_files}) c
    JOIN (SELECT file_id, min(content_hash) AS content_hash FROM ingest_log GROUP BY file_id
          HAVING count(DISTINCT content_hash) = 1) f ON f.file_id = c.file_id AND f.content_hash = c.content_hash
)

covered AS (
    -- the attempts the index holds as they are now: those of the files a segment covers with the same content hash
    -- (an attempt ingested after the last refresh, or an id reused after a deletion, comes with another file)
    SELECT k.attempt_id, k.file_id
    FROM kept k
    SEMI JOIN (
        SELECT c.file_id
        FROM ({segment_files}) c
        JOIN (SELECT file_id, min(content_hash) AS content_hash FROM ingest_log GROUP BY file_id
              HAVING count(DISTINCT content_hash) = 1) f ON f.file_id = c.file_id AND f.content_hash = c.content_hash
    ) f ON f.file_id = k.file_id
)

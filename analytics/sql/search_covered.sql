covered AS (
    -- the attempts the index holds as they are now: those of the files it covers with the same content hash (an
    -- attempt ingested after the index was built, or an id reused after a deletion, comes with another file)
    SELECT k.attempt_id, k.file_id
    FROM kept k
    SEMI JOIN (
        SELECT f.file_id
        FROM (SELECT file_id, min(content_hash) AS content_hash FROM ingest_log GROUP BY file_id
              HAVING count(DISTINCT content_hash) = 1) f
        JOIN {idx}.search_files c ON c.file_id = f.file_id AND c.content_hash = f.content_hash
    ) f ON f.file_id = k.file_id
)

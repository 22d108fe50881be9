SELECT x.attempt_id, x.step, x.field, i.file_id
FROM ({postings}) x
JOIN {seg}.search_attempts i ON i.attempt_id = x.attempt_id
SEMI JOIN (
    SELECT c.file_id
    FROM {seg}.search_files c
    JOIN (SELECT file_id, min(content_hash) AS content_hash FROM ingest_log GROUP BY file_id
          HAVING count(DISTINCT content_hash) = 1) f ON f.file_id = c.file_id AND f.content_hash = c.content_hash
) f ON f.file_id = i.file_id

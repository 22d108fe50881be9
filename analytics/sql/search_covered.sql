-- The files each segment of transcript search's index covers (store/search_index.py), with the content hash they
-- still have in the store: their attempts are the ones that segment holds. A few rows (one per file), so what the
-- index does not cover is found from files, never by a join over the attempts.
-- The segment_files placeholder: fixed SQL, one SELECT per segment of (seg, file_id, content_hash).
SELECT c.seg, c.file_id
FROM ({segment_files}) c
JOIN (SELECT file_id, min(content_hash) AS content_hash FROM ingest_log GROUP BY file_id
      HAVING count(DISTINCT content_hash) = 1) f ON f.file_id = c.file_id AND f.content_hash = c.content_hash
ORDER BY c.seg, c.file_id

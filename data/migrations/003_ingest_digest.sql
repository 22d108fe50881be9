-- 003_ingest_digest: a digest of the rows each file brought, so `python -m analytics doctor` can verify them.
ALTER TABLE ingest_log ADD COLUMN rows_digest VARCHAR;

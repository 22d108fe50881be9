-- 005_cluster_labels: LLM labels of failure clusters (issue 20): one line per cluster content (sha256 of its terms
-- and member texts), model and prompt version, so the same cluster never costs a second call. Written through the
-- one writer (ingest/derived.py).
CREATE TABLE cluster_labels (
    content_key    VARCHAR   NOT NULL,
    model          VARCHAR   NOT NULL,
    prompt_version VARCHAR   NOT NULL,
    label          VARCHAR   NOT NULL,
    input_tokens   BIGINT,
    output_tokens  BIGINT,
    created_at     TIMESTAMP NOT NULL    -- UTC
);

-- 004_reviews: human reviews of attempts (issue 20). Append-only: a reviewer's newest review of an attempt is the
-- one that counts (v_reviews); the log's own labels (attempts.passed, error_labels) are never changed.
CREATE TABLE reviews (
    review_id  BIGINT    NOT NULL,
    attempt_id BIGINT    NOT NULL,
    reviewer   VARCHAR   NOT NULL,
    verdict    VARCHAR   NOT NULL CHECK (verdict IN ('correct', 'incorrect')),
    codes      VARCHAR[],                -- error codes the reviewer saw (taxonomy of DESIGN.md, or others)
    note       VARCHAR,
    source     VARCHAR   NOT NULL DEFAULT 'human' CHECK (source IN ('human')),
    created_at TIMESTAMP NOT NULL        -- UTC
);

CREATE VIEW v_reviews AS
SELECT review_id, attempt_id, reviewer, verdict, codes, note, source, created_at
FROM reviews
QUALIFY row_number() OVER (PARTITION BY attempt_id, reviewer ORDER BY created_at DESC, review_id DESC) = 1;

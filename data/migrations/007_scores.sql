-- 007_scores: every score of an attempt (issue 29): one row per scorer (or key of a dict score) on the scorer's own
-- scale, beside the attempt's headline score; a re-scored log (`inspect score`) adds a revision, the earlier rows
-- stay with is_current = false, and score_revisions says when and what the run was before.
CREATE TABLE scores (
    attempt_id  BIGINT  NOT NULL,
    scorer      VARCHAR NOT NULL,        -- scorer name, or scorer/key for a key of a dict score
    value       DOUBLE,                  -- Inspect's value_to_float, on the scorer's own scale (never clipped)
    raw_value   JSON,                    -- the value as the log wrote it ("C", "yes", 7, ...)
    answer      VARCHAR,
    explanation VARCHAR,
    is_headline BOOLEAN NOT NULL DEFAULT false, -- the score the attempt's score/raw_score/passed came from
    revision    INTEGER NOT NULL DEFAULT 1,
    is_current  BOOLEAN NOT NULL DEFAULT true,
    file_id     BIGINT                   -- ingest_log row of the file that gave this revision
);

CREATE TABLE score_revisions (
    run_id          VARCHAR   NOT NULL,
    revision        INTEGER   NOT NULL,  -- 2 for the first re-scoring (the run's first ingest is revision 1)
    file_id         BIGINT,
    at_utc          TIMESTAMP NOT NULL,
    n_attempts      BIGINT,              -- attempts whose scores this revision replaced
    previous_status VARCHAR,
    previous_extra  JSON                 -- the run's extra before (Inspect's results of the earlier revision)
);

-- The headline score of attempts ingested before this migration (the Inspect reader kept its scorer in extra).
INSERT INTO scores (attempt_id, scorer, value, raw_value, answer, explanation, is_headline, file_id)
SELECT attempt_id, json_extract_string(extra, '$.scorer'), raw_score, json_extract(extra, '$.score_value'), answer,
       json_extract_string(extra, '$.explanation'), true, file_id
FROM attempts
WHERE json_extract_string(extra, '$.scorer') IS NOT NULL;

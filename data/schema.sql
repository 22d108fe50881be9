-- Runlens schema, current version (schema_version in meta). Migrations in data/migrations/ reach the
-- same catalog from any older database; tests/test_schema.py checks that they agree.
-- Keys follow STYLE.md: run_id, task_id, sample, step; units in names; booleans is_/has_.

CREATE TABLE meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR
);

CREATE TABLE benchmarks (
    benchmark      VARCHAR PRIMARY KEY,
    version        VARCHAR,
    scoring        VARCHAR NOT NULL DEFAULT 'binary' CHECK (scoring IN ('binary', 'graded', 'continuous')),
    pass_threshold DOUBLE  NOT NULL DEFAULT 1.0,
    description    VARCHAR,
    tool_graph     JSON,                 -- {"tool": ["prerequisite", ...]}: a declared dependency graph
    is_demo        BOOLEAN NOT NULL DEFAULT false,
    extra          JSON
);

CREATE TABLE tasks (
    benchmark            VARCHAR NOT NULL,
    task_id              VARCHAR NOT NULL,
    level                VARCHAR,
    category             VARCHAR,
    capabilities         VARCHAR[],
    human_minutes        DOUBLE,
    query                VARCHAR,
    reference_answer     VARCHAR,
    reference_trajectory VARCHAR[],
    extra                JSON,
    PRIMARY KEY (benchmark, task_id)
);

CREATE TABLE runs (
    run_id                VARCHAR PRIMARY KEY,
    benchmark             VARCHAR NOT NULL,
    agent                 VARCHAR NOT NULL,
    family                VARCHAR,
    agent_version         VARCHAR,
    kind                  VARCHAR NOT NULL DEFAULT 'llm' CHECK (kind IN ('llm', 'agent', 'framework', 'human')),
    eval_date             DATE,
    judge                 VARCHAR,
    price_input_per_mtok  DOUBLE,
    price_output_per_mtok DOUBLE,
    status                VARCHAR,       -- e.g. 'cancelled' for an Inspect log without samples
    file_id               BIGINT,        -- ingest_log row that first brought the run
    is_demo               BOOLEAN NOT NULL DEFAULT false,
    extra                 JSON
);

CREATE TABLE attempts (
    attempt_id       BIGINT  NOT NULL,
    run_id           VARCHAR NOT NULL,
    task_id          VARCHAR NOT NULL,
    sample           INTEGER NOT NULL,
    score            DOUBLE,             -- normalised to [0, 1]
    raw_score        DOUBLE,             -- as the log gave it (1-5 for graded benchmarks)
    passed           BOOLEAN,
    answer           VARCHAR,
    input_tokens     BIGINT,
    output_tokens    BIGINT,
    cost_usd         DOUBLE,
    is_cost_computed BOOLEAN NOT NULL DEFAULT false, -- true when derived from tokens x run prices
    latency_s        DOUBLE,
    status           VARCHAR NOT NULL DEFAULT 'completed'
                     CHECK (status IN ('completed', 'tool_failure', 'timeout', 'crashed', 'refused')),
    n_steps          INTEGER NOT NULL DEFAULT 0,
    n_tool_calls     INTEGER NOT NULL DEFAULT 0,
    n_rounds         INTEGER NOT NULL DEFAULT 0,
    judge            JSON,
    file_id          BIGINT,
    extra            JSON
);

-- One row per step of a trajectory. Long tool results live once in `texts` (by content hash);
-- short ones stay inline. Read through the view v_steps, which resolves both.
CREATE TABLE steps (
    attempt_id    BIGINT  NOT NULL,
    step          INTEGER NOT NULL,      -- 0-based position in the trajectory
    round         INTEGER,
    kind          VARCHAR NOT NULL,      -- tool_call, final, thought, model, user, error, ...
    tool          VARCHAR,
    args          JSON,
    content       VARCHAR,               -- text of a thought/final/model message
    result        VARCHAR,               -- inline tool result (short)
    result_hash   VARCHAR,               -- key into texts for a long result
    result_chars  INTEGER,
    input_tokens  BIGINT,
    output_tokens BIGINT,
    latency_s     DOUBLE,
    error         VARCHAR,
    extra         JSON
);

CREATE TABLE texts (
    text_hash VARCHAR NOT NULL,          -- sha256 hex of the text (UTF-8)
    text      VARCHAR NOT NULL
);

CREATE TABLE error_labels (
    attempt_id     BIGINT  NOT NULL,
    code           VARCHAR NOT NULL,
    source         VARCHAR NOT NULL CHECK (source IN ('label', 'rule', 'judge')),
    step           INTEGER,
    detail         VARCHAR,
    model          VARCHAR,              -- judge model, for source = 'judge'
    prompt_version VARCHAR,              -- judge prompt version, for source = 'judge'
    graph_hash     VARCHAR               -- tool graph hash, for source = 'rule'
);

CREATE TABLE attempt_metrics (
    attempt_id BIGINT  NOT NULL,
    name       VARCHAR NOT NULL,
    value      DOUBLE,
    source     VARCHAR NOT NULL DEFAULT 'log',  -- log, computed, judge
    model      VARCHAR                          -- embedding or judge model that produced it
);

CREATE TABLE ratings (
    attempt_id BIGINT  NOT NULL,
    rater      VARCHAR NOT NULL,
    rater_kind VARCHAR NOT NULL DEFAULT 'llm' CHECK (rater_kind IN ('human', 'llm')),
    dimension  VARCHAR NOT NULL,
    value      DOUBLE  NOT NULL,
    extra      JSON                      -- the record's fields the format does not define (kept, never dropped)
);

CREATE TABLE ingest_log (
    file_id      BIGINT  NOT NULL,
    path         VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    format       VARCHAR NOT NULL,
    n_runs       INTEGER,
    n_tasks      INTEGER,
    n_attempts   BIGINT,
    n_steps      BIGINT,
    started_at   TIMESTAMP,               -- UTC
    seconds      DOUBLE,
    outcome      VARCHAR NOT NULL CHECK (outcome IN ('ingested', 'duplicate', 'failed', 'deleted')),
    errors       VARCHAR,
    is_demo      BOOLEAN NOT NULL DEFAULT false,
    rows_digest  VARCHAR                 -- md5 over the file's attempt rows (see store/sql/file_digest.sql)
);

-- Audit trail for destructive actions (deleting a run from the upload page, rule recomputation).
CREATE TABLE audit_log (
    at_utc  TIMESTAMP NOT NULL,
    action  VARCHAR   NOT NULL,
    subject VARCHAR,
    detail  JSON
);

-- LLM judge cache: one verdict per (attempt, prompt version, model).
CREATE TABLE judge_verdicts (
    attempt_id     BIGINT  NOT NULL,
    prompt_version VARCHAR NOT NULL,
    model          VARCHAR NOT NULL,
    verdict        JSON,                  -- parsed, schema-valid output; NULL on failure
    is_failure     BOOLEAN NOT NULL DEFAULT false,
    failure        VARCHAR,
    raw_output     VARCHAR,
    input_tokens   BIGINT,
    output_tokens  BIGINT,
    cost_usd       DOUBLE,
    created_at     TIMESTAMP NOT NULL
);

-- IRT fits, keyed by a hash of the response matrix and the settings.
CREATE TABLE irt_fits (
    fit_key     VARCHAR PRIMARY KEY,
    benchmark   VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    settings    JSON,
    created_at  TIMESTAMP NOT NULL,
    seconds     DOUBLE,
    scale_shift DOUBLE,                  -- how far the anchored scale moved against the previous fit
    extra       JSON
);

CREATE TABLE irt_abilities (
    fit_key         VARCHAR NOT NULL,
    subject         VARCHAR NOT NULL,    -- agent + version
    agent           VARCHAR,
    agent_version   VARCHAR,
    family          VARCHAR,
    ability         DOUBLE,
    ability_lo      DOUBLE,
    ability_hi      DOUBLE,
    n_items         INTEGER,
    first_eval_date DATE,
    is_flagged      BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE irt_items (
    fit_key        VARCHAR NOT NULL,
    task_id        VARCHAR NOT NULL,
    difficulty     DOUBLE,
    discrimination DOUBLE,
    pass_rate      DOUBLE,
    n_subjects     INTEGER,
    flag           VARCHAR
);

-- Sentence-embedding cache for GEM-Bench metrics: one vector per (text hash, model).
CREATE TABLE embeddings (
    text_hash VARCHAR NOT NULL,
    model     VARCHAR NOT NULL,
    vector    FLOAT[]  NOT NULL
);

-- LLM labels of failure clusters (migration 005), keyed by the cluster's content, model and prompt version.
CREATE TABLE cluster_labels (
    content_key    VARCHAR   NOT NULL,
    model          VARCHAR   NOT NULL,
    prompt_version VARCHAR   NOT NULL,
    label          VARCHAR   NOT NULL,
    input_tokens   BIGINT,
    output_tokens  BIGINT,
    created_at     TIMESTAMP NOT NULL    -- UTC
);

-- Friendly views: common questions need no joins.
CREATE VIEW v_steps AS
SELECT s.attempt_id, s.step, s.round, s.kind, s.tool, s.args, s.content,
       coalesce(s.result, t.text) AS result, s.result_chars,
       s.input_tokens, s.output_tokens, s.latency_s, s.error, s.extra
FROM steps s
LEFT JOIN texts t ON t.text_hash = s.result_hash;

CREATE VIEW v_attempts AS
SELECT a.attempt_id, r.benchmark, a.run_id, r.agent, r.family, r.agent_version, r.kind, r.eval_date,
       a.task_id, t.level, t.category, a.sample, a.score, a.raw_score, a.passed, a.status,
       a.input_tokens, a.output_tokens, a.cost_usd, a.latency_s, a.n_steps, a.n_tool_calls, a.n_rounds,
       a.answer, t.reference_answer, t.human_minutes
FROM attempts a
JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id;

CREATE VIEW v_errors AS
SELECT e.attempt_id, a.benchmark, a.run_id, a.agent, a.agent_version, a.task_id, a.level, a.category,
       a.sample, a.passed, e.code, e.source, e.step, e.detail
FROM error_labels e
JOIN v_attempts a USING (attempt_id);

-- 002: friendly views for the SQL explorer.
CREATE VIEW v_runs AS
SELECT r.run_id, r.benchmark, r.agent, r.family, r.agent_version, r.kind, r.eval_date, r.judge, r.is_demo,
       count(a.attempt_id) AS n_attempts, count(DISTINCT a.task_id) AS n_tasks,
       avg(a.passed::DOUBLE) AS pass_rate, avg(a.score) AS mean_score,
       sum(a.input_tokens) AS input_tokens, sum(a.output_tokens) AS output_tokens, sum(a.cost_usd) AS cost_usd,
       avg(a.latency_s) AS mean_latency_s, avg(a.n_tool_calls) AS mean_tool_calls
FROM runs r
LEFT JOIN attempts a USING (run_id)
GROUP BY ALL;

CREATE VIEW v_tool_calls AS
SELECT s.attempt_id, a.benchmark, a.run_id, a.agent, a.agent_version, a.task_id, a.level, a.category, a.sample,
       a.passed, s.step, s.round, s.tool, s.args, s.result_chars, s.latency_s, s.error,
       s.error IS NOT NULL AS is_error
FROM steps s
JOIN v_attempts a USING (attempt_id)
WHERE s.kind = 'tool_call';

CREATE VIEW v_attempt_capabilities AS
SELECT a.attempt_id, a.benchmark, a.run_id, a.agent, a.kind, a.eval_date, a.task_id, a.level, a.category,
       a.sample, a.score, a.passed, a.status, unnest(t.capabilities) AS capability
FROM v_attempts a
JOIN tasks t ON t.benchmark = a.benchmark AND t.task_id = a.task_id;

-- 005: human reviews of attempts (issue 20). Append-only: a reviewer's newest review of an attempt is the
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

-- 008_run_task_stats: what the pages read of the attempts, per (run, task), kept up to date by the writer in the
-- transaction that changes the attempts (store/aggregates.py: ingest, deletion, replaced attempts, late scores), so
-- the Leaderboard, Tech-Market-Fit, Errors and Progress read runs x tasks rows instead of every attempt (issue 33).
-- Means are the attempts' own avg() of each group (the same values the pages computed from the attempts); the
-- groups: all attempts, scored ones (score not null: the leaderboard's), and scored ones not errored (status not
-- crashed: the leaderboard with errored attempts left out).
CREATE TABLE run_task_stats (
    run_id                 VARCHAR NOT NULL,
    task_id                VARCHAR NOT NULL,
    n_attempts             BIGINT  NOT NULL,
    n_passed               BIGINT  NOT NULL,
    n_failed               BIGINT  NOT NULL,  -- passed = false (an attempt without a verdict is neither)
    n_errored              BIGINT  NOT NULL,  -- status crashed
    n_limited              BIGINT  NOT NULL,  -- status timeout
    n_unscored             BIGINT  NOT NULL,  -- score null
    score_mean             DOUBLE,
    cost_usd_mean          DOUBLE,
    input_tokens_mean      DOUBLE,
    output_tokens_mean     DOUBLE,
    latency_s_mean         DOUBLE,
    n_scored               BIGINT  NOT NULL,
    n_scored_passed        BIGINT  NOT NULL,
    tool_calls_mean_scored DOUBLE,
    cost_usd_mean_scored   DOUBLE,
    n_kept                 BIGINT  NOT NULL,  -- scored and not crashed
    n_kept_passed          BIGINT  NOT NULL,
    score_mean_kept        DOUBLE,
    tool_calls_mean_kept   DOUBLE,
    cost_usd_mean_kept     DOUBLE,
    PRIMARY KEY (run_id, task_id)
);

-- Failed attempts carrying an error code, per (run, task, code) and set of label sources that gave the code to the
-- attempt (sources_mask: label 1, rule 2, judge 4): the Errors page counts the attempts of the sources it is shown
-- (those whose mask shares a bit with the chosen sources') without reading attempts and labels again.
CREATE TABLE run_task_codes (
    run_id       VARCHAR NOT NULL,
    task_id      VARCHAR NOT NULL,
    code         VARCHAR NOT NULL,
    sources_mask INTEGER NOT NULL,
    n_failed     BIGINT  NOT NULL,
    PRIMARY KEY (run_id, task_id, code, sources_mask)
);

-- Pairs of codes carried by the same failed attempt, counted per run and by the two codes' source sets (the
-- diagonal: attempts with the code): the Errors page's co-occurrence matrix for any choice of sources.
CREATE TABLE run_code_pairs (
    run_id  VARCHAR NOT NULL,
    code_a  VARCHAR NOT NULL,
    mask_a  INTEGER NOT NULL,
    code_b  VARCHAR NOT NULL,
    mask_b  INTEGER NOT NULL,
    n       BIGINT  NOT NULL,
    PRIMARY KEY (run_id, code_a, mask_a, code_b, mask_b)
);

-- 009_run_judge_counts: what the judge's corrected figures read of every attempt, kept per run by the writer
-- (store/aggregates.py): its attempts, those with a judge's verdict (a Runlens judge's, else the log's judge's) and
-- those the judge calls correct; and per (run, label source, code) the attempts carrying the code.
CREATE TABLE run_judge_counts (
    run_id           VARCHAR NOT NULL,
    n_attempts       BIGINT  NOT NULL,
    n_judged         BIGINT  NOT NULL,
    n_judged_correct BIGINT  NOT NULL,
    PRIMARY KEY (run_id)
);

CREATE TABLE run_label_codes (
    run_id     VARCHAR NOT NULL,
    source     VARCHAR NOT NULL,
    code       VARCHAR NOT NULL,
    n_attempts BIGINT  NOT NULL,
    PRIMARY KEY (run_id, source, code)
);

-- 009: the Errors table's counts per run and slice (level, category), summed from the per (run, task) rows.
CREATE TABLE run_slice_stats (
    run_id     VARCHAR NOT NULL,
    level      VARCHAR,
    category   VARCHAR,
    n_attempts BIGINT  NOT NULL,
    n_failed   BIGINT  NOT NULL
);

CREATE TABLE run_slice_codes (
    run_id       VARCHAR NOT NULL,
    level        VARCHAR,
    category     VARCHAR,
    code         VARCHAR NOT NULL,
    sources_mask INTEGER NOT NULL,
    n_failed     BIGINT  NOT NULL
);

-- 010_failure_clusters: what the Failure clusters page reads once it has been computed (issue 32).
-- failure_documents: each failed attempt's document (analytics/clusters/load.py) as its segments before the
-- boilerplate cut, and each segment as boilerplate is recognised (digits and ids masked), per document version, so
-- only failures without one are built again; the cut itself (a segment in at least half the failures) runs in SQL
-- over these rows. content_hash: a hash of the segments, so the clustering's fingerprint changes when a document
-- does. Rows go with their attempt (store/delete.py's ATTEMPT_CHILDREN).
CREATE TABLE failure_documents (
    attempt_id   BIGINT    NOT NULL,
    doc_version  VARCHAR   NOT NULL,
    segments     VARCHAR[] NOT NULL,
    masked       VARCHAR[] NOT NULL,
    content_hash BIGINT    NOT NULL,
    PRIMARY KEY (attempt_id, doc_version)
);

-- failure_clusterings: one computed clustering of a benchmark's (or a run's) failures, keyed by what it was computed
-- from (benchmark, run, model, document and clustering versions, and the fingerprint of the failures' documents):
-- when the failures change, the key changes and the page computes it again. summary: the clusters' names,
-- evidence and trends as JSON records. failure_cluster_members: each member attempt's cluster (-1: unclustered).
CREATE TABLE failure_clusterings (
    clustering_key VARCHAR   NOT NULL PRIMARY KEY,
    benchmark      VARCHAR   NOT NULL,
    run_id         VARCHAR,
    model          VARCHAR   NOT NULL,
    n_failures     BIGINT    NOT NULL,
    summary        VARCHAR   NOT NULL,
    created_at     TIMESTAMP NOT NULL   -- UTC
);

CREATE TABLE failure_cluster_members (
    clustering_key VARCHAR NOT NULL,
    attempt_id     BIGINT  NOT NULL,
    cluster_id     INTEGER NOT NULL
);

-- 011_run_task_first: what the Version diff reads of each task of a run, kept per (run, task) by the writer
-- (store/task_first.py): over the attempts with a verdict their number, pass rate, the first sample's verdict and
-- number, means of score, cost, latency, tokens and tool calls; over every attempt mean latency and tokens and the
-- first attempt id; the task's error codes from every source, sorted.
CREATE TABLE run_task_first (
    run_id        VARCHAR   NOT NULL,
    task_id       VARCHAR   NOT NULL,
    n             BIGINT    NOT NULL,
    rate          DOUBLE,
    first         INTEGER   NOT NULL,
    first_sample  INTEGER   NOT NULL,
    score         DOUBLE,
    cost_usd      DOUBLE,
    latency_s     DOUBLE,
    tokens        DOUBLE,
    steps         DOUBLE,
    all_latency_s DOUBLE,
    all_tokens    DOUBLE,
    first_attempt BIGINT    NOT NULL,
    codes         VARCHAR[],
    PRIMARY KEY (run_id, task_id)
);

-- 012_run_task_tmf: the Tech-Market-Fit page's row of each (run, task) on integer codes, kept by the writer
-- (store/tmf_rows.py): the pair's run_task_stats numbers under its run's code (tmf_run_codes) and its benchmark's
-- task's code (tmf_task_codes), so the page reads integers and numbers instead of joining rows on text ids.
CREATE TABLE tmf_run_codes (
    run_id   VARCHAR NOT NULL,
    run_code INTEGER NOT NULL,
    PRIMARY KEY (run_id)
);

-- (015) each coded task's level and category, and whether the tasks table lists it, and (016) its human minutes,
-- given with the code
CREATE TABLE tmf_task_codes (
    benchmark     VARCHAR NOT NULL,
    task_id       VARCHAR NOT NULL,
    task_code     INTEGER NOT NULL,
    level         VARCHAR,
    category      VARCHAR,
    is_listed     BOOLEAN,
    human_minutes DOUBLE,
    PRIMARY KEY (benchmark, task_id)
);

CREATE TABLE run_task_tmf (
    run_code      INTEGER NOT NULL,
    task_code     INTEGER NOT NULL,
    n             BIGINT  NOT NULL,
    c             BIGINT  NOT NULL,
    score         DOUBLE,
    cost_usd      DOUBLE,
    input_tokens  DOUBLE,
    output_tokens DOUBLE,
    latency_s     DOUBLE,
    PRIMARY KEY (run_code, task_code)
);

-- 013_run_task_board: the Leaderboard's row of each (run, task) on the codes of 012, kept by the writer
-- (store/tmf_rows.py): the pair's run_task_stats columns that analytics/sql/task_outcome_rows.sql reads, so the page
-- reads integers and numbers instead of joining rows on text ids.
CREATE TABLE run_task_board (
    run_code               INTEGER NOT NULL,
    task_code              INTEGER NOT NULL,
    n_scored               BIGINT  NOT NULL,
    n_scored_passed        BIGINT  NOT NULL,
    score_mean             DOUBLE,
    tool_calls_mean_scored DOUBLE,
    cost_usd_mean_scored   DOUBLE,
    n_kept                 BIGINT  NOT NULL,
    n_kept_passed          BIGINT  NOT NULL,
    score_mean_kept        DOUBLE,
    tool_calls_mean_kept   DOUBLE,
    cost_usd_mean_kept     DOUBLE,
    PRIMARY KEY (run_code, task_code)
);

-- 014_run_health_sums: each run's attempt counts that run health sums from its run_task_stats rows, under the run's
-- code of 012, kept by the writer (store/tmf_rows.py), so the Leaderboard's first view reads one row per run.
CREATE TABLE run_health_sums (
    run_code        INTEGER NOT NULL,
    n_attempts      BIGINT  NOT NULL,
    n_errored       BIGINT  NOT NULL,
    n_limited       BIGINT  NOT NULL,
    n_unscored      BIGINT  NOT NULL,
    n_scored        BIGINT  NOT NULL,
    n_scored_passed BIGINT  NOT NULL,
    n_kept          BIGINT  NOT NULL,
    n_kept_passed   BIGINT  NOT NULL,
    PRIMARY KEY (run_code)
);

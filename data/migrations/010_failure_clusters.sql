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

-- 014_run_health_sums: each run's attempt counts that run health (analytics/runs, the Leaderboard's first view) sums
-- from its run_task_stats rows, kept per run under migration 012's run code by the writer in the transaction that
-- changes the attempts (store/tmf_rows.py: ingest, deletion, replaced attempts, late scores), so the page reads one
-- row per run instead of summing 867k (run, task) rows at 10M attempts (issue 33).
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

-- the backfill, from the codes migration 012 gave (every run with run_task_stats rows has one)
INSERT INTO run_health_sums
SELECT rc.run_code, sum(s.n_attempts), sum(s.n_errored), sum(s.n_limited), sum(s.n_unscored), sum(s.n_scored),
       sum(s.n_scored_passed), sum(s.n_kept), sum(s.n_kept_passed)
FROM run_task_stats s
JOIN tmf_run_codes rc ON rc.run_id = s.run_id
GROUP BY rc.run_code
ORDER BY rc.run_code;

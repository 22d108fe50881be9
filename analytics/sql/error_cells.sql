-- Error labels on failed attempts counted per (run, level, category, code): distinct attempts per cell, so a code
-- reported by several sources (log label, rule, judge) or at several steps of one attempt counts once. Read from
-- the per (run, slice) sums the writer keeps (run_slice_codes, migration 009: failed attempts per run, slice, code
-- and set of sources, summed from 008's run_task_codes), summing the attempts whose sources share one with the
-- chosen ones.
-- Parameters: the run filter's (store/filters.py), $sources_mask (label 1, rule 2, judge 4; all: 7).
WITH runs_in AS (
    SELECT r.run_id
    FROM runs r
    WHERE $run_filter
)
SELECT c.run_id, c.level, c.category, c.code, sum(c.n_failed)::BIGINT AS n
FROM run_slice_codes c
JOIN runs_in r USING (run_id)
WHERE (c.sources_mask & $sources_mask) <> 0
GROUP BY ALL
ORDER BY c.run_id, c.level, c.category, c.code

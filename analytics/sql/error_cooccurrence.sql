-- Pairs of codes carried by the same failed attempt, counted per run (the diagonal: attempts with the code), from
-- the aggregate the writer keeps (run_code_pairs, migration 008: per run and the two codes' sets of sources): a
-- pair counts when each code came from one of the chosen sources.
-- Parameters: the run filter's (store/filters.py), $sources_mask (label 1, rule 2, judge 4; all: 7).
SELECT p.run_id, p.code_a, p.code_b, sum(p.n)::BIGINT AS n
FROM run_code_pairs p
JOIN runs r USING (run_id)
WHERE (p.mask_a & $sources_mask) <> 0 AND (p.mask_b & $sources_mask) <> 0
  AND $run_filter
GROUP BY ALL
ORDER BY p.run_id, p.code_a, p.code_b

-- Attempts held per run, for the runs given ($run_ids: those whose log counts its samples, i.e. Inspect runs).
SELECT a.run_id, count(*) AS n
FROM attempts a
JOIN (SELECT unnest($run_ids) AS run_id) r USING (run_id)
GROUP BY a.run_id

-- The runs the filter keeps, in the order transcript search lists its hits (their attempt id ranges come from the
-- index's manifest: analytics/search/load.py; search_runs.sql reads them from the attempts when it has none).
-- Parameters: the run filter's.
SELECT r.run_id
FROM runs r
WHERE $run_filter
ORDER BY r.run_id

-- The global run filter: a condition on a runs row aliased r (store/filters.py puts it where a query says
-- $run_filter). Parameters: $benchmark, $agents (list), $date_from, $date_to, $run_ids (list), each NULL for
-- "no restriction", and $with_humans (human runs pass the agent filter).
($benchmark IS NULL OR r.benchmark = $benchmark)
AND ($agents IS NULL OR list_contains($agents, r.agent) OR ($with_humans AND r.kind = 'human'))
AND ($date_from IS NULL OR r.eval_date >= $date_from)
AND ($date_to IS NULL OR r.eval_date <= $date_to)
AND ($run_ids IS NULL OR list_contains($run_ids, r.run_id))

-- title: Error codes per benchmark and source
-- description: From v_errors: how many labels of each code, where they came from (log label, rule, judge) and on how many distinct attempts.
SELECT benchmark, code, source, count(*) AS n_labels, count(DISTINCT attempt_id) AS n_attempts
FROM v_errors
GROUP BY ALL
ORDER BY benchmark, n_labels DESC;

-- title: xbench Table 9: recruitment scores by category
-- description: Graded benchmark: the judge's 1-5 score is stored normalised to [0, 1]; x100 gives the paper's 0-100 scale. Average = mean over all tasks and samples; one column per task category.
SELECT rank() OVER (ORDER BY avg(score) DESC)                              AS rank,
       agent,
       round(100 * avg(score), 1)                                          AS average,
       round(100 * avg(score) FILTER (category = 'Company Mapping'), 1)    AS company,
       round(100 * avg(score) FILTER (category = 'People-to-Info'), 1)     AS "People-to-Info",
       round(100 * avg(score) FILTER (category = 'Info-to-People'), 1)     AS "Info-to-People"
FROM v_attempts
WHERE benchmark = 'xbench-recruitment'
GROUP BY agent
ORDER BY rank, agent;

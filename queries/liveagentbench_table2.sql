-- title: LiveAgentBench Table 2: Pass@1 by scenario and capability
-- description: Percent of tasks solved per subject, over all tasks, per scenario (task category: W&S, DL, IA&P, H&SS, SP) and per capability the task needs (text file, image, video, audio). Grouped as in the paper: LLMs, Agents, Framework, Human.
WITH attempts AS (
    SELECT v.agent, v.kind, v.category, t.capabilities, v.passed::DOUBLE AS ok
    FROM v_attempts v
    JOIN tasks t ON t.benchmark = v.benchmark AND t.task_id = v.task_id
    WHERE v.benchmark = 'liveagentbench'
)
SELECT CASE kind WHEN 'llm' THEN 'LLMs' WHEN 'agent' THEN 'Agents'
                 WHEN 'framework' THEN 'Framework' ELSE 'Human' END                          AS "group",
       agent                                                                                 AS subject,
       round(100 * avg(ok), 2)                                                               AS overall,
       round(100 * avg(ok) FILTER (category = 'W&S'), 2)                                     AS "W&S",
       round(100 * avg(ok) FILTER (category = 'DL'), 2)                                      AS "DL",
       round(100 * avg(ok) FILTER (category = 'IA&P'), 2)                                    AS "IA&P",
       round(100 * avg(ok) FILTER (category = 'H&SS'), 2)                                    AS "H&SS",
       round(100 * avg(ok) FILTER (category = 'SP'), 2)                                      AS "SP",
       round(100 * avg(ok) FILTER (list_contains(capabilities, 'text file')), 2)             AS "Text File",
       round(100 * avg(ok) FILTER (list_contains(capabilities, 'image')), 2)                 AS "Image",
       round(100 * avg(ok) FILTER (list_contains(capabilities, 'video')), 2)                 AS "Video",
       round(100 * avg(ok) FILTER (list_contains(capabilities, 'audio')), 2)                 AS "Audio"
FROM attempts
GROUP BY kind, agent
ORDER BY CASE kind WHEN 'llm' THEN 1 WHEN 'agent' THEN 2 WHEN 'framework' THEN 3 ELSE 4 END, overall, subject;

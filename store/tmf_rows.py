"""``run_task_tmf`` (migration 012): per (run, task), the Tech-Market-Fit page's row -- the pair's
``run_task_stats`` row (migration 008) under integer codes of its run (``tmf_run_codes``) and its benchmark's task
(``tmf_task_codes``), so the page reads integers and numbers instead of joining every row on text ids; and
``run_task_board`` (migration 013): the Leaderboard's columns of the same row under the same codes; and
``run_health_sums`` (migration 014): per run code, the sums of its rows' counts that run health reads. Kept by the
writer in the transaction that changes the attempts: store/aggregates.py calls ``refresh_runs`` after it has made
the ``run_task_stats`` rows of the runs it touched current (ingest, replaced attempts, late scores) and
``drop_run`` when a run is deleted, so the rows always equal what ``run_task_stats`` gives (``expected_sql``).
Error labels (judge verdicts, rule findings) change no row here.
The rows of these tables always equal what ``run_task_stats`` gives (``expected_sql``, ``board_expected_sql``,
``health_expected_sql``).

Part of the store: all write SQL of the project lives under ``store/``.
"""

from __future__ import annotations

import duckdb

TABLES = ("tmf_run_codes", "tmf_task_codes", "run_task_tmf", "run_task_board", "run_health_sums")
CODED = ("run_task_tmf", "run_task_board", "run_health_sums")  # the tables on the codes (a run's rows by its code)
# its level, category and is_listed (migration 015) and human_minutes (016) are kept: checked and rebuilt by doctor
KINDS = "tmf_task_codes"

# the (run, task) rows of the runs in the temporary table _rl_tmf_runs, from their run_task_stats rows (current);
# {columns}: the table's own columns of run_task_stats (constants below); {runs}: the runs' ids as a constant list of
# parameters, which a lake's scan skips other runs' files and row groups by; {stats}: run_task_stats, or a table of
# its columns holding the runs' rows (``refresh_runs``)
_CODED_ROWS = """
SELECT rc.run_code, tc.task_code, {columns}
FROM {stats} s
JOIN _rl_tmf_runs k ON k.run_id = s.run_id
JOIN tmf_run_codes rc ON rc.run_id = s.run_id
JOIN tmf_task_codes tc ON tc.benchmark = k.benchmark AND tc.task_id = s.task_id
WHERE s.run_id IN ({runs})
ORDER BY rc.run_code, tc.task_code"""
_TMF_COLUMNS = (
    "s.n_attempts, s.n_passed, s.score_mean, s.cost_usd_mean, s.input_tokens_mean, s.output_tokens_mean, "
    "s.latency_s_mean"
)
# the Leaderboard's table: the columns analytics/sql/task_outcome_rows.sql reads
_BOARD_COLUMNS = (
    "s.n_scored, s.n_scored_passed, s.score_mean, s.tool_calls_mean_scored, s.cost_usd_mean_scored, s.n_kept, "
    "s.n_kept_passed, s.score_mean_kept, s.tool_calls_mean_kept, s.cost_usd_mean_kept"
)

# run_health_sums (migration 014): each run's sums of its run_task_stats counts, the runs in _rl_tmf_runs
_HEALTH_SUMS = """
SELECT rc.run_code, sum(s.n_attempts), sum(s.n_errored), sum(s.n_limited), sum(s.n_unscored), sum(s.n_scored),
       sum(s.n_scored_passed), sum(s.n_kept), sum(s.n_kept_passed)
FROM {stats} s
JOIN _rl_tmf_runs k ON k.run_id = s.run_id
JOIN tmf_run_codes rc ON rc.run_id = s.run_id
WHERE s.run_id IN ({runs})
GROUP BY rc.run_code
ORDER BY rc.run_code"""


def refresh_runs(
    con: duckdb.DuckDBPyConnection,
    runs_sql: str,
    params: object = None,
    *,
    new: bool = False,
    stats: str = "run_task_stats",
) -> None:
    """The rows of the runs ``runs_sql`` selects (a SELECT with a ``run_id`` column) written again from their
    ``run_task_stats`` rows, which must be current (inside the caller's transaction): a run or task without a code
    gets one (the next integers after the store's largest; a task's with its level and category and whether the
    ``tasks`` table lists it, migration 015, and its human_minutes, 016: a task's row is stored before its attempts
    and never changes), the
    runs' rows go and come back in code order. ``new``:
    the runs have no rows yet (an ingested file's new runs), so none is deleted. ``stats``: a table of
    ``run_task_stats``' columns that holds those runs' rows (an ingested batch's, computed in memory by
    store/aggregates.py), read instead of the store's (a name from the store's own code, never user input)."""
    run_ids = [str(r[0]) for r in con.execute(f"SELECT DISTINCT run_id FROM ({runs_sql})", params).fetchall()]
    if not run_ids:
        return
    marks = ", ".join("?" for _ in run_ids)  # one parameter per run: a constant list the scans are filtered by
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _rl_tmf_runs AS SELECT run_id, benchmark FROM runs WHERE run_id IN ({marks})",
        run_ids,
    )
    try:
        if not new:
            for table in CODED:  # an allow-list of table names
                con.execute(
                    f"DELETE FROM {table} WHERE run_code IN "
                    "(SELECT rc.run_code FROM tmf_run_codes rc SEMI JOIN _rl_tmf_runs k ON k.run_id = rc.run_id)"
                )
        con.execute(
            """
            INSERT INTO tmf_run_codes
            SELECT k.run_id, ((SELECT coalesce(max(run_code), -1) FROM tmf_run_codes)
                              + row_number() OVER (ORDER BY k.run_id))::INTEGER
            FROM _rl_tmf_runs k
            WHERE k.run_id NOT IN (SELECT run_id FROM tmf_run_codes)"""
        )
        # the runs' tasks without a code (in memory: none in the usual ingest into a benchmark already stored), then
        # their codes with their level, category, listing (migration 015) and human minutes (016) only when there are some, so an
        # ingest of known tasks reads no task and writes no code
        fresh = con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _rl_tmf_new AS
            WITH new AS (
                SELECT DISTINCT k.benchmark, s.task_id
                FROM {stats} s JOIN _rl_tmf_runs k ON k.run_id = s.run_id
                WHERE s.run_id IN ({marks})
            )
            SELECT n.benchmark, n.task_id
            FROM new n ANTI JOIN tmf_task_codes c ON c.benchmark = n.benchmark AND c.task_id = n.task_id""",
            run_ids,
        ).fetchall()
        if fresh and fresh[0][0]:
            con.execute(
                """
                INSERT INTO tmf_task_codes (benchmark, task_id, task_code, level, category, is_listed, human_minutes)
                SELECT n.benchmark, n.task_id, ((SELECT coalesce(max(task_code), -1) FROM tmf_task_codes)
                                                + row_number() OVER (ORDER BY n.benchmark, n.task_id))::INTEGER,
                       t.level, t.category, t.task_id IS NOT NULL, t.human_minutes
                FROM _rl_tmf_new n LEFT JOIN tasks t ON t.benchmark = n.benchmark AND t.task_id = n.task_id"""
            )
        con.execute(
            f"INSERT INTO run_task_tmf {_CODED_ROWS.format(columns=_TMF_COLUMNS, runs=marks, stats=stats)}", run_ids
        )
        con.execute(
            f"INSERT INTO run_task_board {_CODED_ROWS.format(columns=_BOARD_COLUMNS, runs=marks, stats=stats)}", run_ids
        )
        con.execute(f"INSERT INTO run_health_sums {_HEALTH_SUMS.format(runs=marks, stats=stats)}", run_ids)
    finally:
        con.execute("DROP TABLE IF EXISTS _rl_tmf_runs")
        con.execute("DROP TABLE IF EXISTS _rl_tmf_new")


def drop_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A deleted run's rows and code (inside the deletion's transaction); its tasks keep theirs."""
    for table in CODED:  # an allow-list of table names
        con.execute(
            f"DELETE FROM {table} WHERE run_code IN (SELECT run_code FROM tmf_run_codes WHERE run_id = ?)", [run_id]
        )
    con.execute("DELETE FROM tmf_run_codes WHERE run_id = ?", [run_id])


# what the rows must be, by run and task id: every run_task_stats row of a stored run (tests compare the table with it)
expected_sql = """
SELECT s.run_id, s.task_id, s.n_attempts AS n, s.n_passed AS c, s.score_mean AS score, s.cost_usd_mean AS cost_usd,
       s.input_tokens_mean AS input_tokens, s.output_tokens_mean AS output_tokens, s.latency_s_mean AS latency_s
FROM run_task_stats s SEMI JOIN runs r ON r.run_id = s.run_id"""

# the table's rows by run and task id (each code's id)
stored_sql = """
SELECT rc.run_id, tc.task_id, t.n, t.c, t.score, t.cost_usd, t.input_tokens, t.output_tokens, t.latency_s
FROM run_task_tmf t
JOIN tmf_run_codes rc ON rc.run_code = t.run_code
JOIN tmf_task_codes tc ON tc.task_code = t.task_code"""

# the Leaderboard's rows: what they must be, and the table's rows, by run and task id
board_expected_sql = """
SELECT s.run_id, s.task_id, s.n_scored, s.n_scored_passed, s.score_mean, s.tool_calls_mean_scored,
       s.cost_usd_mean_scored, s.n_kept, s.n_kept_passed, s.score_mean_kept, s.tool_calls_mean_kept, s.cost_usd_mean_kept
FROM run_task_stats s SEMI JOIN runs r ON r.run_id = s.run_id"""

board_stored_sql = """
SELECT rc.run_id, tc.task_id, t.n_scored, t.n_scored_passed, t.score_mean, t.tool_calls_mean_scored,
       t.cost_usd_mean_scored, t.n_kept, t.n_kept_passed, t.score_mean_kept, t.tool_calls_mean_kept, t.cost_usd_mean_kept
FROM run_task_board t
JOIN tmf_run_codes rc ON rc.run_code = t.run_code
JOIN tmf_task_codes tc ON tc.task_code = t.task_code"""

# run health's sums: what they must be (run_task_stats summed per stored run), and the table's rows, by run id
health_expected_sql = """
SELECT s.run_id, sum(s.n_attempts)::BIGINT AS n_attempts, sum(s.n_errored)::BIGINT AS n_errored,
       sum(s.n_limited)::BIGINT AS n_limited, sum(s.n_unscored)::BIGINT AS n_unscored,
       sum(s.n_scored)::BIGINT AS n_scored, sum(s.n_scored_passed)::BIGINT AS n_scored_passed,
       sum(s.n_kept)::BIGINT AS n_kept, sum(s.n_kept_passed)::BIGINT AS n_kept_passed
FROM run_task_stats s SEMI JOIN runs r ON r.run_id = s.run_id
GROUP BY s.run_id"""

health_stored_sql = """
SELECT rc.run_id, h.n_attempts, h.n_errored, h.n_limited, h.n_unscored, h.n_scored, h.n_scored_passed, h.n_kept,
       h.n_kept_passed
FROM run_health_sums h
JOIN tmf_run_codes rc ON rc.run_code = h.run_code"""

# the tasks' kept level, category and listing (migration 015) and human minutes (016): what they must be (the tasks
# table's), and as kept
kinds_expected_sql = """
SELECT c.benchmark, c.task_id, t.level, t.category, t.task_id IS NOT NULL AS is_listed, t.human_minutes
FROM tmf_task_codes c LEFT JOIN tasks t ON t.benchmark = c.benchmark AND t.task_id = c.task_id"""

kinds_stored_sql = "SELECT benchmark, task_id, level, category, is_listed, human_minutes FROM tmf_task_codes"

"""Progress index reads: the stored fit of a benchmark, its agent versions' raw scores and the refit log (never fits,
so the Progress page stays fast on a rerun)."""

from __future__ import annotations

import duckdb
import pandas as pd

from analytics import irt
from analytics.progress.compute import ProgressView, breakthroughs, frontier, velocity
from store import query_df

RAW_SQL = (
    irt.SUBJECTS_CTE
    + """
SELECT subject, (sum(s.n_passed)::DOUBLE / sum(s.n_attempts)::DOUBLE) AS raw_score,
       count(DISTINCT s.task_id) AS n_tasks_answered
FROM run_task_stats s JOIN subj USING (run_id)
GROUP BY subject
"""
)
# The raw score is the share of the subject's attempts that passed (an attempt without a verdict counts as a fail),
# and the tasks counted are those with an attempt: both from the per (run, task) aggregate the writer keeps
# (run_task_stats), not from every attempt.
N_TASKS_SQL = (
    "SELECT count(DISTINCT s.task_id) AS n FROM run_task_stats s JOIN runs r USING (run_id) WHERE r.benchmark = ?"
)
# RAW_SQL and N_TASKS_SQL in one scan of the benchmark's (run, task) rows: the subjects' rows, and the row of the
# empty grouping set (is_total) whose count is the benchmark's distinct tasks (the subjects are all of its runs but
# those a retry superseded, whose tasks their retry holds: the same tasks as N_TASKS_SQL's), with the number of runs
# left out as superseded (``n_superseded``, the same in every row). At 10M attempts each scan reads 3.3M rows of
# run_task_stats.
RAW_AND_TASKS_SQL = (
    irt.SUBJECTS_CTE
    + """
SELECT subject, (sum(s.n_passed)::DOUBLE / sum(s.n_attempts)::DOUBLE) AS raw_score,
       count(DISTINCT s.task_id) AS n_tasks_answered, grouping(subject) = 1 AS is_total,
       (SELECT count(*) FROM rs_all WHERE is_superseded) AS n_superseded,
       (SELECT list(run_id ORDER BY run_id) FROM rs_all WHERE NOT is_superseded AND NOT is_complete) AS incomplete
FROM run_task_stats s JOIN subj USING (run_id)
GROUP BY GROUPING SETS ((subject), ())
"""
)


def raw_scores(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> tuple[pd.DataFrame, int]:
    """RAW_SQL's frame (one row per subject, in no order) and N_TASKS_SQL's count, read in one statement."""
    frame, n_tasks, _, _ = raw_scores_and_left_out(con, benchmark=benchmark)
    return frame, n_tasks


def raw_scores_and_left_out(
    con: duckdb.DuckDBPyConnection, *, benchmark: str
) -> tuple[pd.DataFrame, int, int, tuple[str, ...]]:
    """``raw_scores``, the number of the benchmark's runs left out as superseded by a retry (``store.retries``) and
    the ids of the incomplete runs left out (``runs.IS_COMPLETE_SQL``, the leaderboard's rule; a superseded one is
    counted as superseded only), in one statement."""
    both = query_df(con, RAW_AND_TASKS_SQL, [benchmark])
    total = both["is_total"].to_numpy(dtype=bool)
    n_tasks = int(both["n_tasks_answered"].to_numpy()[total][0]) if total.any() else 0
    n_superseded = int(both["n_superseded"].iloc[0]) if len(both) else 0
    cut = both["incomplete"].iloc[0] if len(both) else None
    incomplete = () if cut is None or (not isinstance(cut, list) and pd.isna(cut)) else tuple(str(r) for r in cut)
    frame = both[~total].drop(columns=["is_total", "n_superseded", "incomplete"]).reset_index(drop=True)
    return frame, n_tasks, n_superseded, incomplete


def progress_view(con: duckdb.DuckDBPyConnection, *, benchmark: str, model: str = "1pl") -> ProgressView:
    """Read the stored fit for ``benchmark`` (current or stale) and derive the progress tables."""
    fit, log = irt.fit_and_log(con, benchmark=benchmark, model=model)  # irt_fits read once
    raw, n_tasks, n_superseded, incomplete = raw_scores_and_left_out(con, benchmark=benchmark)
    if fit is None:
        empty = pd.DataFrame()
        return ProgressView(
            benchmark, model, None, empty, empty, empty, empty, log, len(raw), n_tasks, n_superseded, incomplete
        )
    ab = fit.abilities.merge(raw[["subject", "raw_score"]], on="subject", how="left")
    ab["first_eval_date"] = pd.to_datetime(ab["first_eval_date"])
    ab["family"] = ab["family"].fillna(ab["agent"])
    ab = ab.sort_values(["first_eval_date", "subject"]).reset_index(drop=True)
    return ProgressView(
        benchmark,
        model,
        fit,
        ab,
        frontier(ab),
        velocity(ab),
        breakthroughs(ab),
        log,
        len(raw),
        n_tasks,
        n_superseded,
        incomplete,
    )

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
SELECT subject, avg(coalesce(a.passed, false)::INTEGER) AS raw_score, count(DISTINCT a.task_id) AS n_tasks_answered
FROM attempts a JOIN subj USING (run_id)
GROUP BY subject
"""
)


def progress_view(con: duckdb.DuckDBPyConnection, *, benchmark: str, model: str = "1pl") -> ProgressView:
    """Read the stored fit for ``benchmark`` (current or stale) and derive the progress tables."""
    fit = irt.get_fit(con, benchmark=benchmark, model=model)
    raw = query_df(con, RAW_SQL, [benchmark])
    n_tasks = int(
        query_df(
            con,
            "SELECT count(DISTINCT a.task_id) AS n FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?",
            [benchmark],
        )["n"].iloc[0]
    )
    log = irt.fit_log(con, benchmark=benchmark)
    if fit is None:
        empty = pd.DataFrame()
        return ProgressView(benchmark, model, None, empty, empty, empty, empty, log, len(raw), n_tasks)
    ab = fit.abilities.merge(raw[["subject", "raw_score"]], on="subject", how="left")
    ab["first_eval_date"] = pd.to_datetime(ab["first_eval_date"])
    ab["family"] = ab["family"].fillna(ab["agent"])
    ab = ab.sort_values(["first_eval_date", "subject"]).reset_index(drop=True)
    return ProgressView(
        benchmark, model, fit, ab, frontier(ab), velocity(ab), breakthroughs(ab), log, len(raw), n_tasks
    )

"""``run_task_first`` (migration 011): per (run, task), what the Version diff reads of a run's attempts -- the
outcome over the attempts with a verdict, the first sample's verdict, the means, the first attempt id and the task's
error codes (store/sql/run_task_first.sql). Kept by the writer in the transaction that changes the attempts or their
labels; store/aggregates.py calls these functions beside its own tables' (ingest, deletion, replaced attempts, late
scores, judge labels, rule findings), so a row always equals what its attempts and labels give.

Part of the store: all write SQL of the project lives under ``store/``.
"""

from __future__ import annotations

import duckdb

from store.query import insert_over_attempts

TABLE = "run_task_first"


def insert(
    con: duckdb.DuckDBPyConnection,
    attempts_sql: str,
    labels_sql: str,
    params: dict[str, object] | None = None,
) -> None:
    """``INSERT`` the rows of the (run, task) pairs of the attempts ``attempts_sql`` selects, with the labels
    ``labels_sql`` selects (CTEs ``_rl_agg_attempts`` and ``_rl_agg_labels`` around the table's SELECT), in run and
    task order (a lake's files then hold runs apart, and a read of one run skips the others' row groups)."""
    insert_over_attempts(con, TABLE, attempts_sql, labels_sql, params, order_by="run_id, task_id")


def refresh_keys(con: duckdb.DuckDBPyConnection, lo: int | None, hi: int | None) -> None:
    """The rows of the (run, task) pairs in the temporary table ``_rl_agg_keys`` computed again from their attempts
    (inside the caller's transaction); ``lo`` to ``hi``: the attempt ids of the keys' runs (None: no attempt left),
    a constant range the scan of labels skips by."""
    con.execute(f"DELETE FROM {TABLE} WHERE (run_id, task_id) IN (SELECT run_id, task_id FROM _rl_agg_keys)")
    if lo is None:
        return
    insert(
        con,
        "SELECT a.* FROM attempts a SEMI JOIN _rl_agg_keys k ON k.run_id = a.run_id AND k.task_id = a.task_id "
        "WHERE a.attempt_id BETWEEN $lo AND $hi",
        "SELECT attempt_id, code, source FROM error_labels WHERE attempt_id BETWEEN $lo AND $hi",
        {"lo": int(lo), "hi": int(hi if hi is not None else lo)},
    )


def drop_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A deleted run's rows (inside the deletion's transaction)."""
    con.execute(f"DELETE FROM {TABLE} WHERE run_id = ?", [run_id])

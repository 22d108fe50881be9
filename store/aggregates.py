"""Aggregates the pages read, kept by the writer in the transaction that changes the attempts (issue 33):
``run_task_stats``, one row per (run, task) with its attempts' counts and means (migration 008 says what each
column is). Every change of attempts refreshes the pairs it touched from the attempts themselves, so a row always
equals what its attempts give: an ingested file (``refresh_file``, called by store/ingest_writer.py), replaced
attempts and late scores (store/attempt_update.py), a deleted run (store/delete.py).

Part of the store: all write SQL of the project lives under ``store/``.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from store.query import load_sql

TABLE = "run_task_stats"


def _refresh_keys(con: duckdb.DuckDBPyConnection, keys_sql: str, params: Sequence[object] | dict[str, object]) -> None:
    """Recompute the rows of the (run_id, task_id) pairs ``keys_sql`` selects, inside the caller's transaction: the
    pairs' rows go, and the pairs that still have attempts get their row again from them."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _rl_agg_keys AS SELECT DISTINCT run_id, task_id FROM ({keys_sql})", params
    )
    try:
        con.execute(f"DELETE FROM {TABLE} WHERE (run_id, task_id) IN (SELECT run_id, task_id FROM _rl_agg_keys)")
        con.execute(f"INSERT INTO {TABLE} {load_sql('run_task_stats')}")
    finally:
        con.execute("DROP TABLE IF EXISTS _rl_agg_keys")


def refresh_file(con: duckdb.DuckDBPyConnection, file_id: int, *, revised_runs: Sequence[str] = ()) -> None:
    """After an ingested file's rows are written: the pairs of its attempts, and every pair of the runs it
    re-scored (their earlier attempts got a new headline score)."""
    _refresh_keys(
        con,
        "SELECT run_id, task_id FROM attempts WHERE file_id = $file_id "
        "UNION ALL SELECT run_id, task_id FROM attempts WHERE list_contains($runs, run_id)",
        {"file_id": int(file_id), "runs": [str(r) for r in revised_runs]},
    )


def attempt_keys(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> list[tuple[str, str]]:
    """The (run_id, task_id) pairs of stored attempts (read before they are deleted, to refresh after)."""
    rows = con.execute(
        "SELECT DISTINCT run_id, task_id FROM attempts WHERE attempt_id IN (SELECT unnest(?::BIGINT[]))",
        [[int(i) for i in attempt_ids]],
    ).fetchall()
    return [(str(r), str(t)) for r, t in rows]


def refresh_pairs(con: duckdb.DuckDBPyConnection, pairs: Sequence[tuple[str, str]]) -> None:
    """After attempts of these (run_id, task_id) pairs changed or went."""
    if not pairs:
        return
    _refresh_keys(
        con,
        "SELECT unnest($runs::VARCHAR[]) AS run_id, unnest($tasks::VARCHAR[]) AS task_id",
        {"runs": [p[0] for p in pairs], "tasks": [p[1] for p in pairs]},
    )


def drop_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A deleted run's rows (inside the deletion's transaction)."""
    con.execute(f"DELETE FROM {TABLE} WHERE run_id = ?", [run_id])

"""The writer's half of the Failure clusters page's stored results (migration 010): failure documents, and each
computed clustering with its members. Each function takes a writer connection (``store.writer``) and runs inside the
caller's transaction; ``jobs/failures.py`` computes the rows."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pyarrow as pa


def insert_failure_documents(con: duckdb.DuckDBPyConnection, docs: Any) -> int:
    """Store failure documents (columns ``attempt_id``, ``doc_version``, ``segments``, ``masked``,
    ``content_hash``: an Arrow table, or a dataset read as it is inserted); a document already stored for its
    attempt and version stays. Returns the rows given."""
    con.register("_rl_fdocs", docs)
    try:
        con.execute(
            "INSERT INTO failure_documents SELECT n.attempt_id, n.doc_version, n.segments, n.masked, n.content_hash "
            "FROM _rl_fdocs n ANTI JOIN failure_documents d "
            "ON d.attempt_id = n.attempt_id AND d.doc_version = n.doc_version"
        )
    finally:
        con.unregister("_rl_fdocs")
    return int(docs.num_rows if isinstance(docs, pa.Table) else docs.count_rows())


def replace_clustering(
    con: duckdb.DuckDBPyConnection,
    *,
    key: str,
    benchmark: str,
    run_id: str | None,
    model: str,
    summary_json: str,
    members: pa.Table,
) -> None:
    """Store one clustering (``members``: columns ``attempt_id``, ``cluster_id``) under ``key``, replacing every
    earlier clustering of the same benchmark and run (they were computed from failures since changed)."""
    old = con.execute(
        "SELECT clustering_key FROM failure_clusterings WHERE benchmark = ? AND run_id IS NOT DISTINCT FROM ?",
        [benchmark, run_id],
    ).fetchall()
    keys = [r[0] for r in old] + [key]
    con.execute("DELETE FROM failure_cluster_members WHERE list_contains(?, clustering_key)", [keys])
    con.execute("DELETE FROM failure_clusterings WHERE list_contains(?, clustering_key)", [keys])
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    con.execute(
        "INSERT INTO failure_clusterings VALUES (?, ?, ?, ?, ?, ?, ?)",
        [key, benchmark, run_id, model, members.num_rows, summary_json, now],
    )
    con.register("_rl_fcm", members)
    try:
        con.execute("INSERT INTO failure_cluster_members SELECT ?, attempt_id, cluster_id::INTEGER FROM _rl_fcm", [key])
    finally:
        con.unregister("_rl_fcm")

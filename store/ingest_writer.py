"""The one writer for ingested files: a validated Bundle goes into DuckDB in one transaction, by bulk Arrow inserts.

Part of the store: all write SQL of the project lives under ``store/`` (tests/test_layers.py checks it).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from store import lake
from store.query import load_sql, transaction

if TYPE_CHECKING:  # the writer takes what ingest validated; it does not depend on ingest at run time
    from ingest.records import Bundle


def _insert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    data: dict[str, list[Any]] | pa.Table,
    fixed: dict[str, Any] | None = None,
    *,
    id_base: int | None = None,
) -> None:
    """Insert columns (or an Arrow table) into ``table``, with ``fixed`` values for every row.

    A column ``attempt_ix`` (an attempt's position in the file) becomes ``attempt_id = attempt_ix + id_base``;
    where the batch also has ``attempt_id`` (a rating of an attempt already in the database), that one is kept
    when ``attempt_ix`` is null.
    """
    arrow = data if isinstance(data, pa.Table) else pa.table({n: pa.array(v) for n, v in data.items()})
    if arrow.num_rows == 0:
        return
    names = [n for n in arrow.column_names if n not in ("attempt_ix", "attempt_id")]
    exprs = [f'"{n}"' for n in names]
    params = list((fixed or {}).values())
    if "attempt_ix" in arrow.column_names:
        names.append("attempt_id")
        exprs.append("coalesce(attempt_ix + ?, attempt_id)" if "attempt_id" in arrow.column_names else "attempt_ix + ?")
        params = [id_base, *params]
    elif "attempt_id" in arrow.column_names:
        names.append("attempt_id")
        exprs.append("attempt_id")
    names += list(fixed or {})
    exprs += ["?"] * len(fixed or {})
    con.register("_rl_batch", arrow)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(exprs)} FROM _rl_batch", params)
    finally:
        con.unregister("_rl_batch")


def _next_id(con: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    return int(con.execute(f"SELECT coalesce(max({column}), 0) + 1 FROM {table}").fetchall()[0][0])


def write_bundle(
    con: duckdb.DuckDBPyConnection,
    bundle: Bundle,
    *,
    path: str,
    content_hash: str,
    fmt: str,
    is_demo: bool,
    started_at: dt.datetime,
    seconds: float,
    before_commit: Callable[[duckdb.DuckDBPyConnection, int], object] | None = None,
) -> tuple[int, int]:
    """Write a validated bundle and its ingest_log row in one transaction; return the file_id and how many times
    the commit was retried.

    ``before_commit(con, file_id)`` runs last inside the transaction (rule findings derived from the rows). On a
    team store the commit message records the file, its hash and who ingested it, and a commit that conflicts
    with another one (a maintenance job, a writer outside Runlens) is retried with backoff (``lake.RETRY_MAX``).
    """
    on_lake = lake.is_lake_connection(con)
    facts = _FileFacts(path, content_hash, fmt, is_demo, started_at, seconds)
    for attempt in range(1, lake.RETRY_MAX + 1):
        try:
            with transaction(con):
                file_id = _write(con, bundle, facts, before_commit)
                if on_lake:
                    lake.set_commit_message(
                        con,
                        f"ingest {path}",
                        {"file": path, "content_hash": content_hash, "format": fmt, "file_id": file_id},
                    )
            return file_id, attempt - 1
        except duckdb.Error as exc:
            if not (on_lake and lake.is_conflict(exc)) or attempt == lake.RETRY_MAX:
                raise
            time.sleep(lake.backoff_s(attempt))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class _FileFacts:
    """What the ingest_log row says about the file besides its counts."""

    path: str
    content_hash: str
    fmt: str
    is_demo: bool
    started_at: dt.datetime
    seconds: float


def _write(
    con: duckdb.DuckDBPyConnection,
    bundle: Bundle,
    facts: _FileFacts,
    before_commit: Callable[[duckdb.DuckDBPyConnection, int], object] | None,
) -> int:
    """The rows of one file (inside the caller's transaction); its file_id."""
    is_demo = facts.is_demo
    file_id = _next_id(con, "ingest_log", "file_id")
    base = _next_id(con, "attempts", "attempt_id")
    _insert(con, "benchmarks", bundle.benchmarks, {"is_demo": is_demo})
    _insert(con, "tasks", bundle.tasks)
    _insert(con, "runs", bundle.runs, {"file_id": file_id, "is_demo": is_demo})
    tables = bundle.freeze()
    _insert(con, "attempts", tables["attempts"], {"file_id": file_id}, id_base=base)
    _insert(con, "steps", tables["steps"], id_base=base)
    if tables["texts"].num_rows:
        con.register("_rl_texts", tables["texts"])
        con.execute(
            "INSERT INTO texts SELECT n.text_hash, n.text FROM _rl_texts n "  # hashes unique per file
            "ANTI JOIN texts t ON t.text_hash = n.text_hash"
        )
        con.unregister("_rl_texts")
    _insert(con, "error_labels", tables["labels"], {"source": "label"}, id_base=base)
    _insert(con, "attempt_metrics", tables["metrics"], {"source": "log"}, id_base=base)
    _insert(con, "ratings", tables["ratings"], id_base=base)
    # the digest goes into the row as it is inserted: an UPDATE afterwards costs a lake a delete file per upload
    # (ingest_log then fragments, and every later upload's duplicate check reads more files)
    digest = con.execute(load_sql("file_digest"), {"file_id": file_id}).fetchall()[0][0]
    con.execute(
        "INSERT INTO ingest_log (file_id, path, content_hash, format, n_runs, n_tasks, n_attempts, n_steps,"
        " started_at, seconds, outcome, is_demo, rows_digest)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ingested', ?, ?)",
        [
            file_id,
            facts.path,
            facts.content_hash,
            facts.fmt,
            len(bundle.runs["run_id"]),
            len(bundle.tasks["task_id"]),
            bundle.n_attempts,
            bundle.n_steps,
            facts.started_at,
            facts.seconds,
            is_demo,
            digest,
        ],
    )
    if before_commit is not None:
        before_commit(con, file_id)
    return file_id

"""Deleting a run: its attempts, steps, labels, metrics, ratings and judge verdicts go in one transaction,
and the deletion is recorded in ``audit_log``."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass

import duckdb

from store import aggregates
from store.errors import RunlensError
from store.paths import Location
from store.query import transaction
from store.sessions import writer

# child tables keyed by attempt_id, deleted before the attempts themselves
ATTEMPT_CHILDREN = (
    "steps", "error_labels", "attempt_metrics", "ratings", "judge_verdicts", "scores", "failure_documents",
)  # fmt: skip


class RunNotFoundError(RunlensError):
    """The run to delete is not in the database."""


@dataclass(frozen=True)
class Deletion:
    """What one deletion removed."""

    run_id: str
    benchmark: str
    n_attempts: int
    n_steps: int
    n_labels: int
    n_metrics: int
    n_ratings: int
    n_verdicts: int
    file_released: bool  # the run's file may be ingested again (no other run of it remains)


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    # table names come from ATTEMPT_CHILDREN only (an allow-list), never from the caller
    sql = f"SELECT count(*) FROM {table} WHERE attempt_id IN (SELECT attempt_id FROM _rl_del)"
    return int(con.execute(sql).fetchall()[0][0])


def delete_run_con(con: duckdb.DuckDBPyConnection, run_id: str, *, actor: str = "cli") -> Deletion:
    """Delete ``run_id`` and everything hanging off it in one transaction, with an audit_log row.

    Tasks and benchmarks stay (other runs share them). When no other run of the file that brought
    this run remains, that file's ingest_log row becomes ``deleted`` so the file can be ingested again.

    Raises:
        RunNotFoundError: no such run.
    """
    rows = con.execute("SELECT benchmark, file_id FROM runs WHERE run_id = ?", [run_id]).fetchall()
    if not rows:
        raise RunNotFoundError(f"run {run_id!r} is not in the database")
    benchmark, file_id = rows[0]
    with transaction(con):
        con.execute("CREATE TEMP TABLE _rl_del AS SELECT attempt_id FROM attempts WHERE run_id = ?", [run_id])
        counts = {t: _count(con, t) for t in ATTEMPT_CHILDREN}
        n_attempts = int(con.execute("SELECT count(*) FROM _rl_del").fetchall()[0][0])
        for table in ATTEMPT_CHILDREN:
            con.execute(f"DELETE FROM {table} WHERE attempt_id IN (SELECT attempt_id FROM _rl_del)")
        con.execute("DELETE FROM attempts WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
        aggregates.drop_run(con, run_id)
        # the files that re-scored this run may be ingested again too (each revises only this run)
        con.execute(
            "UPDATE ingest_log SET outcome = 'deleted' WHERE file_id IN "
            "(SELECT file_id FROM score_revisions WHERE run_id = ?)",
            [run_id],
        )
        con.execute("DELETE FROM score_revisions WHERE run_id = ?", [run_id])
        con.execute("DROP TABLE _rl_del")
        released = False
        if file_id is not None:
            left = con.execute("SELECT count(*) FROM runs WHERE file_id = ?", [file_id]).fetchall()[0][0]
            if int(left) == 0:
                con.execute("UPDATE ingest_log SET outcome = 'deleted' WHERE file_id = ?", [file_id])
                released = True
        result = Deletion(
            run_id,
            str(benchmark),
            n_attempts,
            counts["steps"],
            counts["error_labels"],
            counts["attempt_metrics"],
            counts["ratings"],
            counts["judge_verdicts"],
            released,
        )
        detail = {**asdict(result), "actor": actor, "file_id": file_id}
        con.execute(
            "INSERT INTO audit_log (at_utc, action, subject, detail) VALUES (?, 'run_deleted', ?, ?)",
            [dt.datetime.now(dt.UTC).replace(tzinfo=None), run_id, json.dumps(detail)],
        )
    return result


def delete_run(run_id: str, *, db: Location = None, actor: str = "cli") -> Deletion:
    """Open the database for writing and delete one run (see :func:`delete_run_con`)."""
    with writer(db) as con:
        return delete_run_con(con, run_id, actor=actor)

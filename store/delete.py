"""Deleting a run: its attempts, steps, labels, metrics, ratings and judge verdicts go in one transaction, with the
long texts no remaining attempt names, and the deletion is recorded in ``audit_log``."""

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


# The texts attempts name: their steps' long results (``steps.result_hash``) and their traces' kept spans
# (``extra.otlp_spans``, attempts of OTLP ingests only). ``{gone}`` is a temporary table of attempt ids.
NAMED_TEXTS_SQL = """
CREATE OR REPLACE TEMP TABLE _rl_freed AS
SELECT DISTINCT result_hash AS text_hash FROM steps
WHERE attempt_id IN (SELECT attempt_id FROM {gone}) AND result_hash IS NOT NULL
UNION
SELECT json_extract_string(extra, '$.otlp_spans') FROM attempts
WHERE attempt_id IN (SELECT attempt_id FROM {gone}) AND json_extract_string(extra, '$.otlp_spans') IS NOT NULL
"""
# Of those, the texts no attempt left names (a text is shared by every step whose result it is).
DROP_FREED_SQL = """
DELETE FROM texts WHERE text_hash IN (
    SELECT f.text_hash FROM _rl_freed f
    ANTI JOIN (SELECT result_hash FROM steps WHERE result_hash IN (SELECT text_hash FROM _rl_freed)) s
        ON s.result_hash = f.text_hash
    ANTI JOIN (
        SELECT json_extract_string(extra, '$.otlp_spans') AS h FROM attempts
        WHERE file_id IN (SELECT file_id FROM ingest_log WHERE format = 'otlp')
    ) a ON a.h = f.text_hash
)
"""


def note_named_texts(con: duckdb.DuckDBPyConnection, gone: str) -> None:
    """Before attempts are deleted: keep the keys of the texts they name (``_rl_freed``); ``gone`` is the name of a
    temporary table of their ids (a constant of the caller's, never user input)."""
    con.execute(NAMED_TEXTS_SQL.format(gone=gone))


def drop_freed_texts(con: duckdb.DuckDBPyConnection) -> int:
    """After the deletion (and after the rows that replace it, in the same transaction): delete the noted texts
    no remaining attempt names; return how many. A deleted run leaves none of its transcripts behind."""
    n = 0
    if con.execute("SELECT count(*) FROM _rl_freed").fetchall()[0][0]:
        found = con.execute(DROP_FREED_SQL).fetchall()
        n = int(found[0][0]) if found else 0
    con.execute("DROP TABLE _rl_freed")
    return n


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
    n_texts: int  # long texts (tool results, kept trace spans) that no other attempt names
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
        note_named_texts(con, "_rl_del")
        for table in ATTEMPT_CHILDREN:
            con.execute(f"DELETE FROM {table} WHERE attempt_id IN (SELECT attempt_id FROM _rl_del)")
        con.execute("DELETE FROM attempts WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
        n_texts = drop_freed_texts(con)
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
            n_texts,
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

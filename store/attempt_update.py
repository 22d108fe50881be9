"""Changes to attempts already stored, through the one writer: a trace's attempt replaced when more of its spans
arrive (``replace_attempts``), and scores given after the run (``set_scores``).

Part of the store: all write SQL of the project lives under ``store/``. Both run inside the caller's transaction
(the writer session that also inserts the new rows), write an ``audit_log`` row, and bring the ``ingest_log``
facts of the files concerned (attempt and step counts, rows digest) up to date, so ``python -m analytics doctor``
still finds every file consistent.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from store import aggregates
from store.delete import ATTEMPT_CHILDREN, drop_freed_texts, note_named_texts
from store.query import load_sql


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _file_ids(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> list[int]:
    rows = con.execute(
        "SELECT DISTINCT file_id FROM attempts WHERE attempt_id IN (SELECT unnest(?::BIGINT[])) "
        "AND file_id IS NOT NULL",
        [list(attempt_ids)],
    ).fetchall()
    return [int(r[0]) for r in rows]


def refresh_file_facts(con: duckdb.DuckDBPyConnection, file_ids: Iterable[int]) -> None:
    """Recount the attempts and steps of each file and recompute its rows digest (after its rows changed)."""
    counts_sql, digest_sql = load_sql("file_counts"), load_sql("file_digest")
    for file_id in sorted(set(file_ids)):
        n_attempts, n_steps = con.execute(counts_sql, {"file_id": file_id}).fetchall()[0]
        digest = con.execute(digest_sql, {"file_id": file_id}).fetchall()[0][0]
        con.execute(
            "UPDATE ingest_log SET n_attempts = ?, n_steps = ?, rows_digest = ? WHERE file_id = ?",
            [n_attempts, n_steps, digest, file_id],
        )


def replace_attempts(
    con: duckdb.DuckDBPyConnection,
    attempt_ids: Sequence[int],
    *,
    reason: str,
    detail: dict[str, Any],
    successors: dict[int, int] | None = None,
) -> int:
    """Delete attempts (and every row hanging off them) that rows inserted in the same transaction replace; return
    how many were deleted. Human reviews move to the attempt that replaces theirs (``successors``: old id -> new
    id); derived rows (judge verdicts, labels, metrics, ratings) go, as they judged the old content. Their files'
    ``ingest_log`` facts are recomputed; an ``audit_log`` row says why."""
    ids = sorted({int(i) for i in attempt_ids})
    if not ids:
        return 0
    for old, new in sorted((successors or {}).items()):
        con.execute("UPDATE reviews SET attempt_id = ? WHERE attempt_id = ?", [int(new), int(old)])
    con.execute("DELETE FROM reviews WHERE attempt_id IN (SELECT unnest(?::BIGINT[]))", [ids])
    files = _file_ids(con, ids)
    pairs = aggregates.attempt_keys(con, ids)
    con.execute("CREATE OR REPLACE TEMP TABLE _rl_replaced AS SELECT unnest(?::BIGINT[]) AS attempt_id", [ids])
    note_named_texts(con, "_rl_replaced")
    con.execute("DROP TABLE _rl_replaced")
    for table in ATTEMPT_CHILDREN:  # an allow-list of table names, never the caller's
        con.execute(f"DELETE FROM {table} WHERE attempt_id IN (SELECT unnest(?::BIGINT[]))", [ids])
    n = con.execute("DELETE FROM attempts WHERE attempt_id IN (SELECT unnest(?::BIGINT[]))", [ids]).fetchall()
    n_texts = drop_freed_texts(con)  # the replaced trace's kept spans; results the new attempt still has stay
    aggregates.refresh_pairs(con, pairs)
    refresh_file_facts(con, files)
    con.execute(
        "INSERT INTO audit_log (at_utc, action, subject, detail) VALUES (?, 'attempts_replaced', ?, ?)",
        [
            _now(),
            reason,
            json.dumps({**detail, "attempt_ids": ids, "successors": successors or {}, "n_texts": n_texts}),
        ],
    )
    return int(n[0][0]) if n else len(ids)


@dataclass(frozen=True)
class LateScore:
    """A score given after the run for one stored attempt: the headline score (on [0, 1]), its raw value, passed,
    and metrics (name -> value) added or replaced."""

    attempt_id: int
    score: float | None
    raw_score: float | None
    passed: bool
    metrics: tuple[tuple[str, float], ...] = ()


def set_scores(con: duckdb.DuckDBPyConnection, scores: Sequence[LateScore], *, source: str) -> int:
    """Set the headline score of stored attempts (inside the caller's transaction) and add or replace their
    metrics; the attempt's ``extra.late_score`` records the score, its metrics and where it came from (so that an
    attempt rebuilt later, when more of its trace arrives, keeps it). Return the attempts updated."""
    if not scores:
        return 0
    ids = [s.attempt_id for s in scores]
    stamp = _now().isoformat(timespec="seconds")
    for s in scores:
        con.execute(
            "UPDATE attempts SET score = ?, raw_score = ?, passed = ?, "
            "extra = json_merge_patch(coalesce(extra, '{}'::JSON), ?::JSON) WHERE attempt_id = ?",
            [
                s.score,
                s.raw_score,
                s.passed,
                json.dumps(
                    {
                        "late_score": {
                            "source": source,
                            "at_utc": stamp,
                            "score": s.score,
                            "raw_score": s.raw_score,
                            "passed": s.passed,
                            "metrics": dict(s.metrics),
                        }
                    }
                ),
                s.attempt_id,
            ],
        )
        for name, value in s.metrics:
            con.execute(
                "DELETE FROM attempt_metrics WHERE attempt_id = ? AND name = ? AND source = 'log'",
                [s.attempt_id, name],
            )
            con.execute(
                "INSERT INTO attempt_metrics (attempt_id, name, value, source) VALUES (?, ?, ?, 'log')",
                [s.attempt_id, name, value],
            )
    aggregates.refresh_pairs(con, aggregates.attempt_keys(con, ids))
    refresh_file_facts(con, _file_ids(con, ids))
    con.execute(
        "INSERT INTO audit_log (at_utc, action, subject, detail) VALUES (?, 'scores_set', ?, ?)",
        [_now(), source, json.dumps({"attempt_ids": ids[:1000], "n": len(ids)})],
    )
    return len(scores)

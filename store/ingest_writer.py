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
import pyarrow.compute as pc

from store import aggregates, lake, lake_session
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


def _next_ids(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """The next file_id and attempt_id, in one statement (on a lake each statement pays for its catalog reads)."""
    row = con.execute(
        "SELECT (SELECT coalesce(max(file_id), 0) + 1 FROM ingest_log), "
        "(SELECT coalesce(max(attempt_id), 0) + 1 FROM attempts)"
    ).fetchall()[0]
    return int(row[0]), int(row[1])


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
    with another one (a maintenance job, a writer outside Runlens) is retried with backoff (``lake_session.RETRY_MAX``).
    """
    on_lake = lake.is_lake_connection(con)
    facts = _FileFacts(path, content_hash, fmt, is_demo, started_at, seconds)
    for attempt in range(1, lake_session.RETRY_MAX + 1):
        try:
            with transaction(con):
                file_id = _write(con, bundle, facts, before_commit)
                if on_lake:
                    lake_session.set_commit_message(
                        con,
                        f"ingest {path}",
                        {"file": path, "content_hash": content_hash, "format": fmt, "file_id": file_id},
                    )
            return file_id, attempt - 1
        except duckdb.Error as exc:
            if not (on_lake and lake_session.is_conflict(exc)) or attempt == lake_session.RETRY_MAX:
                raise
            time.sleep(lake_session.backoff_s(attempt))
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
    file_id, base = _next_ids(con)
    _insert(con, "benchmarks", bundle.benchmarks, {"is_demo": is_demo})
    for name, row in bundle.revised_benchmarks.items():  # binary -> continuous (a log with partial scores)
        con.execute(
            "UPDATE benchmarks SET scoring = ?, pass_threshold = ? WHERE benchmark = ?",
            [row["scoring"], row["pass_threshold"], name],
        )
    _insert(con, "tasks", bundle.tasks)
    _insert(con, "runs", bundle.runs, {"file_id": file_id, "is_demo": is_demo})
    attempt_runs: set[str] = set()
    has_labels = False
    file_attempts: list[pa.Table] = []  # each part's attempts and labels (memory-mapped when spilled): small
    file_labels: list[pa.Table] = []
    for tables in bundle.parts():  # one part, or a large file's parts in turn (ingest.records.Bundle.spill)
        file_attempts.append(tables["attempts"])
        file_labels.append(tables["labels"])
        attempt_runs.update(tables["attempts"].column("run_id").unique().to_pylist())
        _insert(con, "attempts", tables["attempts"], {"file_id": file_id}, id_base=base)
        _insert(con, "steps", tables["steps"], id_base=base)
        if tables["texts"].num_rows:
            con.register("_rl_texts", tables["texts"])
            con.execute(
                "INSERT INTO texts SELECT n.text_hash, n.text FROM _rl_texts n "  # hashes unique per part
                # in hash order: a lake's row groups of texts then each hold a narrow range of hashes, which a
                # lookup by hash prunes by (store/lake.py, keep_texts_ordered)
                "ANTI JOIN texts t ON t.text_hash = n.text_hash ORDER BY n.text_hash"
            )
            con.unregister("_rl_texts")
        _insert(con, "error_labels", tables["labels"], {"source": "label"}, id_base=base)
        has_labels = has_labels or tables["labels"].num_rows > 0
        _insert(con, "attempt_metrics", tables["metrics"], {"source": "log"}, id_base=base)
        _insert(con, "ratings", tables["ratings"], id_base=base)
        scores = tables["scores"]
        if scores.num_rows:
            is_new = pc.is_valid(scores.column("attempt_ix"))
            new = scores.filter(is_new).drop_columns(["attempt_id"])
            _insert(con, "scores", new, {"file_id": file_id}, id_base=base)
            _write_revisions(con, bundle, scores.filter(pc.invert(is_new)), file_id)
        elif bundle.revised_runs:
            _write_revisions(con, bundle, scores, file_id)
    # a file that only adds runs of its own (an upload, a harness's run log): its aggregate rows go in straight
    # from its attempts (ids base .. base + n - 1); one that extends or re-scores stored runs replaces their rows
    # (from its own tables, its parts' put together, not read back from the store: on a lake each such scan pays
    # for its catalog and file reads, 0.6 CPU s a 56 MB file that validation workers had handed over on disk)
    attempts = pa.concat_tables(file_attempts) if len(file_attempts) > 1 else file_attempts[0]
    if not bundle.revised_runs and attempt_runs <= set(bundle.runs["run_id"]):
        labels = pa.concat_tables(file_labels) if len(file_labels) > 1 else file_labels[0]
        aggregates.insert_file_rows(con, attempts, labels, base, with_labels=has_labels)
    else:
        aggregates.refresh_file(con, file_id, revised_runs=tuple(bundle.revised_runs))
    _log_file(con, file_id, bundle, facts, attempts)
    if before_commit is not None:
        before_commit(con, file_id)
    return file_id


def _log_file(
    con: duckdb.DuckDBPyConnection, file_id: int, bundle: Bundle, facts: _FileFacts, attempts: pa.Table | None
) -> None:
    """The file's ``ingest_log`` row. The digest goes into the row as it is inserted: an UPDATE afterwards costs a
    lake a delete file per upload (ingest_log then fragments, and every later upload's duplicate check reads more
    files); one statement, and given the file's own Arrow table of ``attempts`` (its parts' put together) its
    SELECT reads that, which stands for the attempts it wrote (a CTE shadows the table of its name), instead of
    reading them back from the store."""
    digest_sql = load_sql("file_digest")
    if attempts is not None:
        con.register("_rl_digest_attempts", attempts)
        digest_sql = (
            f"WITH attempts AS (SELECT *, $file_id AS file_id FROM _rl_digest_attempts) SELECT * FROM ({digest_sql})"
        )
    try:
        con.execute(
            "INSERT INTO ingest_log (file_id, path, content_hash, format, n_runs, n_tasks, n_attempts, n_steps,"
            " started_at, seconds, outcome, is_demo, rows_digest)"
            " SELECT $file_id, $path, $hash, $fmt, $n_runs, $n_tasks, $n_attempts, $n_steps, $started_at, $seconds,"
            f" 'ingested', $is_demo, ({digest_sql})",
            {
                "file_id": file_id,
                "path": facts.path,
                "hash": facts.content_hash,
                "fmt": facts.fmt,
                "n_runs": len(bundle.runs["run_id"]),
                "n_tasks": len(bundle.tasks["task_id"]),
                "n_attempts": bundle.n_attempts,
                "n_steps": bundle.n_steps,
                "started_at": facts.started_at,
                "seconds": facts.seconds,
                "is_demo": facts.is_demo,
            },
        )
    finally:
        if attempts is not None:
            con.unregister("_rl_digest_attempts")


def _write_revisions(con: duckdb.DuckDBPyConnection, bundle: Bundle, scores: pa.Table, file_id: int) -> None:
    """A re-scored log: per revised run a ``score_revisions`` row (with the run's status and extra before), the
    run's new status and extra, the attempts' new headline, and their new scores; the earlier scores stay with
    ``is_current = false``. The digest of each file whose attempts changed is taken again (``doctor`` checks it)."""
    if not bundle.revised_runs:
        return
    updates = bundle.freeze()["score_updates"]
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    con.register("_rl_updates", updates)
    try:
        for run_id, row in bundle.revised_runs.items():
            revision = int(
                con.execute(
                    "SELECT coalesce(max(revision), 1) + 1 FROM score_revisions WHERE run_id = ?", [run_id]
                ).fetchall()[0][0]
            )
            n_attempts = con.execute(
                "SELECT count(*) FROM _rl_updates u JOIN attempts a USING (attempt_id) WHERE a.run_id = ?", [run_id]
            ).fetchall()[0][0]
            con.execute(
                "INSERT INTO score_revisions (run_id, revision, file_id, at_utc, n_attempts, previous_status, "
                "previous_extra) SELECT run_id, ?, ?, ?, ?, status, extra FROM runs WHERE run_id = ?",
                [revision, file_id, now, n_attempts, run_id],
            )
            con.execute("UPDATE runs SET status = ?, extra = ? WHERE run_id = ?", [row["status"], row["extra"], run_id])
            con.execute(
                "UPDATE scores SET is_current = false WHERE is_current AND attempt_id IN "
                "(SELECT u.attempt_id FROM _rl_updates u JOIN attempts a USING (attempt_id) WHERE a.run_id = ?)",
                [run_id],
            )
            if scores.num_rows:
                con.register("_rl_scores", scores)
                try:
                    con.execute(
                        "INSERT INTO scores (attempt_id, scorer, value, raw_value, answer, explanation, is_headline, "
                        "revision, file_id) SELECT s.attempt_id, s.scorer, s.value, s.raw_value, s.answer, "
                        "s.explanation, s.is_headline, ?, ? FROM _rl_scores s JOIN attempts a USING (attempt_id) "
                        "WHERE a.run_id = ?",
                        [revision, file_id, run_id],
                    )
                finally:
                    con.unregister("_rl_scores")
        files = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT a.file_id FROM attempts a JOIN _rl_updates u USING (attempt_id) "
                "WHERE a.file_id IS NOT NULL"
            ).fetchall()
        ]
        con.execute(
            "UPDATE attempts SET score = u.score, raw_score = u.raw_score, passed = u.passed, answer = u.answer, "
            "extra = u.extra FROM _rl_updates u WHERE attempts.attempt_id = u.attempt_id"
        )
    finally:
        con.unregister("_rl_updates")
    for earlier in files:
        digest = con.execute(load_sql("file_digest"), {"file_id": earlier}).fetchall()[0][0]
        con.execute("UPDATE ingest_log SET rows_digest = ? WHERE file_id = ?", [digest, earlier])

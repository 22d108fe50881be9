"""The one writer for ingested files: a validated Bundle goes into DuckDB in one transaction, by bulk Arrow inserts.

Part of the store: all write SQL of the project lives under ``store/`` (tests/test_layers.py checks it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from store import aggregates, lake, lake_session
from store.query import load_sql, transaction

if TYPE_CHECKING:  # the writer takes what ingest validated; it does not depend on ingest at run time
    from ingest.records import Bundle

_T = TypeVar("_T")


def _insert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    data: dict[str, list[Any]] | pa.Table | pa.RecordBatchReader,
    fixed: dict[str, Any] | None = None,
    *,
    id_base: int | None = None,
) -> None:
    """Insert columns (or an Arrow table, or a stream of record batches) into ``table``, with ``fixed`` values for
    every row.

    A column ``attempt_ix`` (an attempt's position in the file) becomes ``attempt_id = attempt_ix + id_base``;
    where the batch also has ``attempt_id`` (a rating of an attempt already in the database), that one is kept
    when ``attempt_ix`` is null.
    """
    if isinstance(data, pa.RecordBatchReader):
        arrow: pa.Table | pa.RecordBatchReader = data
    else:
        arrow = data if isinstance(data, pa.Table) else pa.table({n: pa.array(v) for n, v in data.items()})
        if arrow.num_rows == 0:
            return
    columns = arrow.schema.names
    names = [n for n in columns if n not in ("attempt_ix", "attempt_id")]
    exprs = [f'"{n}"' for n in names]
    params = list((fixed or {}).values())
    if "attempt_ix" in columns:
        names.append("attempt_id")
        exprs.append("coalesce(attempt_ix + ?, attempt_id)" if "attempt_id" in columns else "attempt_ix + ?")
        params = [id_base, *params]
    elif "attempt_id" in columns:
        names.append("attempt_id")
        exprs.append("attempt_id")
    names += list(fixed or {})
    exprs += ["?"] * len(fixed or {})
    con.register("_rl_batch", arrow)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(exprs)} FROM _rl_batch", params)
    finally:
        con.unregister("_rl_batch")


@contextlib.contextmanager
def one_thread(con: duckdb.DuckDBPyConnection, on: bool = True) -> Iterator[None]:
    """While ``on``, the session's statements run on one DuckDB thread; the setting is put back after (it is the
    instance's). For an ingest whose validation workers keep the other cores busy: a second thread then finds no
    idle core and costs CPU (task scheduling, partitioned aggregates, waiting for a core) without shortening the
    ingest, whose pace the workers set (BENCHMARKS.md "Ingest, eighth pass": the 1M folder's writer 30.2 -> 23.6
    CPU s)."""
    if not on:
        yield
        return
    threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    con.execute("SET threads = 1")
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):  # (a failed transaction left open: its error is the one to see)
            con.execute(f"SET threads = {threads}")


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
    facts = _FileFacts(path, content_hash, fmt, is_demo, started_at, seconds)
    return _committed(
        con,
        lambda: _write(con, bundle, facts, before_commit),
        lambda file_id: (
            f"ingest {path}",
            {"file": path, "content_hash": content_hash, "format": fmt, "file_id": file_id},
        ),
    )


def _committed(
    con: duckdb.DuckDBPyConnection, write: Callable[[], _T], message: Callable[[_T], tuple[str, dict[str, Any]]]
) -> tuple[_T, int]:
    """``write()`` in one transaction; its result and how many times the commit was retried.

    On a lake the commit carries ``message(result)`` (its text and extra information), and a commit that
    conflicts with another one is retried with backoff, up to ``lake_session.RETRY_MAX`` times in all.
    """
    on_lake = lake.is_lake_connection(con)
    for attempt in range(1, lake_session.RETRY_MAX + 1):
        try:
            with transaction(con):
                result = write()
                if on_lake:
                    lake_session.set_commit_message(con, *message(result))
            return result, attempt - 1
        except duckdb.Error as exc:
            if not (on_lake and lake_session.is_conflict(exc)) or attempt == lake_session.RETRY_MAX:
                raise
            time.sleep(lake_session.backoff_s(attempt))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class BatchFile:
    """One validated file of a batch (``write_batch``): its bundle (whose runs are all its own, none re-scored)
    and what its ``ingest_log`` row says besides the counts."""

    bundle: Bundle
    path: str
    content_hash: str
    fmt: str
    started_at: dt.datetime
    seconds: float
    before_commit: Callable[[duckdb.DuckDBPyConnection, int], object] | None = None


def write_batch(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[BatchFile],
    *,
    is_demo: bool,
    before_commit: Callable[[duckdb.DuckDBPyConnection, list[int]], object] | None = None,
) -> tuple[list[int], int]:
    """Write several validated files in one transaction; return their file_ids and how many times the commit was
    retried. ``before_commit(con, file_ids)`` runs last inside the transaction, once every file's rows and
    ``ingest_log`` row are written (rule findings of the whole batch), after each file's own ``before_commit``.

    The rows are those ``write_bundle`` would write file after file -- the same file_ids and attempt ids (each
    file's attempts numbered on from the previous file's), the same ``ingest_log`` row per file with its own digest
    -- but each table gets one statement for the whole batch, and the lake one commit (its catalog rows and
    snapshot) instead of one per file. A file stays atomic: the transaction holds all of the batch or none of it
    (a failed statement or COMMIT rolls every file back; the caller then writes them one by one). Every file must
    bring only runs it defines itself (``batchable``): their aggregate rows then come from the batch's own tables.
    """

    def write() -> list[int]:
        file_ids = _write_batch(con, files, is_demo)
        if before_commit is not None:
            before_commit(con, file_ids)
        return file_ids

    return _committed(
        con,
        write,
        lambda file_ids: (
            f"ingest {len(files)} files",
            {
                "files": [
                    {"file": f.path, "content_hash": f.content_hash, "format": f.fmt, "file_id": i}
                    for f, i in zip(files, file_ids, strict=True)
                ]
            },
        ),
    )


def batchable(bundle: Bundle) -> bool:
    """True when ``write_batch`` may write the bundle: every attempt is of a run the file itself defines, it
    re-scores nothing and changes no stored benchmark."""
    if bundle.revised_runs or bundle.revised_benchmarks:
        return False
    own = set(bundle.runs["run_id"])
    for tables in bundle.parts():
        if tables["score_updates"].num_rows or not set(tables["attempts"].column("run_id").unique().to_pylist()) <= own:
            return False
        if tables["scores"].num_rows and tables["scores"].column("attempt_ix").null_count:
            return False
    return True


def _whole(bundle: Bundle) -> dict[str, pa.Table]:
    """A bundle's per-attempt tables, its parts (if it was read in parts) concatenated."""
    parts = list(bundle.parts())
    if len(parts) == 1:
        return parts[0]
    return {name: pa.concat_tables([p[name] for p in parts], promote_options="permissive") for name in parts[0]}


def _shifted(table: pa.Table, offset: int, file_id: int | None = None) -> pa.Table:
    """``table`` with its ``attempt_ix`` moved on by ``offset`` (and a ``file_id`` column when given)."""
    if offset and "attempt_ix" in table.column_names:
        i = table.column_names.index("attempt_ix")
        table = table.set_column(i, "attempt_ix", pc.add(table.column(i), pa.scalar(offset, pa.int64())))
    if file_id is not None:
        table = table.append_column("file_id", pa.repeat(pa.scalar(file_id, pa.int64()), table.num_rows))
    return table


def _merged(columns: Sequence[dict[str, list[Any]]], extra: dict[str, list[Any]] | None = None) -> dict[str, list[Any]]:
    """Definition columns of several files, one after the other (``extra``: more columns, a value per row)."""
    out: dict[str, list[Any]] = {name: [] for name in columns[0]}
    for cols in columns:
        for name, values in cols.items():
            out[name].extend(values)
    return {**out, **(extra or {})}


def _write_batch(con: duckdb.DuckDBPyConnection, files: Sequence[BatchFile], is_demo: bool) -> list[int]:
    """The rows of a batch of files (inside the caller's transaction); their file_ids."""
    first_id, base = _next_ids(con)
    file_ids = [first_id + i for i in range(len(files))]
    wholes = [_whole(f.bundle) for f in files]
    offsets: list[int] = []
    total = 0
    for tables in wholes:
        offsets.append(total)
        total += tables["attempts"].num_rows
    bundles = [f.bundle for f in files]
    _insert(con, "benchmarks", _merged([b.benchmarks for b in bundles]), {"is_demo": is_demo})
    _insert(con, "tasks", _merged([b.tasks for b in bundles]))
    run_files = [i for b, i in zip(bundles, file_ids, strict=True) for _ in b.runs["run_id"]]
    _insert(con, "runs", _merged([b.runs for b in bundles], {"file_id": run_files}), {"is_demo": is_demo})

    def joined(name: str, with_file_id: bool = False) -> pa.Table:
        return pa.concat_tables(
            [
                _shifted(t[name], off, i if with_file_id else None)
                for t, off, i in zip(wholes, offsets, file_ids, strict=True)
            ],
            promote_options="permissive",
        )

    attempts = joined("attempts")
    with_file_ids = joined("attempts", with_file_id=True)
    _insert(con, "attempts", with_file_ids, id_base=base)
    _insert(con, "steps", joined("steps"), id_base=base)
    texts = joined("texts")
    if texts.num_rows:
        con.register("_rl_texts", texts)
        try:
            con.execute(  # a text in several files of the batch goes in once (the same hash, the same text)
                "INSERT INTO texts SELECT n.text_hash, any_value(n.text) FROM _rl_texts n "
                "ANTI JOIN texts t ON t.text_hash = n.text_hash GROUP BY n.text_hash ORDER BY n.text_hash"
            )
        finally:
            con.unregister("_rl_texts")
    labels = joined("labels")
    _insert(con, "error_labels", labels, {"source": "label"}, id_base=base)
    _insert(con, "attempt_metrics", joined("metrics"), {"source": "log"}, id_base=base)
    _insert(con, "ratings", joined("ratings"), id_base=base)
    _insert(con, "scores", joined("scores", with_file_id=True).drop_columns(["attempt_id"]), id_base=base)
    aggregates.insert_file_rows(con, attempts, labels, base, with_labels=labels.num_rows > 0)
    _log_files(con, files, file_ids, with_file_ids, is_demo)
    for f, file_id in zip(files, file_ids, strict=True):
        if f.before_commit is not None:
            f.before_commit(con, file_id)
    return file_ids


def _log_files(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[BatchFile],
    file_ids: list[int],
    attempts: pa.Table,
    is_demo: bool,
) -> None:
    """The ``ingest_log`` rows of a batch's files in one statement: each row ``_log_file`` would insert, its
    digest the same SQL (``file_digest``) grouped by file over the batch's ``attempts`` (with their ``file_id``)
    instead of one statement a file (on a lake each pays for its catalog reads)."""
    digest = load_sql("file_digest").strip()
    head, where = "SELECT ", "WHERE file_id = $file_id"
    start = digest.find(head)
    if start < 0 or not digest.endswith(where):
        raise AssertionError("store/sql/file_digest.sql no longer reads one file's attempts")
    grouped = f"SELECT file_id, {digest[start + len(head) : -len(where)]} GROUP BY file_id"
    facts = pa.table(
        {
            "file_id": pa.array(file_ids, pa.int64()),
            "path": pa.array([f.path for f in files], pa.string()),
            "content_hash": pa.array([f.content_hash for f in files], pa.string()),
            "format": pa.array([f.fmt for f in files], pa.string()),
            "n_runs": pa.array([len(f.bundle.runs["run_id"]) for f in files], pa.int64()),
            "n_tasks": pa.array([len(f.bundle.tasks["task_id"]) for f in files], pa.int64()),
            "n_attempts": pa.array([f.bundle.n_attempts for f in files], pa.int64()),
            "n_steps": pa.array([f.bundle.n_steps for f in files], pa.int64()),
            "started_at": pa.array([f.started_at for f in files], pa.timestamp("us")),
            "seconds": pa.array([f.seconds for f in files], pa.float64()),
        }
    )
    con.register("_rl_log_files", facts)
    con.register("_rl_digest_attempts", attempts)
    try:
        con.execute(
            "INSERT INTO ingest_log (file_id, path, content_hash, format, n_runs, n_tasks, n_attempts, n_steps,"
            " started_at, seconds, outcome, is_demo, rows_digest)"
            f" WITH attempts AS (SELECT * FROM _rl_digest_attempts), digests AS ({grouped})"
            " SELECT f.file_id, f.path, f.content_hash, f.format, f.n_runs, f.n_tasks, f.n_attempts, f.n_steps,"
            " f.started_at, f.seconds, 'ingested', $is_demo, coalesce(d.rows_digest, md5(''))"
            " FROM _rl_log_files f LEFT JOIN digests d USING (file_id) ORDER BY f.file_id",
            {"is_demo": is_demo},
        )
    finally:
        con.unregister("_rl_log_files")
        con.unregister("_rl_digest_attempts")


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
    # each part's attempts, labels, metrics, ratings and scores (memory-mapped when spilled): small, inserted once
    # for the file after its parts, as are its steps (streamed part by part): a large file read in parts then makes
    # one Parquet file a table, not one a part (every statement on a lake lists its table's files: store/lake.py)
    file_attempts: list[pa.Table] = []
    file_labels: list[pa.Table] = []
    file_metrics: list[pa.Table] = []
    file_ratings: list[pa.Table] = []
    file_scores: list[pa.Table] = []
    for tables in bundle.parts():  # one part, or a large file's parts in turn (ingest.records.Bundle.spill)
        file_attempts.append(tables["attempts"])
        file_labels.append(tables["labels"])
        file_metrics.append(tables["metrics"])
        file_ratings.append(tables["ratings"])
        attempt_runs.update(tables["attempts"].column("run_id").unique().to_pylist())
        file_scores.append(tables["scores"])
    _insert_texts(con, _of_parts(bundle, "texts"))
    # a file that only adds runs of its own (an upload, a harness's run log): its aggregate rows go in straight
    # from its attempts (ids base .. base + n - 1); one that extends or re-scores stored runs replaces their rows
    # (from its own tables, its parts' put together, not read back from the store: on a lake each such scan pays
    # for its catalog and file reads, 0.6 CPU s a 56 MB file that validation workers had handed over on disk)
    attempts, labels = _joined(file_attempts), _joined(file_labels)
    _insert(con, "attempts", attempts, {"file_id": file_id}, id_base=base)
    _insert(con, "steps", _of_parts(bundle, "steps"), id_base=base)
    _insert(con, "error_labels", labels, {"source": "label"}, id_base=base)
    has_labels = labels.num_rows > 0
    _insert(con, "attempt_metrics", _joined(file_metrics), {"source": "log"}, id_base=base)
    _insert(con, "ratings", _joined(file_ratings), id_base=base)
    for scores in file_scores:
        if scores.num_rows:
            is_new = pc.is_valid(scores.column("attempt_ix"))
            new = scores.filter(is_new).drop_columns(["attempt_id"])
            _insert(con, "scores", new, {"file_id": file_id}, id_base=base)
            _write_revisions(con, bundle, scores.filter(pc.invert(is_new)), file_id)
        elif bundle.revised_runs:
            _write_revisions(con, bundle, scores, file_id)
    if not bundle.revised_runs and attempt_runs <= set(bundle.runs["run_id"]):
        aggregates.insert_file_rows(con, attempts, labels, base, with_labels=has_labels)
    else:
        aggregates.refresh_file(con, file_id, revised_runs=tuple(bundle.revised_runs))
    _log_file(con, file_id, bundle, facts, attempts)
    if before_commit is not None:
        before_commit(con, file_id)
    return file_id


def _joined(tables: list[pa.Table]) -> pa.Table:
    """The parts' tables as one (a column all null in one part and typed in another takes the type)."""
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")


def _of_parts(bundle: Bundle, name: str) -> pa.Table | pa.RecordBatchReader:
    """The table ``name`` of a file: its one part's (in memory, or spilled whole by a validation worker), or a stream
    of its parts' (a large file read in parts): a stream only where several parts must go in one statement (the
    texts' stream also drops a hash repeated across parts)."""
    rest = bundle.freeze()[name]
    if not bundle.spilled:
        return rest
    if len(bundle.spilled) == 1 and rest.num_rows == 0:
        return next(iter(bundle.parts()))[name]  # (the spilled part, opened once)
    return _parts_stream(bundle, name)


def _parts_stream(bundle: Bundle, name: str) -> pa.RecordBatchReader:
    """The table ``name`` of a file's parts as one stream, each part opened (memory-mapped) in turn: one INSERT of
    them all holds one part at a time."""
    parts = bundle.parts()
    first = next(parts)[name]

    def batches() -> Iterator[pa.RecordBatch]:
        yield from first.to_batches()
        for tables in parts:
            yield from tables[name].cast(first.schema).to_batches()

    return pa.RecordBatchReader.from_batches(first.schema, batches())


def _insert_texts(con: duckdb.DuckDBPyConnection, texts: pa.Table | pa.RecordBatchReader) -> None:
    """A file's long texts not stored yet, in hash order: a lake's row groups of texts then each hold a narrow range
    of hashes, which a lookup by hash prunes by (store/lake.py, keep_row_groups). Hashes are unique within a part;
    the parts of a large file (a stream) may repeat one."""
    if isinstance(texts, pa.Table) and texts.num_rows == 0:
        return
    streamed = isinstance(texts, pa.RecordBatchReader)
    new = "(SELECT DISTINCT ON (text_hash) text_hash, text FROM _rl_texts)" if streamed else "_rl_texts"
    con.register("_rl_texts", texts)
    try:
        con.execute(
            f"INSERT INTO texts SELECT n.text_hash, n.text FROM {new} n "
            "ANTI JOIN texts t ON t.text_hash = n.text_hash ORDER BY n.text_hash"
        )
    finally:
        con.unregister("_rl_texts")


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

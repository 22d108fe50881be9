"""Transcript search's index: a DuckDB file beside a file store (``<db>.search``) or a local lake's catalog
(``<catalog>.search``), never inside the store itself.

Why a separate file: every write session of a file store publishes by copying the whole primary (store/backends/file.py,
2.7-2.9 s per GB); the index is about as large as the transcripts, so inside the store it would make every small
upload pay for copying it too (measured in BENCHMARKS.md). Beside the store, an upload never touches it.

Tables of the index file:
    * ``search_text(attempt_id, file_id, step, field, text)``: every text transcript search reads
      (analytics/sql/search.sql), lower-cased, one row per attempt, step and field; ``step`` is null for the
      answer; a long result stored once in ``texts`` is the field ``long_result`` (the scan matches it apart from
      the inline fields); ``file_id`` is the attempt's file;
    * ``search_files(file_id, content_hash)``: the ingested files (ingest_log) all of whose attempts are in
      ``search_text``; ``search_attempts(attempt_id, file_id)``: which file each indexed attempt came from.

Freshness: an attempt of the store is covered only while its file (``attempts.file_id``) is in ``search_files`` with
the same content hash. A file is ingested in one transaction and file ids are never reused (ingest_log keeps the
rows of deleted files), so the attempts of a covered file are exactly those indexed, minus deleted ones, which the
search never joins. Every other attempt (a file ingested after the index was built, an attempt id reused after a
run was deleted: it comes with a new file) is scanned; a refresh drops the rows of attempts whose id now belongs
to another file. Each row also carries its attempt's file, and a search reads a row only for an attempt with that
very id and file, so a search on a snapshot older than the index (opened before a deletion, an id reuse and a
refresh) never reads another attempt's text; it can only miss the hits of an attempt deleted meanwhile. So the
index can lag, never be wrong.

Building (``refresh_search_index``) reads the published snapshot, so it never holds the writer lock and never
blocks an ingest; it writes a copy of the index and renames it over the old one, so a reader sees the old index
or the new one, never half of one.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from store.backends import open as open_store
from store.errors import RunlensError
from store.paths import SNAPSHOT_SUFFIX, Location
from store.query import query_rows, transaction

INDEX_SUFFIX = ".search"
BATCH_ATTEMPTS = 50_000  # attempts indexed per statement of a refresh
MEMORY_LIMIT = "2GB"  # DuckDB's memory in a refresh (it spills to a temporary folder beside the index beyond it)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_text (
    attempt_id BIGINT  NOT NULL,
    file_id    BIGINT  NOT NULL,
    step       INTEGER,
    field      VARCHAR NOT NULL,
    text       VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS search_attempts (
    attempt_id BIGINT NOT NULL,
    file_id    BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS search_files (
    file_id      BIGINT  NOT NULL,
    content_hash VARCHAR NOT NULL
);
"""

# The store's files (ingest_log) that can be indexed: one content hash per file_id. ``src`` is the store.
_FILES = """
CREATE OR REPLACE TEMP TABLE _rl_files AS
SELECT file_id, min(content_hash) AS content_hash FROM src.ingest_log GROUP BY file_id
HAVING count(DISTINCT content_hash) = 1
"""

# The texts of the attempts in _rl_batch (one batch of _rl_new), as analytics/sql/search.sql reads them, lower-cased.
_TEXTS = """
INSERT INTO search_text
SELECT a.attempt_id, n.file_id, NULL::INTEGER, 'answer', lower(a.answer)
FROM src.attempts a JOIN _rl_batch n ON n.attempt_id = a.attempt_id AND a.attempt_id BETWEEN $lo AND $hi
WHERE a.answer IS NOT NULL
UNION ALL
SELECT s.attempt_id, n.file_id, s.step, f.field, lower(f.text)
FROM src.steps s JOIN _rl_batch n ON n.attempt_id = s.attempt_id AND s.attempt_id BETWEEN $lo AND $hi,
     LATERAL (VALUES ('content', s.content), ('args', s.args::VARCHAR), ('result', s.result), ('error', s.error))
         AS f(field, text)
WHERE f.text IS NOT NULL
UNION ALL
SELECT s.attempt_id, n.file_id, s.step, 'long_result', lower(t.text)
FROM src.steps s JOIN _rl_batch n ON n.attempt_id = s.attempt_id AND s.attempt_id BETWEEN $lo AND $hi
JOIN src.texts t ON t.text_hash = s.result_hash
"""


@dataclass(frozen=True)
class SearchIndexRefresh:
    """What one refresh did, and the index after it."""

    path: str
    attempts_added: int
    attempts_removed: int
    attempts_covered: int
    attempts_not_indexable: int  # attempts without a known file: always scanned
    rows: int
    text_chars: int
    index_bytes: int
    seconds: float


def index_path(db: Location = None) -> Path | None:
    """The index file of a DuckDB file store or a local lake; None for a team store or a Parquet folder (they have
    none)."""
    return open_store(db).search_index_path(INDEX_SUFFIX)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def attach_search_index(con: duckdb.DuckDBPyConnection) -> str | None:
    """Attach, read-only, the index file of the store ``con`` reads (its snapshot or its primary).

    Returns:
        The index's catalog name (``rl_search_<inode>_<mtime>``: a rebuilt index gets a new one), or None when the
        store has no index file (never built, a team store, a Parquet folder, an in-memory database).
    """
    rows = con.execute("SELECT path, type FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    if not rows or not rows[0][0]:
        return None
    where, kind = str(rows[0][0]), rows[0][1]
    if kind == "ducklake":  # a local lake's path is ``sqlite:<catalog>``; a team store has no index
        if not where.startswith("sqlite:"):
            return None
        where = where.removeprefix("sqlite:")
    store = Path(where)
    if store.name.endswith(SNAPSHOT_SUFFIX):
        store = store.with_name(store.name[: -len(SNAPSHOT_SUFFIX)])
    path = store.with_name(store.name + INDEX_SUFFIX)
    try:
        stat = path.stat()
    except OSError:
        return None
    name = f"rl_search_{stat.st_ino:x}_{stat.st_mtime_ns:x}"
    try:
        con.execute(f"ATTACH IF NOT EXISTS {_literal(str(path))} AS {name} (READ_ONLY)")
    except duckdb.Error:
        return None  # unreadable (e.g. replaced mid-way): search scans
    return name


def refresh_search_index(db: Location = None, *, rebuild: bool = False) -> SearchIndexRefresh:
    """Bring the index up to date with the store's published snapshot: forget attempts whose fingerprint no longer
    matches (deleted, or an id reused), add every attempt not covered. ``rebuild`` starts from an empty index.

    Raises:
        RunlensError: the store is neither a DuckDB file nor a local lake (a team store or a Parquet folder has no
            index).
    """
    t0 = time.perf_counter()
    path = index_path(db)
    if path is None:
        raise RunlensError(
            "a search index is kept only beside a DuckDB file store or a local lake; this store is always scanned"
        )
    store = open_store(db)
    store.ensure_snapshot()
    tmp = path.with_name(path.name + f".tmp{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        if path.exists() and not rebuild:
            shutil.copyfile(path, tmp)
        con, source = store.open_search_source(tmp)
        try:
            counts = _refresh(con, source)
        finally:
            con.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".wal").unlink(missing_ok=True)
    return SearchIndexRefresh(str(path), *counts, path.stat().st_size, round(time.perf_counter() - t0, 3))


def _refresh(con: duckdb.DuckDBPyConnection, attach_source: str) -> tuple[int, int, int, int, int, int]:
    """The refresh inside the new index file ``con``, reading the store ``attach_source`` attaches as ``src``;
    returns added, removed, covered, not indexable, rows, chars."""
    # stored uncompressed: the texts barely compress (1.8 GB for 2.1 G characters at 1M attempts) and a search
    # then reads twice as fast (BENCHMARKS.md)
    con.execute("PRAGMA force_compression = 'uncompressed'")
    # bounded memory whatever the store's size: batches of BATCH_ATTEMPTS attempts and DuckDB's buffer pool capped
    # (one statement over every text took 8+ GB at 1M attempts, 20 GB at 10M)
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute(_SCHEMA)
    con.execute(attach_source)
    with transaction(con):
        con.execute(_FILES)
        # gone: files no longer in the store or with other content, and attempts deleted or whose id now belongs to
        # an attempt of another file
        con.execute(
            "CREATE TEMP TABLE _rl_stale AS "
            "SELECT file_id FROM search_files ANTI JOIN _rl_files USING (file_id, content_hash)"
        )
        con.execute(
            "CREATE TEMP TABLE _rl_gone AS SELECT i.attempt_id FROM search_attempts i "
            "ANTI JOIN src.attempts a ON a.attempt_id = i.attempt_id AND a.file_id = i.file_id "
            "UNION SELECT i.attempt_id FROM search_attempts i SEMI JOIN _rl_stale s ON s.file_id = i.file_id"
        )
        removed = int(query_rows(con, "SELECT count(*) FROM _rl_gone")[0][0])
        if removed:
            con.execute("DELETE FROM search_text WHERE attempt_id IN (SELECT attempt_id FROM _rl_gone)")
            con.execute("DELETE FROM search_attempts WHERE attempt_id IN (SELECT attempt_id FROM _rl_gone)")
        con.execute("DELETE FROM search_files WHERE file_id IN (SELECT file_id FROM _rl_stale)")
        # new: every attempt of a known file not indexed yet
        con.execute(
            "CREATE TEMP TABLE _rl_new AS SELECT a.attempt_id, a.file_id FROM src.attempts a "
            "SEMI JOIN _rl_files f ON f.file_id = a.file_id ANTI JOIN search_attempts i ON i.attempt_id = a.attempt_id"
        )
        added = int(query_rows(con, "SELECT count(*) FROM _rl_new")[0][0])
    # the new attempts in batches of BATCH_ATTEMPTS, one statement each, in one transaction: memory stays bounded
    # (a statement over every text took 8+ GB at 1M attempts) and the file stays as compact as one insert makes it
    # (a transaction per batch left free blocks: 406 MB instead of 291 at 100k); readers never see any of it before
    # the file is renamed over the index
    bounds = query_rows(
        con,
        "SELECT min(attempt_id), max(attempt_id) FROM (SELECT attempt_id, (row_number() OVER (ORDER BY attempt_id)"
        " - 1) // ? AS batch FROM _rl_new) GROUP BY batch ORDER BY 1",
        [BATCH_ATTEMPTS],
    )
    with transaction(con):
        for lo, hi in bounds:
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _rl_batch AS SELECT * FROM _rl_new WHERE attempt_id BETWEEN ? AND ?",
                [lo, hi],
            )
            con.execute(_TEXTS, {"lo": lo, "hi": hi})  # the range lets the scans of the store skip other rows
            con.execute("INSERT INTO search_attempts SELECT attempt_id, file_id FROM _rl_batch")
    with transaction(con):
        con.execute("INSERT INTO search_files SELECT * FROM _rl_files ANTI JOIN search_files USING (file_id)")
        not_indexable = int(
            query_rows(con, "SELECT count(*) FROM src.attempts ANTI JOIN _rl_files USING (file_id)")[0][0]
        )
    covered, rows, chars = query_rows(
        con, "SELECT (SELECT count(*) FROM search_attempts), count(*), coalesce(sum(length(text)), 0) FROM search_text"
    )[0]
    con.execute("DETACH src")
    con.execute("CHECKPOINT")
    return added, removed, int(covered), not_indexable, int(rows), int(chars)


def drop_search_index(db: Location = None) -> bool:
    """Delete the index file (search then scans everything); True when there was one."""
    path = index_path(db)
    if path is None or not path.exists():
        return False
    path.unlink()
    return True

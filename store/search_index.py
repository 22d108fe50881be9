"""Transcript search's index: an inverted index of tokens kept beside a file store (``<db>.search/``) or a local
lake's catalog (``<catalog>.search/``), never inside the store itself.

Why beside the store: every write session of a file store publishes by copying the whole primary
(store/backends/file.py); inside the store the index would make every small upload pay for copying it too.

Tokens: the lower-cased text (DuckDB's ``lower``) cut at every character that is not ``a-z``, ``0-9`` or ``_``
(``TOKEN_SEPARATORS`` in store/search_tokens.py, the tokenizer); a token is a maximal run of those characters. The query side (analytics/search/compute.py,
``query_runs``) cuts the lower-cased query the same way, so a phrase that occurs in a text has its inner runs as
whole tokens of the text, its first run as the end of a token and its last as the start of one.

Layout: a folder of immutable segment files and ``manifest.json`` naming the current ones. A refresh writes one new
segment with the attempts of the files no segment covers yet, then replaces the manifest (an atomic rename), so a
reader sees the old set of segments or the new one, never half of one, and no refresh copies what is already
indexed. When there are more than ``MAX_SEGMENTS``, the smallest are merged into one (dropping the rows of attempts
that are gone). Tables of a segment:
    * ``vocab(token_id, token, n_postings)``: its tokens (integer ids local to the segment), and its word pairs: two
      tokens next to each other in a text, ``"first second"`` (a token never holds a space; a segment that has them
      holds the empty table ``search_pairs``), so a phrase of common words intersects the postings of its pairs;
    * ``postings(token_id, attempt_id, step, field, pos)``: one row per token and text, sorted by token within each
      batch so DuckDB's min/max zone maps skip the other tokens' rows; ``step`` is -1 for the answer; ``field`` is the
      position in ``FIELDS`` (``long_result``: a long result stored once in ``texts``); a word pair has one row per
      occurrence, ``pos`` the position of its first token among the text's tokens (null for a token; a segment that
      has them holds the empty table ``search_positions``), so a phrase's pairs must lie at consecutive positions;
    * ``search_attempts(attempt_id, file_id)`` and ``search_files(file_id, content_hash)``: what the segment covers;
    * ``search_long(attempt_id, step, text_row)``: the row of ``texts`` (its ``rowid``) holding each long result
      indexed, so search reads a long result by its row without looking its hash up in ``texts`` (which nothing
      orders by hash); the reader checks the row's hash and looks up by hash when it differs (segments written
      before this table have none: by hash);
      ``search_gone(attempt_id, file_id)``: attempts of older segments found gone (deleted, or their id reused) when
      the segment was written (counted once; their rows are never read and go at the next merge).

The manifest also keeps, per segment, the runs it covers: ``[run_id, file_id, lowest attempt id, highest, attempts]``
per run and file (gone attempts left out at the time it was written), so search walks the runs kept in order
without a group-by over every attempt of the store. A refresh adds them for a segment written before they were kept.

Freshness: an attempt is covered by a segment only while its file (``attempts.file_id``) is in that segment's
``search_files`` with the same content hash, and a posting counts only for an attempt whose current file is the one
the segment indexed it from. A file is ingested in one transaction and file ids are never reused (ingest_log keeps
the rows of deleted files), so a covered file's attempts are exactly those indexed, minus deleted ones, which the
search never joins. Every other attempt (a file ingested after the last refresh, an id reused after a deletion: it
comes with a new file) is scanned. So the index can lag, never be wrong; a search on a snapshot older than the
index can only miss the hits of an attempt deleted meanwhile.

Building reads the published snapshot, so it never holds the writer lock and never blocks an ingest; batches of
``BATCH_ATTEMPTS`` attempts and DuckDB's ``MEMORY_LIMIT`` bound its memory whatever the store's size.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from store.backends import open as open_store
from store.errors import RunlensError
from store.paths import SNAPSHOT_SUFFIX, Location
from store.query import query_rows, transaction
from store.search_tokens import tokenise

INDEX_SUFFIX = ".search"
LAYOUT = 2  # manifest layout; an index folder of another layout (or the single file of layout 1) is not read
MANIFEST = "manifest.json"
BATCH_ATTEMPTS = 20_000  # attempts tokenised per statement of a refresh
BATCH_LONG_TEXTS = 20_000  # long results (rows of ``texts``) tokenised per statement
MEMORY_LIMIT = "1500MB"  # DuckDB's memory in a refresh (it spills to a temporary folder beside the index beyond it)
MAX_SEGMENTS = 6  # more segments than this after a refresh: the smallest are merged
FIELDS = ("answer", "content", "args", "result", "error", "long_result")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vocab (token_id INTEGER NOT NULL, token VARCHAR NOT NULL, n_postings BIGINT);
CREATE TABLE IF NOT EXISTS postings (token_id INTEGER NOT NULL, attempt_id BIGINT NOT NULL, step INTEGER NOT NULL,
                                     field UTINYINT NOT NULL, pos INTEGER);
CREATE TABLE IF NOT EXISTS search_attempts (attempt_id BIGINT NOT NULL, file_id BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS search_files (file_id BIGINT NOT NULL, content_hash VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS search_gone (attempt_id BIGINT NOT NULL, file_id BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS search_long (attempt_id BIGINT NOT NULL, step INTEGER NOT NULL, text_row BIGINT NOT NULL);
"""
# A segment whose every text has its word pairs in the vocabulary ("first second") holds this table (empty): search
# uses pairs only in such segments (older ones, and a merge of one, lack it).
_PAIRS_MARK = "CREATE TABLE IF NOT EXISTS search_pairs (unused INTEGER)"
# A segment whose pairs' postings are one per occurrence with its position (``pos``) holds this table (empty): search
# then takes a phrase's candidates from pairs at consecutive positions (older segments, and a merge of one, lack it).
_POSITIONS_MARK = "CREATE TABLE IF NOT EXISTS search_positions (unused INTEGER)"

# A segment's runs for the manifest: per run and file, the range and count of the attempts it holds that are still
# in the store from that file. ``{s}`` is the segment's catalog (``src`` the store).
_SEGMENT_RUNS = """
SELECT a.run_id, i.file_id, min(i.attempt_id), max(i.attempt_id), count(*)
FROM {s}.search_attempts i JOIN src.attempts a ON a.attempt_id = i.attempt_id AND a.file_id = i.file_id
GROUP BY ALL ORDER BY 1, 2
"""

# The store's files (ingest_log) that can be indexed: one content hash per file_id. ``src`` is the store.
_FILES = """
CREATE OR REPLACE TEMP TABLE _rl_files AS
SELECT file_id, min(content_hash) AS content_hash FROM src.ingest_log GROUP BY file_id
HAVING count(DISTINCT content_hash) = 1
"""

# The inline texts of the attempts in _rl_batch, as analytics/sql/search.sql reads them (field: position in FIELDS).
_TEXTS = """
SELECT a.attempt_id, -1 AS step, 0 AS field, a.answer AS text
FROM src.attempts a JOIN _rl_batch n ON n.attempt_id = a.attempt_id AND a.attempt_id BETWEEN $lo AND $hi
WHERE a.answer IS NOT NULL
UNION ALL
SELECT s.attempt_id, s.step, f.field, f.text
FROM src.steps s JOIN _rl_batch n ON n.attempt_id = s.attempt_id AND s.attempt_id BETWEEN $lo AND $hi,
     LATERAL (VALUES (1, s.content), (2, s.args::VARCHAR), (3, s.result), (4, s.error)) AS f(field, text)
WHERE f.text IS NOT NULL
"""

# The long results (stored once in ``texts``) of the new attempts' steps, by the row that holds them: they are read
# in ranges of rows apart from the attempts' batches (a join of a batch's steps to ``texts`` would read every long
# text once per batch: 0.5 h of the first 1M build).
_LONG = """
CREATE OR REPLACE TEMP TABLE _rl_long AS
SELECT s.attempt_id, s.step, t.rowid AS text_row
FROM src.steps s SEMI JOIN _rl_new n ON n.attempt_id = s.attempt_id
JOIN src.texts t ON t.text_hash = s.result_hash
ORDER BY text_row
"""

# The rows of the long results of an older segment ``{s}`` that has no search_long (a refresh adds them once).
_OLD_LONG = """
INSERT INTO search_long
SELECT s.attempt_id, s.step, t.rowid
FROM src.steps s SEMI JOIN {s}.search_attempts i ON i.attempt_id = s.attempt_id
JOIN src.texts t ON t.text_hash = s.result_hash
ORDER BY s.attempt_id, s.step
"""

# One range of those rows: each text once, with every step that points at it.
_LONG_TEXTS = """
SELECT l.attempt_id, l.step, 5 AS field, t.text
FROM (SELECT rowid AS text_row, text FROM src.texts WHERE rowid BETWEEN $lo AND $hi) t
JOIN _rl_long l ON l.text_row = t.text_row AND l.text_row BETWEEN $lo AND $hi
"""


@dataclass(frozen=True)
class SearchIndexRefresh:
    """What one refresh did, and the index after it."""

    path: str
    attempts_added: int
    attempts_removed: int  # attempts of the index found gone (deleted, or their id reused) by this refresh
    attempts_covered: int
    attempts_not_indexable: int  # attempts without a known file: always scanned
    rows: int  # postings
    text_chars: int  # characters of the texts indexed by this refresh
    index_bytes: int
    seconds: float
    segments: int = 0
    vocabulary: int = 0  # distinct tokens over all segments (a token in two segments counts twice)


def index_path(db: Location = None) -> Path | None:
    """The index folder of a DuckDB file store or a local lake; None for a team store or a Parquet folder (they
    have none)."""
    return open_store(db).search_index_path(INDEX_SUFFIX)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


SegmentRuns = list[tuple[str, int, int, int, int]]  # (run_id, file_id, lowest attempt id, highest, attempts)


def _read_doc(folder: Path) -> dict | None:
    try:
        doc = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("layout") != LAYOUT or not isinstance(doc.get("segments"), list):
        return None
    return doc


def read_manifest(folder: Path) -> list[str] | None:
    """The current segment files' names, or None when ``folder`` is not an index of this layout."""
    doc = _read_doc(folder)
    return None if doc is None else [str(s) for s in doc["segments"]]


def _runs_of(doc: dict) -> dict[str, SegmentRuns]:
    """The manifest's runs per segment name (a segment written before they were kept has none)."""
    runs = doc.get("runs")
    if not isinstance(runs, dict):
        return {}
    return {str(k): [(str(r), int(f), int(lo), int(hi), int(n)) for r, f, lo, hi, n in v] for k, v in runs.items()}


def _write_manifest(folder: Path, segments: list[str], runs: dict[str, SegmentRuns]) -> None:
    tmp = folder / f"{MANIFEST}.tmp{os.getpid()}"
    doc = {
        "layout": LAYOUT,
        "segments": segments,
        "runs": {s: [list(r) for r in runs[s]] for s in segments if s in runs},
    }
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / MANIFEST)


@dataclass(frozen=True)
class AttachedIndex:
    """The index's segments attached to a connection, and the runs the manifest keeps for them."""

    catalogs: list[str]  # ``rl_search_<inode>_<mtime>``: a new segment gets a new one
    runs: list[SegmentRuns] | None  # per segment (same order); None when a segment has none kept


def attach_search_index(con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """Attach, read-only, the segments of the index of the store ``con`` reads (its snapshot or its primary).

    Returns:
        The segments' catalog names (``rl_search_<inode>_<mtime>``: a new segment gets a new one), or None when the
        store has no index (never built, a team store, a Parquet folder, an in-memory database, an index of another
        layout, or a segment that cannot be opened: search then scans).
    """
    attached = attach_search_index_runs(con)
    return None if attached is None else attached.catalogs


def attach_search_index_runs(con: duckdb.DuckDBPyConnection) -> AttachedIndex | None:
    """``attach_search_index``, with the runs the manifest keeps for the segments attached (one read of it)."""
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
    folder = store.with_name(store.name + INDEX_SUFFIX)
    doc = _read_doc(folder) if folder.is_dir() else None
    segments = None if doc is None else [str(s) for s in doc["segments"]]
    if not segments:
        return None
    names = []
    for segment in segments:
        path = folder / segment
        try:
            stat = path.stat()
            name = f"rl_search_{stat.st_ino:x}_{stat.st_mtime_ns:x}"
            con.execute(f"ATTACH IF NOT EXISTS {_literal(str(path))} AS {name} (READ_ONLY)")
        except (OSError, duckdb.Error):
            return None  # removed by a merge after the manifest was read: scan
        names.append(name)
    kept = _runs_of(doc) if doc is not None else {}
    runs = [kept[s] for s in segments] if all(s in kept for s in segments) else None
    return AttachedIndex(names, runs)


@contextlib.contextmanager
def _refresh_lock(folder: Path) -> Iterator[None]:
    """One refresh at a time per index (a second waits)."""
    with open(folder / "refresh.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def refresh_search_index(db: Location = None, *, rebuild: bool = False) -> SearchIndexRefresh:
    """Bring the index up to date with the store's published snapshot: one new segment with every attempt of a file
    no segment covers; gone attempts are counted and dropped at the next merge. ``rebuild`` starts from nothing.

    Raises:
        RunlensError: the store is neither a DuckDB file nor a local lake (a team store or a Parquet folder has no
            index).
    """
    t0 = time.perf_counter()
    folder = index_path(db)
    if folder is None:
        raise RunlensError(
            "a search index is kept only beside a DuckDB file store or a local lake; this store is always scanned"
        )
    store = open_store(db)
    store.ensure_snapshot()
    if folder.exists() and not folder.is_dir():
        folder.unlink()  # the single index file of layout 1
    folder.mkdir(exist_ok=True)
    with _refresh_lock(folder):
        doc = None if rebuild else _read_doc(folder)
        old = [] if doc is None else [str(s) for s in doc["segments"]]
        runs = {} if doc is None else _runs_of(doc)
        name = f"seg-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}.duckdb"
        con, source = store.open_search_source(folder / name)
        try:
            counts, new_runs = _add_segment(con, source, [folder / s for s in old], [s not in runs for s in old])
        finally:
            con.close()
        runs |= {s: r for s, r in zip([*old, name], new_runs, strict=True) if r is not None}
        added = counts[0]
        segments = [*old, name] if added or counts[1] or counts[5] else old
        if segments is old:
            _remove(folder / name)
        else:
            _fsync(folder / name)
        if len(segments) > MAX_SEGMENTS:
            segments, merged_runs = _merge_smallest(store, folder, segments)
            runs[segments[-1]] = merged_runs
        _write_manifest(folder, segments, runs)
        for stale in {p.name for p in folder.glob("seg-*.duckdb")} - set(segments):
            _remove(folder / stale)  # replaced (a rebuild, a merge) or left by a refresh that failed
        rows, vocabulary = _totals(folder, segments)
    size = sum((folder / s).stat().st_size for s in segments)
    return SearchIndexRefresh(
        str(folder), added, counts[1], counts[4], counts[2], rows, counts[3], size,
        round(time.perf_counter() - t0, 3), len(segments), vocabulary,
    )  # fmt: skip


def _remove(path: Path) -> None:
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _settings(con: duckdb.DuckDBPyConnection) -> None:
    # bounded memory whatever the store's size (one statement over every text took 20 GB at 10M attempts)
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    con.execute(_SCHEMA)


def _attach_old(con: duckdb.DuckDBPyConnection, segments: list[Path]) -> list[str]:
    names = []
    for i, path in enumerate(segments):
        con.execute(f"ATTACH {_literal(str(path))} AS old{i} (READ_ONLY)")
        names.append(f"old{i}")
    return names


def _union(names: list[str], select: str) -> str:
    """``select`` (with ``{s}`` for a segment's catalog) over every segment; without any, an empty relation of its
    columns (``attempt_id, file_id`` or ``file_id, content_hash``)."""
    if not names:
        if "content_hash" in select:
            return "SELECT NULL::BIGINT AS file_id, NULL::VARCHAR AS content_hash LIMIT 0"
        return "SELECT NULL::BIGINT AS attempt_id, NULL::BIGINT AS file_id LIMIT 0"
    return " UNION ALL ".join(select.format(s=s) for s in names)


def _add_segment(
    con: duckdb.DuckDBPyConnection, attach_source: str, old_segments: list[Path], runs_wanted: list[bool]
) -> tuple[tuple[int, int, int, int, int, int], list[SegmentRuns | None]]:
    """Write the new segment ``con`` is open on; returns added, removed, not indexable, characters indexed,
    attempts covered after it, older segments whose long results' rows it holds; and the runs of each old segment ``runs_wanted`` names (else None), then the new
    segment's."""
    _settings(con)
    con.execute(_PAIRS_MARK)
    con.execute(_POSITIONS_MARK)
    con.execute(attach_source)
    old = _attach_old(con, old_segments)
    con.execute(_FILES)
    # files some segment covers with the same content; attempts of the index that are gone and not counted yet
    con.execute(
        "CREATE TEMP TABLE _rl_done AS SELECT DISTINCT file_id FROM ("
        + _union(old, "SELECT file_id, content_hash FROM {s}.search_files")
        + ") SEMI JOIN _rl_files USING (file_id, content_hash)"
    )
    con.execute(
        "CREATE TEMP TABLE _rl_gone AS SELECT attempt_id, file_id FROM ("
        + _union(old, "SELECT attempt_id, file_id FROM {s}.search_attempts")
        + ") i WHERE NOT EXISTS (SELECT 1 FROM src.attempts a SEMI JOIN _rl_done d ON d.file_id = a.file_id "
        "WHERE a.attempt_id = i.attempt_id AND a.file_id = i.file_id) "
        "EXCEPT (" + _union(old, "SELECT attempt_id, file_id FROM {s}.search_gone") + ")"
    )
    removed = int(query_rows(con, "SELECT count(*) FROM _rl_gone")[0][0])
    con.execute(
        "CREATE TEMP TABLE _rl_new AS SELECT a.attempt_id, a.file_id, a.run_id FROM src.attempts a "
        "SEMI JOIN _rl_files f ON f.file_id = a.file_id ANTI JOIN _rl_done d ON d.file_id = a.file_id"
    )
    added = int(query_rows(con, "SELECT count(*) FROM _rl_new")[0][0])
    bounds = query_rows(
        con,
        "SELECT min(attempt_id), max(attempt_id), count(*) FROM (SELECT attempt_id, (row_number() OVER "
        "(ORDER BY attempt_id) - 1) // ? AS batch FROM _rl_new) GROUP BY batch ORDER BY 1",
        [BATCH_ATTEMPTS],
    )
    chars = 0
    for lo, hi, _n in bounds:
        with transaction(con):  # a transaction per batch: the segment is read by nobody before the manifest names it
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _rl_batch AS SELECT * FROM _rl_new WHERE attempt_id BETWEEN ? AND ?",
                [lo, hi],
            )
            # the range lets the scans of the store skip other rows
            chars += tokenise(con, _TEXTS, lo, hi)
            con.execute("INSERT INTO search_attempts SELECT attempt_id, file_id FROM _rl_batch")
    con.execute(_LONG)
    lacking = [name for name in old if not _has_table(con, name, "search_long")]
    with transaction(con):
        # in attempt order: a search looks rows up by attempt id, and the zone maps skip the others
        con.execute("INSERT INTO search_long SELECT attempt_id, step, text_row FROM _rl_long ORDER BY attempt_id, step")
        # the rows of the long results of segments written before the table, once (search looks up every
        # segment's search_long, so they need not be in the segment of their attempts)
        for name in lacking:
            con.execute(_OLD_LONG.format(s=name))
    long_rows = query_rows(
        con,
        "SELECT min(text_row), max(text_row) FROM (SELECT text_row, (row_number() OVER (ORDER BY text_row) - 1) // ? "
        "AS batch FROM (SELECT DISTINCT text_row FROM _rl_long)) GROUP BY batch ORDER BY 1",
        [BATCH_LONG_TEXTS],
    )
    for lo, hi in long_rows:
        with transaction(con):
            chars += tokenise(con, _LONG_TEXTS, lo, hi)
    with transaction(con):
        for table in ("_rl_batch", "_rl_long"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
        con.execute("INSERT INTO search_files SELECT * FROM _rl_files SEMI JOIN _rl_new USING (file_id)")
        con.execute("INSERT INTO search_gone SELECT * FROM _rl_gone")
        _count_postings(con)
        not_indexable, covered = query_rows(
            con,
            "SELECT count(*) FILTER (WHERE f.file_id IS NULL), count(*) FILTER (WHERE a.file_id IN "
            "(SELECT file_id FROM _rl_done UNION ALL SELECT file_id FROM _rl_new)) "
            "FROM src.attempts a LEFT JOIN _rl_files f USING (file_id)",
        )[0]
    runs = [_segment_runs(con, name) if wanted else None for name, wanted in zip(old, runs_wanted, strict=True)]
    runs.append(_segment_runs(con, _own_catalog(con)))
    for name in old:
        con.execute(f"DETACH {name}")
    con.execute("DETACH src")
    con.execute("CHECKPOINT")
    return (added, removed, int(not_indexable), chars, int(covered), len(lacking)), runs


def _own_catalog(con: duckdb.DuckDBPyConnection) -> str:
    """The segment's own catalog, quoted (its name is the file's, with hyphens)."""
    return '"' + str(query_rows(con, "SELECT current_database()")[0][0]).replace('"', '""') + '"'


def _segment_runs(con: duckdb.DuckDBPyConnection, catalog: str) -> SegmentRuns:
    """The manifest's runs of the segment attached as ``catalog`` (see ``_SEGMENT_RUNS``)."""
    rows = query_rows(con, _SEGMENT_RUNS.format(s=catalog))
    return [(str(r), int(f), int(lo), int(hi), int(n)) for r, f, lo, hi, n in rows]


def _has_table(con: duckdb.DuckDBPyConnection, catalog: str, table: str) -> bool:
    return bool(
        query_rows(
            con, "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = ?", [catalog, table]
        )[0][0]
    )


def _count_postings(con: duckdb.DuckDBPyConnection) -> None:
    """vocab.n_postings: how many texts hold each token, how many times a pair occurs (search reads the rarest run's
    first)."""
    con.execute(
        "UPDATE vocab SET n_postings = c.n FROM (SELECT token_id, count(*) AS n FROM postings GROUP BY token_id) c "
        "WHERE c.token_id = vocab.token_id"
    )


def _merge_smallest(store: object, folder: Path, segments: list[str]) -> tuple[list[str], SegmentRuns]:
    """Merge the smallest segments into one so that MAX_SEGMENTS // 2 + 1 remain; rows of attempts gone from the
    store are left out. Returns the new segment list (the merged files are removed once the manifest is replaced;
    the merged one is last) and the merged segment's runs."""
    # the smallest by postings (a file's size grows in blocks: small segments look alike), of equal ones the newest
    by_size = sorted(segments, key=lambda s: (_postings_of(folder / s), -segments.index(s)))
    n_merge = len(segments) - MAX_SEGMENTS // 2
    merging = by_size[:n_merge]
    name = f"seg-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}.duckdb"
    con, source = store.open_search_source(folder / name)  # type: ignore[attr-defined]
    try:
        _settings(con)
        con.execute(source)
        old = _attach_old(con, [folder / s for s in merging])
        if all(_has_table(con, s, "search_pairs") for s in old):
            con.execute(_PAIRS_MARK)
        if all(_has_table(con, s, "search_positions") for s in old):
            con.execute(_POSITIONS_MARK)
        con.execute(_FILES)
        with transaction(con):
            con.execute(
                "INSERT INTO vocab SELECT row_number() OVER (ORDER BY token)::INTEGER, token, NULL FROM ("
                + " UNION ".join(f"SELECT token FROM {s}.vocab" for s in old)
                + ")"
            )
        for s in old:
            # the attempts of this segment still in the store from the file it indexed them from, with that content
            with transaction(con):
                con.execute(
                    f"CREATE OR REPLACE TEMP TABLE _rl_live AS SELECT i.attempt_id, i.file_id FROM {s}.search_attempts i "
                    f"SEMI JOIN src.attempts a ON a.attempt_id = i.attempt_id AND a.file_id = i.file_id "
                    f"SEMI JOIN (SELECT file_id FROM {s}.search_files JOIN _rl_files USING (file_id, content_hash)) f "
                    "ON f.file_id = i.file_id"
                )
                pos = "p.pos" if _has_table(con, s, "search_positions") else "NULL"
                con.execute(
                    f"INSERT INTO postings SELECT v.token_id, p.attempt_id, p.step, p.field, {pos} FROM {s}.postings p "
                    f"JOIN {s}.vocab o ON o.token_id = p.token_id JOIN vocab v ON v.token = o.token "
                    "SEMI JOIN _rl_live l ON l.attempt_id = p.attempt_id "
                    "ORDER BY v.token_id, p.attempt_id, p.step, p.field, 5"
                )
                con.execute("INSERT INTO search_attempts SELECT * FROM _rl_live")
                if _has_table(con, s, "search_long"):
                    # every row of an attempt still in the store (a segment may hold an older segment's rows)
                    con.execute(
                        f"INSERT INTO search_long SELECT * FROM {s}.search_long l "
                        "SEMI JOIN src.attempts a ON a.attempt_id = l.attempt_id"
                    )
                else:  # a segment written before the table: the rows by hash (one read of texts' hashes)
                    con.execute(
                        "INSERT INTO search_long SELECT st.attempt_id, st.step, t.rowid FROM src.steps st "
                        "SEMI JOIN _rl_live l ON l.attempt_id = st.attempt_id JOIN src.texts t ON t.text_hash = st.result_hash"
                    )
                con.execute(
                    f"INSERT INTO search_files SELECT * FROM {s}.search_files "
                    "SEMI JOIN _rl_files USING (file_id, content_hash)"
                )
                con.execute(f"INSERT INTO search_gone SELECT * FROM {s}.search_gone")
        with transaction(con):
            con.execute("DELETE FROM vocab WHERE token_id NOT IN (SELECT DISTINCT token_id FROM postings)")
            _count_postings(con)
        runs = _segment_runs(con, _own_catalog(con))
        for s in old:
            con.execute(f"DETACH {s}")
        con.execute("DETACH src")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    _fsync(folder / name)
    return [s for s in segments if s not in merging] + [name], runs


def _postings_of(segment: Path) -> int:
    with duckdb.connect(str(segment), read_only=True) as con:
        return int(query_rows(con, "SELECT count(*) FROM postings")[0][0])


def _totals(folder: Path, segments: list[str]) -> tuple[int, int]:
    """Postings and vocabulary (summed over segments)."""
    if not segments:
        return 0, 0
    con = duckdb.connect()
    try:
        names = _attach_old(con, [folder / s for s in segments])
        rows, vocabulary = query_rows(
            con,
            "SELECT sum(n), sum(v) FROM ("
            + " UNION ALL ".join(
                f"SELECT (SELECT count(*) FROM {s}.postings) AS n, (SELECT count(*) FROM {s}.vocab) AS v" for s in names
            )
            + ")",
        )[0]
    finally:
        con.close()
    return int(rows or 0), int(vocabulary or 0)


def drop_search_index(db: Location = None) -> bool:
    """Delete the index (search then scans everything); True when there was one."""
    path = index_path(db)
    if path is None or not path.exists():
        return False
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    return True

"""Ingest files and folders: detect, parse, validate, write -- each file all or nothing (its own transaction, or a
batch of small files in one: ingest.batches)."""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import store
from ingest import lazy_imports
from ingest.chunked import read_head, stream_hash, validate_in_parts
from ingest.errors import IngestError, ProblemCollector
from ingest.formats import ARCHIVE_SUFFIXES, FORMATS, Format, detect_format, is_archive, parse_with, walk_suffixes
from ingest.known import load_known
from ingest.outcome_text import describe
from ingest.records import DEFINITION_TABLES, Bundle, Known, Normaliser, definition_key
from ingest.rule_labels import label_rules as _label_rules
from ingest.tempdirs import ON_DISK, SPILL_PREFIX, SpillPlaces, memory_parent, owned_temporary_folder, remove_orphans
from ingest.tempdirs import memory_available as _memory_available
from store import RunlensError

if TYPE_CHECKING:
    import duckdb

    from store import Location

PROGRESS_MIN_BYTES = 8 * 1024 * 1024  # show a progress bar for files at least this large
# A limit on the file's size only when RUNLENS_MAX_FILE_BYTES sets one (0 or unset: files of any size; what one
# record may hold is bounded where lines are read). Checked with stat before reading.
MAX_FILE_BYTES = int(os.environ.get("RUNLENS_MAX_FILE_BYTES") or 0) or None
PARALLEL_MIN_BYTES = 64 * 1024 * 1024  # below this in all, worker processes cost more than they save
# A file larger than this whose format reads in chunks (native JSON Lines) is read, validated and kept on disk
# part by part, each part at most this many bytes of whole lines: memory follows the part, not the file. The whole
# file is still validated before anything is written, and written in one transaction.
CHUNK_BYTES = max(1, int(float(os.environ.get("RUNLENS_INGEST_CHUNK_MB") or 64) * 1024 * 1024))
# One memory budget for the ingest's process tree (the writer and its validation workers): it sets how many
# workers run. The writer takes WRITER_MEMORY_BYTES (DuckDB's buffer pool, INGEST_MEMORY_LIMIT, and the
# interpreter); each worker the interpreter plus WORKER_MEMORY_FACTOR times the part it holds.
TREE_MEMORY_BYTES = int(float(os.environ.get("RUNLENS_INGEST_MEMORY_MB") or 4096) * 1024 * 1024)
WRITER_MEMORY_BYTES = 1536 * 1024 * 1024
WORKER_BASE_BYTES = 256 * 1024 * 1024
WORKER_MEMORY_FACTOR = 8  # a worker's peak memory in multiples of its file (measured: about 6 for native logs)
INGEST_MEMORY_LIMIT = "1GB"  # DuckDB's buffer pool while ingesting (its default is 80 % of RAM)
# Validation workers hand their files' rows over in a memory-backed folder (tmpfs, ``ingest.tempdirs.memory_parent``)
# while this ingest's files there come to at most this much, then in the temporary folder on disk: a file's rows
# written to tmpfs cost its worker about a third of the system CPU of a disk's file system (measured on a 1M-attempt
# file: 0.015-0.017 against 0.046-0.061 s), and no write-back. The parts of a large file (over ``CHUNK_BYTES``) wait
# there too, part by part within the same total, whether a worker or this process reads it (a 560 MB file's nine
# parts: 0.6 CPU s of system time less). 0: always on disk.
MEMORY_SPILL_BYTES = int(float(os.environ.get("RUNLENS_INGEST_MEMORY_SPILL_MB") or 1024) * 1024 * 1024)
# Ingests of at most this many bytes in all declare a short writer session: a writer finishing while one waits
# may leave its snapshot publish to it (one publish per burst of small uploads; store.writer).
SHORT_SESSION_MAX_BYTES = 16 * 1024 * 1024


@dataclass
class FileResult:
    """What happened to one file."""

    path: str
    format: str
    outcome: str  # ingested | duplicate | failed
    n_runs: int = 0
    n_tasks: int = 0
    n_attempts: int = 0
    n_steps: int = 0
    seconds: float = 0.0
    error: IngestError | None = None
    duplicate_of: str | None = None
    warnings: tuple[str, ...] = ()  # what the reader noted without refusing the file (unscored samples, ...)
    rescored_runs: tuple[str, ...] = ()  # runs this file re-scored (a new revision of their scores)
    n_rescored: int = 0  # stored attempts whose scores it replaced
    n_partial: int = 0  # attempts stored from a trace without its root span (marked ``trace_partial``)
    n_merged: int = 0  # OTLP traces stored earlier, merged with this file's spans (their attempts replaced)
    n_already: int = 0  # OTLP traces of this file whose every span was stored already
    retries: tuple[str, ...] = ()  # its runs that retry a stored run, or that a stored retry supersedes (in words)


def iter_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named, and files with a readable suffix (or an archive's) found recursively in folders named."""
    suffixes = walk_suffixes() + ARCHIVE_SUFFIXES
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                if found.is_file() and found.name.lower().endswith(suffixes):
                    yield found
        else:
            yield path


def _content_hash(path: Path, data: bytes, fmt: Format, options: dict[str, Any]) -> str:
    body = fmt.canonical(path, data, options) if fmt.canonical is not None else None
    digest = hashlib.sha256(data if body is None else body)
    digest.update(b"\0" + fmt.name.encode() + b"\0" + json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _progress_bar(size: int, name: str, enabled: bool) -> Any:
    if not enabled or size < PROGRESS_MIN_BYTES:
        return None
    from tqdm import tqdm

    return tqdm(total=size, unit="B", unit_scale=True, desc=Path(name).name, file=sys.stderr, leave=False)


@dataclass
class Prepared:
    """A file read, hashed, parsed and validated, not yet written (what a worker process hands the writer)."""

    path: str
    format: str
    started_at: dt.datetime
    content_hash: str = ""
    bundle: Bundle | None = None
    error: IngestError | None = None
    duplicate_of: str | None = None
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()


def prepare_file(
    path: Path,
    known: Known,
    *,
    fmt: str = "auto",
    progress: bool = False,
    data: bytes | None = None,
    places: SpillPlaces = ON_DISK,
    **options: Any,
) -> Prepared:
    """Read, hash, parse and validate one file against ``known``; touch no database.

    The result holds either the validated bundle (frozen to Arrow), the error listing every problem, or the
    path under which identical content was already ingested. ``known`` is extended with the file's definitions.
    A file over ``CHUNK_BYTES`` in a format read in chunks is read from disk part by part, and the bundle keeps
    the validated rows of its parts in ``places`` (``SpillPlaces.spill``; the caller releases the bundle).
    """
    started = time.perf_counter()
    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    name = str(path)
    chosen: Format | None = None
    try:
        if data is None and _checked_size(path) > CHUNK_BYTES:
            chosen = choose_format(path, read_head(path), fmt)
            if chosen.chunks is not None:
                return _prepare_in_chunks(path, known, chosen, started, started_at, progress, places, options)
        data = read_input(path) if data is None else data
        chosen = choose_format(path, data, fmt)
        extra = chosen.fingerprint(path, data, options) if chosen.fingerprint is not None else {}
        content_hash = _content_hash(path, data, chosen, {**options, **extra})
        if content_hash in known.hashes:
            return _duplicate(name, chosen.name, started, started_at, content_hash, known)
        problems = ProblemCollector()
        bar = _progress_bar(len(data), name, progress)
        collecting = gc.isenabled()
        gc.disable()  # millions of new, acyclic rows: the cyclic collector would rescan them over and over
        try:
            records = parse_with(chosen, path, data, problems, bar, **options)
            bundle = Normaliser(known, problems, revises_scores=chosen.revises_scores).feed(records)
        finally:
            if collecting:
                gc.enable()
            if bar is not None:
                bar.close()
        problems.raise_if_any()
        bundle.freeze()
    except IngestError as exc:  # (the format, once known: an OTLP file may be refused for want of stored spans)
        return Prepared(
            name, fmt if chosen is None else chosen.name, started_at, error=exc, seconds=time.perf_counter() - started
        )
    except MemoryError:  # ArrowMemoryError too: the file's content outgrew this process's memory (its limit)
        return Prepared(name, fmt, started_at, error=out_of_memory(name), seconds=time.perf_counter() - started)
    return Prepared(
        name,
        chosen.name,
        started_at,
        content_hash,
        bundle,
        seconds=time.perf_counter() - started,
        warnings=tuple(problems.warnings),
    )


def _duplicate(
    name: str, fmt: str, started: float, started_at: dt.datetime, content_hash: str, known: Known
) -> Prepared:
    """The ``Prepared`` of a file whose content was already ingested under another path (nothing to write)."""
    return Prepared(
        name,
        fmt,
        started_at,
        content_hash,
        duplicate_of=known.hashes[content_hash],
        seconds=time.perf_counter() - started,
    )


def _prepare_in_chunks(
    path: Path,
    known: Known,
    chosen: Format,
    started: float,
    started_at: dt.datetime,
    progress: bool,
    places: SpillPlaces,
    options: dict[str, Any],
) -> Prepared:
    """``prepare_file`` of a large file read from disk in parts of at most ``CHUNK_BYTES`` (``ingest.chunked``),
    its parts waiting in ``places``."""
    name = str(path)
    content_hash = stream_hash(path, chosen, options)
    if content_hash in known.hashes:
        return _duplicate(name, chosen.name, started, started_at, content_hash, known)
    bar = _progress_bar(_size(path), name, progress)
    try:
        bundle, warnings = validate_in_parts(path, known, chosen, bar, CHUNK_BYTES, places)
    finally:
        if bar is not None:
            bar.close()
    return Prepared(
        name, chosen.name, started_at, content_hash, bundle, seconds=time.perf_counter() - started, warnings=warnings
    )


def _checked_size(path: Path) -> int:
    """The file's size, refused (with its location) when over ``RUNLENS_MAX_FILE_BYTES`` or unreadable."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise IngestError.single(f"{path}:1", "-", f"cannot read file: {exc.strerror or exc}") from exc
    if MAX_FILE_BYTES is not None and size > MAX_FILE_BYTES:
        raise IngestError.single(f"{path}:1", "-", f"file of {size:,} bytes exceeds the {MAX_FILE_BYTES:,}-byte limit")
    return size


def out_of_memory(name: str) -> IngestError:
    """The error of a file whose records did not fit in this process's memory (a limit, or the machine's)."""
    return IngestError.single(
        f"{name}:1",
        "-",
        "ran out of memory holding this file's records; split it into smaller files (nothing was written)",
    )


def read_input(path: Path) -> bytes:
    """The bytes of an input file, refused (with its location) when unreadable, empty or over the size limit."""
    name = str(path)
    size = _checked_size(path)
    try:
        room = _memory_available()
        if room is not None and size > room // 2:  # this reader holds the whole file: refuse it before reading
            raise IngestError.single(
                f"{name}:1",
                "-",
                f"file of {size:,} bytes is over half the memory available ({room:,} bytes) and this format is "
                "read whole (native JSON Lines are read in parts); split it, or ingest it on a machine with more "
                "memory",
            )
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError.single(f"{name}:1", "-", f"cannot read file: {exc.strerror or exc}") from exc
    if not data or data.isspace():  # (no copy of the whole file, unlike strip())
        raise IngestError.single(f"{name}:1", "-", "empty file: nothing to ingest")
    return data


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    *,
    fmt: str = "auto",
    is_demo: bool = False,
    progress: bool = False,
    known: Known | None = None,
    places: SpillPlaces = ON_DISK,
    **options: Any,
) -> FileResult:
    """Validate one file completely, then write it in one transaction (or nothing at all).

    Args:
        known: what the database holds (``load_known``), kept up to date across calls; loaded when None.
        places: where a large file's validated parts wait for the writer (``SpillPlaces``; by default the system's
            temporary folder).

    Raises:
        IngestError: the file is unreadable or invalid; every problem found is listed.
    """
    known = load_known(con) if known is None else known
    prepared = prepare_file(path, known.copy(), fmt=fmt, progress=progress, places=places, **options)
    if prepared.format == "otlp":  # spans of traces stored already: merged with them (ingest.otlp.filemerge)
        from ingest.otlp.filemerge import merge_file

        merged = merge_file(con, prepared, known, is_demo=is_demo, options=options)
        if merged is not None:
            return merged
    return commit_fresh(con, prepared, known, is_demo=is_demo)


def commit_fresh(con: duckdb.DuckDBPyConnection, prepared: Prepared, known: Known, *, is_demo: bool) -> FileResult:
    """``commit_prepared`` of a file prepared against the current ``known``, its parts released whatever happens.

    Raises:
        IngestError: the prepared file is invalid.
    """
    try:
        result = commit_prepared(con, prepared, known, is_demo=is_demo)
    finally:
        if prepared.bundle is not None:
            prepared.bundle.release()
    if result is None:  # cannot happen: validated against the database itself
        raise RuntimeError(f"{prepared.path}: validated against the current database, yet inconsistent with it")
    return result


def commit_prepared(
    con: duckdb.DuckDBPyConnection, prepared: Prepared, known: Known, *, is_demo: bool = False
) -> FileResult | None:
    """Write a prepared file in one transaction, after checking it against what the database holds now.

    A file prepared against an older ``known`` (in a worker, while earlier files were being written) is written
    only when that made no difference: its definitions already written since are identical (and dropped), and
    none of its attempts is in the database. Otherwise None: prepare it again against the current ``known``.
    ``known`` is updated with what was written.

    Raises:
        IngestError: the prepared file is invalid.
    """
    started = time.perf_counter()
    if prepared.format == "otlp":  # naming a trace stored already: ingest_file merges it (ingest.otlp.filemerge)
        from ingest.otlp.filemerge import names_stored_traces

        if names_stored_traces(con, prepared, known):
            return None
    if prepared.error is not None:
        raise prepared.error
    duplicate_of = prepared.duplicate_of or known.hashes.get(prepared.content_hash)
    if duplicate_of is not None:
        return FileResult(
            prepared.path, prepared.format, "duplicate", duplicate_of=duplicate_of, seconds=prepared.seconds
        )
    bundle = prepared.bundle
    assert bundle is not None
    new_rows = _new_definitions(bundle, known)
    if new_rows is None or _has_stored_attempts(con, bundle, new_rows):
        return None
    from store.ingest_writer import write_bundle
    from store.retries import retry_keys, retry_notes

    _, retries = write_bundle(
        con,
        bundle,
        path=prepared.path,
        content_hash=prepared.content_hash,
        fmt=prepared.format,
        is_demo=is_demo,
        started_at=prepared.started_at,
        seconds=prepared.seconds + time.perf_counter() - started,
        before_commit=_label_rules(bundle, known),
    )
    for kind, row in new_rows:
        known.add(kind, row)
    for row in bundle.revised_runs.values():
        known.add("run", row)
    for row in bundle.revised_benchmarks.values():
        known.add("benchmark", row)
    known.hashes[prepared.content_hash] = prepared.path
    return FileResult(
        prepared.path,
        prepared.format,
        "ingested",
        len(bundle.runs["run_id"]),
        len(bundle.tasks["task_id"]),
        bundle.n_attempts,
        bundle.n_steps,
        prepared.seconds + time.perf_counter() - started,
        warnings=prepared.warnings
        + ((f"the commit conflicted with another one and was retried {retries} time(s)",) if retries else ()),
        rescored_runs=tuple(bundle.revised_runs),
        n_rescored=bundle.freeze()["score_updates"].num_rows,
        n_partial=bundle.n_partial,
        retries=retry_notes(con, retry_keys(bundle.runs)),  # no statement for a file without Inspect task ids
    )


def _new_definitions(bundle: Bundle, known: Known) -> list[tuple[str, dict[str, Any]]] | None:
    """Drop from ``bundle`` the definitions ``known`` already has identically; None when one conflicts."""
    new_rows: list[tuple[str, dict[str, Any]]] = []
    for kind, attr in DEFINITION_TABLES.items():
        cols: dict[str, list[Any]] = getattr(bundle, attr)
        names = list(cols)
        keep: list[int] = []
        for i, values in enumerate(zip(*cols.values(), strict=True)):
            row = dict(zip(names, values, strict=True))
            if kind == "task":
                known.ensure_tasks(str(row["benchmark"]))
            seen = known.definitions.get((kind, definition_key(kind, row)))
            if seen is None:
                keep.append(i)
                new_rows.append((kind, row))
                if kind == "benchmark":  # not in the store, nor any task of it: none to read (Known.ensure_tasks)
                    known.loaded_benchmarks.add(str(row["benchmark"]))
            elif seen != row:
                return None
        if len(keep) < len(next(iter(cols.values()), [])):
            setattr(bundle, attr, {name: [values[i] for i in keep] for name, values in cols.items()})
    return new_rows


def _has_stored_attempts(
    con: duckdb.DuckDBPyConnection, bundle: Bundle, new_rows: list[tuple[str, dict[str, Any]]]
) -> bool:
    """True when an attempt of the bundle is already in the database (only possible for runs it did not define)."""
    new_runs = {row["run_id"] for kind, row in new_rows if kind == "run"}
    for tables in bundle.parts():
        attempts = tables["attempts"]
        if attempts.num_rows == 0 or set(attempts.column("run_id").unique().to_pylist()) <= new_runs:
            continue
        con.register("_rl_keys", attempts.select(["run_id", "task_id", "sample"]))
        try:
            query = "SELECT count(*) FROM _rl_keys k JOIN attempts a USING (run_id, task_id, sample)"
            if con.execute(query).fetchall()[0][0]:
                return True
        finally:
            con.unregister("_rl_keys")
    return False


def choose_format(path: Path, data: bytes, fmt: str) -> Format:
    if fmt != "auto":
        if fmt not in FORMATS:
            raise IngestError.single(
                f"{path}:1", "--format", f"unknown format {fmt!r}; one of auto, {', '.join(FORMATS)}"
            )
        return FORMATS[fmt]
    found = detect_format(path, data[:65536])
    if found is None:
        raise IngestError.single(
            f"{path}:1", "-", f"format not recognised; pass --format (one of {', '.join(FORMATS)})"
        )
    return found


def ingest_jobs(files: list[Path], jobs: int | None) -> int:
    """How many worker processes validate files: ``jobs`` when given, else (``RUNLENS_INGEST_JOBS`` or the number
    of CPUs, at most 4) when there are several files of at least ``PARALLEL_MIN_BYTES`` in all, and no more than
    the memory budget holds (``RUNLENS_INGEST_MEMORY_MB`` for the tree, or what is available if less: the writer's
    share, then per worker ``WORKER_MEMORY_FACTOR`` times the largest file or part it holds); 1 means no pool."""
    if jobs is None:
        setting = os.environ.get("RUNLENS_INGEST_JOBS", "").strip()
        if setting and not setting.isdigit():
            raise RunlensError(f"RUNLENS_INGEST_JOBS must be a whole number of worker processes, not {setting!r}")
        jobs = int(setting or 0) or min(4, os.cpu_count() or 1)
        files = [f for f in files if not is_archive(f)]  # archives are read in the writing process
        sizes = [_size(f) for f in files]
        if sum(sizes) < PARALLEL_MIN_BYTES:
            return 1
        chunked = FORMATS["native"].suffixes  # read in parts of CHUNK_BYTES when larger (if native, as most are)
        held = max(
            min(n, CHUNK_BYTES) if f.name.lower().endswith(chunked) else n for f, n in zip(files, sizes, strict=True)
        )
        room = min(_available_memory(), TREE_MEMORY_BYTES - WRITER_MEMORY_BYTES)
        jobs = min(jobs, max(1, room // (WORKER_BASE_BYTES + WORKER_MEMORY_FACTOR * held)))
    return max(1, min(jobs, len(files)))


def _available_memory() -> int:
    """Bytes of memory available to new processes (MemAvailable), or a generous guess where /proc has none."""
    return _memory_available() or 8 * 1024**3


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def ingest_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    db: Location = None,
    fmt: str = "auto",
    is_demo: bool = False,
    progress: bool = False,
    out: TextIO | None = None,
    jobs: int | None = None,
    **options: Any,
) -> list[FileResult]:
    """Ingest every file under ``paths``; a bad file is reported and skipped, the others still go in.

    Files are written in order, each all or nothing: one transaction each, or several small files whose runs are
    their own in one transaction together (``ingest.batches``; a batch that fails is written file by file). With
    several files (see ``ingest_jobs``), worker processes
    read and validate the next files while this process writes the current one; the outcome is the same as one
    file after another (a file validated against definitions that changed meanwhile is validated again). The
    workers are started with ``spawn``: a script calling this with workers needs the usual
    ``if __name__ == "__main__":`` guard (``python -m ingest``, notebooks and ``python -c`` need nothing).

    Args:
        paths: files or folders (walked recursively).
        db: database path (see ``store.resolve_db_path``).
        fmt: a format name or ``auto``.
        is_demo: mark the data as demo data.
        progress: show progress bars (per large file; over all files when validating in parallel).
        out: where to print one line per file (None: silent).
        jobs: worker processes for validation (None: automatic; 1: none).
        **options: format-specific options (for example ``mapping`` for CSV).
    """
    files = list(iter_files(paths))
    n_jobs = ingest_jobs(files, jobs)
    results: list[FileResult] = []
    is_short = sum(_size(f) for f in files) <= SHORT_SESSION_MAX_BYTES
    remove_orphans(SPILL_PREFIX)  # the spill folders of killed ingests (ingest.tempdirs)
    spills = n_jobs > 1 or any(_size(f) > CHUNK_BYTES or is_archive(f) for f in files)
    spill_folder = owned_temporary_folder(SPILL_PREFIX) if spills else contextlib.nullcontext(None)
    memory = memory_parent() if MEMORY_SPILL_BYTES > 0 else None
    if memory is not None:  # (every ingest: a killed one's parts may wait there whatever this one needs)
        remove_orphans(SPILL_PREFIX, parent=memory)
    in_memory = memory if n_jobs > 1 or spills else None
    memory_folder = (
        owned_temporary_folder(SPILL_PREFIX, in_memory) if in_memory is not None else contextlib.nullcontext(None)
    )
    from store.ingest_writer import one_thread

    with (
        lazy_imports.refused(),  # pandas and pyarrow.dataset: DuckDB and pyarrow probe for them (ingest.lazy_imports)
        spill_folder as spill_dir,
        memory_folder as memory_dir,
        store.writer(db, short_session=is_short) as con,
        one_thread(con, n_jobs > 1),
    ):
        # Written blocks are on disk already: a small buffer pool only means less cached, and keeps a long
        # ingest's memory flat (measured at 1M attempts: 3.7 GB for this process at DuckDB's default, 1.3 GB here).
        con.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
        known = load_known(con)
        places = SpillPlaces(spill_dir, memory_dir, MEMORY_SPILL_BYTES)
        if n_jobs > 1:
            assert spill_dir is not None
            from ingest.parallel import prepare_in_workers

            prepared = prepare_in_workers(files, known, n_jobs, fmt=fmt, progress=progress, places=places, **options)
        else:
            prepared = (None for _ in files)

        def write_one(path: Path, ready: Prepared | None) -> FileResult:
            """One file in its own transaction (``ready``: validated already, perhaps against an older store)."""
            try:
                result = commit_prepared(con, ready, known, is_demo=is_demo) if ready is not None else None
                if result is None:
                    result = ingest_file(
                        con,
                        path,
                        fmt=fmt,
                        is_demo=is_demo,
                        progress=progress and n_jobs == 1,
                        known=known,
                        places=places,
                        **options,
                    )
            except IngestError as exc:
                result = FileResult(str(path), fmt, "failed", error=exc)
            except MemoryError:  # while writing (Arrow buffers): the transaction rolled back, the next file goes on
                result = FileResult(str(path), fmt, "failed", error=out_of_memory(str(path)))
            finally:
                if ready is not None and ready.bundle is not None:
                    ready.bundle.release()
            return result

        def emit(result: FileResult) -> None:
            results.append(result)
            if out is not None:
                print(describe(result), file=out)

        from ingest.batches import Batch  # small files written together (each still all or nothing)

        batch = Batch(con, known, is_demo=is_demo, alone=lambda p: write_one(Path(p.path), p), emit=emit)
        try:
            for path, ready in zip(files, prepared, strict=True):
                if is_archive(path):  # each member a file of its own, streamed (ingest.archives)
                    from ingest.archives import ingest_archive

                    batch.flush()
                    for done in ingest_archive(con, path, known, fmt=fmt, is_demo=is_demo, places=places, **options):
                        emit(done)
                    continue
                if len(files) > 1:
                    if ready is None:  # validated here (what ingest_file does), then offered to the batch
                        ready = prepare_file(
                            path,
                            known.copy(),
                            fmt=fmt,
                            progress=progress and n_jobs == 1,
                            places=places,
                            **options,
                        )
                    if batch.offer(ready, _size(path)):
                        continue
                emit(write_one(path, ready))
            batch.flush()
        finally:
            batch.release()
    return results

"""Ingest files and folders: detect, parse, validate, write -- one transaction per file."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import duckdb

from analytics.db import writer
from ingest.errors import IngestError, ProblemCollector
from ingest.formats import FORMATS, Format, detect_format, parse_with, walk_suffixes
from ingest.records import Normaliser
from ingest.writer import find_ingested, load_known, write_bundle

PROGRESS_MIN_BYTES = 8 * 1024 * 1024  # show a progress bar for files at least this large
MAX_FILE_BYTES = int(os.environ.get("RUNLENS_MAX_FILE_BYTES", 512 * 1024**2))  # checked before reading


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


def iter_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named, and files with a readable suffix found recursively in folders named."""
    suffixes = walk_suffixes()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                if found.is_file() and found.name.lower().endswith(suffixes):
                    yield found
        else:
            yield path


def _content_hash(data: bytes, fmt: Format, options: dict[str, Any]) -> str:
    digest = hashlib.sha256(data)
    digest.update(b"\0" + fmt.name.encode() + b"\0" + json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _progress_bar(size: int, name: str, enabled: bool) -> Any:
    if not enabled or size < PROGRESS_MIN_BYTES:
        return None
    from tqdm import tqdm

    return tqdm(total=size, unit="B", unit_scale=True, desc=Path(name).name, file=sys.stderr, leave=False)


def ingest_file(con: duckdb.DuckDBPyConnection, path: Path, *, fmt: str = "auto", is_demo: bool = False,
                progress: bool = False, **options: Any) -> FileResult:
    """Validate one file completely, then write it in one transaction (or nothing at all).

    Raises:
        IngestError: the file is unreadable or invalid; every problem found is listed.
    """
    started = time.perf_counter()
    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise IngestError.single(f"{name}:1", "-", f"file of {size:,} bytes exceeds the {MAX_FILE_BYTES:,}-byte limit")
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError.single(f"{name}:1", "-", f"cannot read file: {exc.strerror or exc}") from exc
    if not data.strip():
        raise IngestError.single(f"{name}:1", "-", "empty file: nothing to ingest")
    chosen = _choose_format(path, data, fmt)
    content_hash = _content_hash(data, chosen, {**options, **chosen.fingerprint(path, data, options)}
                                 if chosen.fingerprint is not None else options)
    previous = find_ingested(con, content_hash)
    if previous is not None:
        return FileResult(name, chosen.name, "duplicate", duplicate_of=previous,
                          seconds=time.perf_counter() - started)
    problems = ProblemCollector()
    bar = _progress_bar(len(data), name, progress)
    try:
        records = parse_with(chosen, path, data, problems, bar, **options)
        bundle = Normaliser(load_known(con), problems).feed(records)
    finally:
        if bar is not None:
            bar.close()
    problems.raise_if_any()
    seconds = time.perf_counter() - started
    file_id = write_bundle(con, bundle, path=name, content_hash=content_hash, fmt=chosen.name, is_demo=is_demo,
                           started_at=started_at, seconds=seconds)
    if bundle.n_attempts:
        from analytics.rules import label_file_attempts  # derived labels, in their own transaction

        label_file_attempts(con, file_id=file_id)
    return FileResult(name, chosen.name, "ingested", len(bundle.runs["run_id"]), len(bundle.tasks["task_id"]),
                      bundle.n_attempts, bundle.n_steps, time.perf_counter() - started)


def _choose_format(path: Path, data: bytes, fmt: str) -> Format:
    if fmt != "auto":
        if fmt not in FORMATS:
            raise IngestError.single(f"{path}:1", "--format", f"unknown format {fmt!r}; one of auto, {', '.join(FORMATS)}")
        return FORMATS[fmt]
    found = detect_format(path, data[:65536])
    if found is None:
        raise IngestError.single(f"{path}:1", "-", f"format not recognised; pass --format (one of {', '.join(FORMATS)})")
    return found


def ingest_paths(paths: Iterable[str | os.PathLike[str]], *, db: str | os.PathLike[str] | None = None,
                 fmt: str = "auto", is_demo: bool = False, progress: bool = False, out: TextIO | None = None,
                 **options: Any) -> list[FileResult]:
    """Ingest every file under ``paths``; a bad file is reported and skipped, the others still go in.

    Args:
        paths: files or folders (walked recursively).
        db: database path (see ``analytics.db.resolve_db_path``).
        fmt: a format name or ``auto``.
        is_demo: mark the data as demo data.
        progress: show progress bars on large files.
        out: where to print one line per file (None: silent).
        **options: format-specific options (for example ``mapping`` for CSV).
    """
    results: list[FileResult] = []
    files = list(iter_files(paths))
    with writer(db) as con:
        for path in files:
            try:
                result = ingest_file(con, path, fmt=fmt, is_demo=is_demo, progress=progress, **options)
            except IngestError as exc:
                result = FileResult(str(path), fmt, "failed", error=exc)
            results.append(result)
            if out is not None:
                print(describe(result), file=out)
    return results


def describe(result: FileResult) -> str:
    """One line (or the error lines) for a file's outcome."""
    if result.outcome == "duplicate":
        return f"{result.path}: already ingested (identical content as {result.duplicate_of}); nothing added"
    if result.outcome == "failed":
        return f"{result.error}\n{result.path}: not ingested; nothing written"
    return (f"{result.path}: ingested as {result.format}: {result.n_runs} runs, {result.n_tasks} tasks, "
            f"{result.n_attempts} attempts, {result.n_steps} steps in {result.seconds:.2f} s")

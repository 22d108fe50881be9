"""Archives of logs (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``): every member whose
name has a suffix some format reads is ingested as a file of its own, named ``archive!member``, in archive order.

Nothing is extracted, and the archive is never held or copied whole: members are read as they are decompressed
(``tarfile`` in stream mode, ``zipfile``'s member streams), one at a time, and each goes through the per-file
ingest of ``ingest.pipeline``: validated completely, then written in one transaction, idempotent by the content
hash of the member's bytes (the hash the member has as a plain file: ingesting it again, inside an archive or out
of one, adds nothing). A native JSON Lines member is validated part by part as it streams (``ingest.chunked``),
so like a plain file it may be of any size: the limit is on one record (``RUNLENS_MAX_RECORD_BYTES``), refused at
``archive!member:line``. A member in a format read whole (Inspect, CSV, OTLP, ...) is read into memory, refused
beyond half the memory available, as a plain file of that format is.

Members are validated in the writing process, one after another (a stream cannot be handed to workers without
copying it); other files of the same ingest are still validated by workers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from ingest import pipeline
from ingest.chunked import validate_in_parts
from ingest.errors import IngestError
from ingest.formats import walk_suffixes
from ingest.jsonline import Readable
from ingest.pipeline import (
    FileResult,
    Prepared,
    _duplicate,
    _memory_available,
    choose_format,
    commit_fresh,
    out_of_memory,
    prepare_file,
)
from ingest.records import Known
from ingest.tempdirs import ON_DISK, SpillPlaces

HEAD_BYTES = 65536  # what format detection reads
BLOCK = 1024 * 1024
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def iter_members(path: Path) -> Iterator[tuple[str, Readable]]:
    """``(location name, stream)`` of every member to ingest, in archive order; read each stream before asking
    for the next (a tar is read in one pass). A member that cannot be read at all is yielded with its error as
    the stream's ``IngestError`` on first read.

    Raises:
        IngestError: the archive is unreadable (at ``archive:1``).
    """
    suffixes = walk_suffixes()
    name = str(path)
    try:
        if name.lower().endswith(TAR_SUFFIXES):
            with tarfile.open(path, mode="r|*") as tar:
                for info in tar:
                    if info.isfile() and info.name.lower().endswith(suffixes):
                        stream = tar.extractfile(info)
                        if stream is not None:
                            yield f"{name}!{info.name}", _Guarded(f"{name}!{info.name}", stream)
            return
        with zipfile.ZipFile(path) as archive:
            for zinfo in archive.infolist():
                if zinfo.is_dir() or not zinfo.filename.lower().endswith(suffixes):
                    continue
                loc = f"{name}!{zinfo.filename}"
                if zinfo.flag_bits & 0x1:
                    yield loc, _Refused(loc, "encrypted member; cannot read")
                elif zinfo.compress_type not in ZIP_METHODS:
                    yield (
                        loc,
                        _Refused(
                            loc,
                            f"cannot decompress member: compression method {zinfo.compress_type} is not one of stored, "
                            "deflate, bzip2, lzma; repack the archive with deflate",
                        ),
                    )
                else:
                    with archive.open(zinfo) as stream:
                        yield loc, _Guarded(loc, stream)
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise IngestError.single(f"{name}:1", "-", f"cannot read archive: {exc}") from exc


class _Guarded:
    """A member's stream whose decompression errors (a damaged archive, a CRC mismatch) are refusals at the
    member."""

    def __init__(self, loc: str, stream: Readable) -> None:
        self.loc = loc
        self.stream = stream

    def read(self, n: int = -1) -> bytes:
        try:
            return self.stream.read(n)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise IngestError.single(f"{self.loc}:1", "-", f"cannot read archive member: {exc}") from exc


class _Refused:
    """The stream of a member that cannot be read: refused with the reason on first read."""

    def __init__(self, loc: str, reason: str) -> None:
        self.loc = loc
        self.reason = reason

    def read(self, n: int = -1) -> bytes:
        raise IngestError.single(f"{self.loc}:1", "-", self.reason)


class _Hashing:
    """The rest of a stream after its head, hashed as it is read (the content hash of a plain file of the same
    bytes, ``ingest.chunked.stream_hash``), noting whether it was all blank space."""

    def __init__(self, head: bytes, stream: Readable) -> None:
        self.head = head
        self.stream = stream
        self.digest = hashlib.sha256(head)
        self.blank = head.isspace() or not head

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if 0 <= n < len(self.head):
                block, self.head = self.head[:n], self.head[n:]
                return block
            block, self.head = self.head, b""
            more = self.stream.read(-1 if n < 0 else n - len(block)) if n != len(block) else b""
            self._seen(more)
            return block + more
        block = self.stream.read(n)
        self._seen(block)
        return block

    def _seen(self, block: bytes) -> None:
        if block:
            self.digest.update(block)
            self.blank = self.blank and block.isspace()

    def drained(self) -> bool:
        """Read the rest (for the hash); False when it cannot be read."""
        try:
            while self.read(BLOCK):
                pass
        except IngestError:
            return False
        return not self.blank

    def content_hash(self, fmt_name: str, options: dict[str, Any]) -> str:
        self.digest.update(
            b"\0" + fmt_name.encode() + b"\0" + json.dumps(options, sort_keys=True, default=str).encode()
        )
        return self.digest.hexdigest()


def _read_head(stream: Readable) -> bytes:
    head = b""
    while len(head) < HEAD_BYTES and (block := stream.read(HEAD_BYTES - len(head))):
        head += block
    return head


def _read_whole(loc: str, head: bytes, stream: Readable) -> bytes:
    """A member of a format read whole: its bytes, refused beyond half the memory available (as ``read_input``)."""
    room = _memory_available()
    parts = [head]
    size = len(head)
    while block := stream.read(BLOCK):
        size += len(block)
        if room is not None and size > room // 2:
            raise IngestError.single(
                f"{loc}:1",
                "-",
                f"member of over {size:,} bytes is over half the memory available ({room:,} bytes) and its format "
                "is read whole (native JSON Lines are read in parts); split it, or ingest it on a machine with "
                "more memory",
            )
        parts.append(block)
    data = b"".join(parts)
    if not data or data.isspace():
        raise IngestError.single(f"{loc}:1", "-", "empty file: nothing to ingest")
    return data


def prepare_member(
    loc: str,
    stream: Readable,
    known: Known,
    *,
    fmt: str,
    places: SpillPlaces,
    options: dict[str, Any],
) -> tuple[Prepared, bytes | None]:
    """``prepare_file`` of an archive's member read from its stream (once); ``known`` and ``places`` as there.
    With it, the bytes of an OTLP member (read whole), which a merge with stored traces reads again
    (``ingest.otlp.filemerge``)."""
    started = time.perf_counter()
    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    path = Path(loc)
    try:
        head = _read_head(stream)
        if len(head) < HEAD_BYTES and head.isspace() or not head:
            raise IngestError.single(f"{loc}:1", "-", "empty file: nothing to ingest")
        chosen = choose_format(path, head, fmt)
        if chosen.chunks is None or chosen.fingerprint is not None or chosen.canonical is not None:
            data = _read_whole(loc, head, stream)
            prepared = prepare_file(path, known, fmt=chosen.name, data=data, **options)
            return prepared, data if prepared.format == "otlp" else None
        reader = _Hashing(head, stream)
        try:
            bundle, warnings = validate_in_parts(path, known, chosen, None, pipeline.CHUNK_BYTES, places, stream=reader)
        except IngestError:
            # content already ingested is a duplicate, never a failure (a plain file's hash is checked before it
            # is validated; a stream's is known once it is read to its end)
            if reader.drained() and (content_hash := reader.content_hash(chosen.name, options)) in known.hashes:
                return _duplicate(loc, chosen.name, started, started_at, content_hash, known), None
            raise
        content_hash = reader.content_hash(chosen.name, options)
        if reader.blank or content_hash in known.hashes:
            bundle.release()
            if reader.blank:
                raise IngestError.single(f"{loc}:1", "-", "empty file: nothing to ingest")
            return _duplicate(loc, chosen.name, started, started_at, content_hash, known), None
    except IngestError as exc:
        return Prepared(loc, fmt, started_at, error=exc, seconds=time.perf_counter() - started), None
    except MemoryError:
        return Prepared(loc, fmt, started_at, error=out_of_memory(loc), seconds=time.perf_counter() - started), None
    prepared = Prepared(
        loc, chosen.name, started_at, content_hash, bundle, seconds=time.perf_counter() - started, warnings=warnings
    )
    return prepared, None


def ingest_archive(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    known: Known,
    *,
    fmt: str = "auto",
    is_demo: bool = False,
    places: SpillPlaces = ON_DISK,
    **options: Any,
) -> Iterator[FileResult]:
    """Ingest an archive's members one after another, each in its own transaction; one result per member (a bad
    member is reported and skipped, the others still go in), or one failed result for an unreadable archive or
    one with no member to read. ``known`` is kept up to date; a member's parts wait in ``places`` as
    ``prepare_file``'s do."""
    n_members = 0
    try:
        for loc, stream in iter_members(path):
            n_members += 1
            prepared, data = prepare_member(loc, stream, known.copy(), fmt=fmt, places=places, options=options)
            try:
                merged = None
                if data is not None:  # an OTLP member naming stored traces: merged with them, as a file is
                    from ingest.otlp.filemerge import merge_file

                    merged = merge_file(con, prepared, known, is_demo=is_demo, options=options, data=data)
                    del data
                result = merged or commit_fresh(con, prepared, known, is_demo=is_demo)
            except IngestError as exc:
                result = FileResult(loc, fmt, "failed", error=exc)
            except MemoryError:  # while writing: the transaction rolled back, the next member goes on
                result = FileResult(loc, fmt, "failed", error=out_of_memory(loc))
            yield result
    except IngestError as exc:
        yield FileResult(str(path), fmt, "failed", error=exc)
        return
    if n_members == 0:
        reason = f"no member with a suffix a format reads ({', '.join(walk_suffixes())}); nothing to ingest"
        yield FileResult(str(path), fmt, "failed", error=IngestError.single(f"{path}:1", "-", reason))

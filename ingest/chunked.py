"""A large file read from disk in parts: hashed in blocks, validated part by part, each validated part kept on
disk until the writer takes it (``ingest.pipeline`` decides which files go this way: ``CHUNK_BYTES``).

The outcome is that of the file read whole: the same content hash, the same problems at the same ``file:line``,
the same rows. Memory follows the part, not the file.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from pathlib import Path
from typing import Any

from ingest.errors import IngestError, ProblemCollector
from ingest.formats import Format
from ingest.jsonline import Readable
from ingest.records import Bundle, Known, Normaliser
from ingest.tempdirs import SpillPlaces


def stream_hash(path: Path, fmt: Format, options: dict[str, Any]) -> str:
    """The content hash of ``ingest.pipeline`` (SHA-256 of the bytes, then the format and options) of a file
    read in blocks, for formats with no canonical form or fingerprint; a file of nothing but blank space is
    refused as empty."""
    digest = hashlib.sha256()
    blank = True
    try:
        with open(path, "rb") as fh:
            while block := fh.read(8 * 1024 * 1024):
                digest.update(block)
                blank = blank and block.isspace()
    except OSError as exc:
        raise IngestError.single(f"{path}:1", "-", f"cannot read file: {exc.strerror or exc}") from exc
    if blank:
        raise IngestError.single(f"{path}:1", "-", "empty file: nothing to ingest")
    digest.update(b"\0" + fmt.name.encode() + b"\0" + json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def read_head(path: Path) -> bytes:
    """The first 64 KiB of a file, what format detection reads."""
    try:
        with open(path, "rb") as fh:
            return fh.read(65536)
    except OSError as exc:
        raise IngestError.single(f"{path}:1", "-", f"cannot read file: {exc.strerror or exc}") from exc


def validate_in_parts(
    path: Path,
    known: Known,
    fmt: Format,
    progress: Any,
    chunk_bytes: int,
    places: SpillPlaces,
    stream: Readable | None = None,
) -> tuple[Bundle, tuple[str, ...]]:
    """Validate a file part by part with one normaliser (definitions, duplicate attempts and every cross-record
    check span the parts); each valid part's rows wait for the writer in ``places`` (``SpillPlaces.spill``: the
    memory folder while the part fits there, else disk). Once a problem is found nothing more is kept, but reading
    goes on so that every problem is reported. With ``stream`` (an archive's member as it is decompressed), that is
    read once from start to end, ``path`` naming it.

    Returns:
        The bundle (the caller writes it from its parts, then calls ``release``) and the reader's warnings.

    Raises:
        IngestError: every problem of the file; nothing of it is left on disk.
    """
    assert fmt.chunks is not None
    problems = ProblemCollector()
    normaliser = Normaliser(known, problems, revises_scores=fmt.revises_scores)
    bundle = normaliser.bundle
    collecting = gc.isenabled()
    gc.disable()  # millions of new, acyclic rows (see ingest.pipeline.prepare_file)
    try:
        with contextlib.ExitStack() as stack:
            if stream is None:
                try:
                    stream = stack.enter_context(open(path, "rb"))
                except OSError as exc:
                    raise IngestError.single(f"{path}:1", "-", f"cannot read file: {exc.strerror or exc}") from exc
            for part in fmt.chunks(str(path), stream, problems, progress, chunk_bytes):
                normaliser.feed_part(part)
                if problems:
                    bundle.drop_rows()  # nothing will be written: read on only to report every problem
                else:
                    try:
                        places.spill(bundle)
                    except OSError as exc:  # a full disk: refused with the reason, nothing written
                        raise IngestError.single(
                            f"{path}:1",
                            "-",
                            f"cannot keep the validated parts of this large file on disk ({exc.strerror or exc}); "
                            "free space in the temporary folder (TMPDIR) or raise RUNLENS_INGEST_CHUNK_MB",
                        ) from exc
        normaliser.finish()
        problems.raise_if_any()
        bundle.freeze()
    except BaseException:
        bundle.release()
        raise
    finally:
        if collecting:
            gc.enable()
    return bundle, tuple(problems.warnings)

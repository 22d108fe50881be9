"""Reading zip archives (Inspect's ``.eval``) in memory with archive-bomb limits, for deflate and zstd alike.

Limits are checked twice: first from the central directory, before a byte is decompressed (member count,
declared total size, declared per-member size and compression ratio), then again while each member streams
out, because declared sizes can lie: a member that yields more than it declared, or an archive whose members
together pass the total or the ratio limit, is refused the moment it does. The CLI and uploads both come
through here, so both get the same limits.

Compression methods: stored (0) and deflate (8) are decompressed here from the raw member bytes, zstd (93,
what current inspect-ai writes for every member) with the ``zstandard`` package; anything else ``zipfile``
supports (bzip2, lzma) goes through ``zipfile`` under the same streaming caps.
"""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator

import zstandard

from ingest.errors import ProblemCollector

MAX_MEMBERS = int(os.environ.get("RUNLENS_ZIP_MAX_MEMBERS", 200_000))
MAX_MEMBER_BYTES = int(os.environ.get("RUNLENS_ZIP_MAX_MEMBER_BYTES", 512 * 1024**2))
MAX_TOTAL_BYTES = int(os.environ.get("RUNLENS_ZIP_MAX_TOTAL_BYTES", 2 * 1024**3))
MAX_RATIO = float(os.environ.get("RUNLENS_ZIP_MAX_RATIO", 500))  # JSON compresses ~10-50x; bombs ~1000x
RATIO_MIN_BYTES = 1024 * 1024  # small members may compress extremely well without harm
CHUNK = 1024 * 1024
METHOD_STORED, METHOD_DEFLATE, METHOD_ZSTD = 0, 8, 93
LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # the 30 fixed bytes of a zip local file header
METHOD_NAMES = {0: "stored", 8: "deflate", 12: "bzip2", 14: "lzma", 93: "zstd"}


class ZipRefused(Exception):
    """An archive or member refused, with the location (``file`` or ``file!member``) and the reason."""

    def __init__(self, loc: str, reason: str) -> None:
        super().__init__(reason)
        self.loc = loc
        self.reason = reason


def unsafe_name(name: str) -> bool:
    """True for member names that are absolute or climb out of the archive (``..``)."""
    parts = name.replace("\\", "/").split("/")
    return name.startswith(("/", "\\")) or ".." in parts or bool(re.match(r"^[A-Za-z]:", name))


def read_zip(
    path: os.PathLike[str] | str,
    data: bytes,
    problems: ProblemCollector,
    *,
    wanted: Callable[[str], bool] = lambda name: name.endswith(".json"),
) -> dict[str, bytes] | None:
    """Every wanted member of a zip, after the bomb checks; None (with a problem added) when refused.

    Args:
        path: the archive's path, for locations.
        data: the archive's bytes.
        problems: where the refusal is reported (one problem, located at the archive or the member).
        wanted: which member names to decompress (others are counted in the limits but not read).
    """
    try:
        return dict(_members(str(path), data, wanted))
    except ZipRefused as exc:
        problems.add(exc.loc, "-", exc.reason)
        return None


def _members(path: str, data: bytes, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise ZipRefused(f"{path}:1", f"not a readable zip archive: {exc}") from exc
    chosen = _check_directory(path, len(data), infos, wanted)
    budget = _Budget(path, len(data))
    for info in chosen:
        yield info.filename, _read_member(archive, data, info, budget, f"{path}!{info.filename}")


def _check_directory(
    path: str, archive_bytes: int, infos: list[zipfile.ZipInfo], wanted: Callable[[str], bool]
) -> list[zipfile.ZipInfo]:
    """The members to read, after every limit that the central directory alone can check."""
    if len(infos) > MAX_MEMBERS:
        raise ZipRefused(f"{path}:1", f"{len(infos):,} members exceed the limit of {MAX_MEMBERS:,}; archive refused")
    bad = [i.filename for i in infos if unsafe_name(i.filename)]
    if bad:
        raise ZipRefused(f"{path}!{bad[0]}", f"unsafe member name (absolute or '..'): {len(bad)} such member(s)")
    declared = sum(i.file_size for i in infos)
    if declared > MAX_TOTAL_BYTES or declared > MAX_RATIO * archive_bytes + RATIO_MIN_BYTES:
        raise ZipRefused(
            f"{path}:1",
            f"{len(infos):,} members declare {declared:,} bytes from a {archive_bytes:,}-byte archive "
            f"(limits {MAX_TOTAL_BYTES:,} bytes, ratio {MAX_RATIO:g}); looks like a zip bomb, refused",
        )
    chosen = [i for i in infos if not i.is_dir() and wanted(i.filename)]
    for info in chosen:
        loc = f"{path}!{info.filename}"
        if info.flag_bits & 0x1:
            raise ZipRefused(loc, "encrypted member; cannot read")
        if info.compress_type not in METHOD_NAMES:
            raise ZipRefused(loc, f"cannot decompress member: unsupported compression method {info.compress_type}")
        if info.file_size > MAX_MEMBER_BYTES or (
            info.file_size > RATIO_MIN_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1)
        ):
            raise ZipRefused(
                loc,
                f"member expands to {info.file_size:,} bytes from {info.compress_size:,} "
                f"(limit {MAX_MEMBER_BYTES:,} bytes, ratio {MAX_RATIO:g}); looks like a zip bomb, refused",
            )
    return chosen


class _Budget:
    """What the archive may still produce in all: the total cap and the whole archive's ratio."""

    def __init__(self, path: str, archive_bytes: int) -> None:
        self.path = path
        self.left = min(MAX_TOTAL_BYTES, int(MAX_RATIO * archive_bytes) + RATIO_MIN_BYTES)

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ZipRefused(
                f"{self.path}:1", "members expand beyond the archive's total size or ratio limit; zip bomb refused"
            )


def _read_member(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo, budget: _Budget, loc: str) -> bytes:
    """A member's bytes, stopping as soon as it yields more than it declared or the budget allows."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in _decompressed(archive, data, info):
            size += len(chunk)
            if size > info.file_size or size > MAX_MEMBER_BYTES:
                raise ZipRefused(
                    loc, f"member expands beyond its declared size of {info.file_size:,} bytes; zip bomb refused"
                )
            budget.take(len(chunk))
            chunks.append(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlib.error) as exc:
        raise ZipRefused(loc, f"cannot decompress member: {exc}") from exc
    except zstandard.ZstdError as exc:
        raise ZipRefused(loc, f"cannot decompress zstd member: {exc}") from exc
    body = b"".join(chunks)
    if size != info.file_size or zlib.crc32(body) != info.CRC:
        raise ZipRefused(loc, f"member is damaged: {size:,} bytes (declared {info.file_size:,}) or a CRC mismatch")
    return body


def _decompressed(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """Chunks of a member's content, decompressed lazily so a bomb is caught before it is in memory."""
    if info.compress_type not in (METHOD_STORED, METHOD_DEFLATE, METHOD_ZSTD):
        with archive.open(info) as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
        return
    raw = _raw_member(data, info)
    if info.compress_type == METHOD_STORED:
        for start in range(0, len(raw), CHUNK):
            yield raw[start : start + CHUNK]
    elif info.compress_type == METHOD_DEFLATE:
        inflater = zlib.decompressobj(-15)
        for start in range(0, len(raw), CHUNK):
            piece = inflater.decompress(raw[start : start + CHUNK], CHUNK)
            yield piece
            while inflater.unconsumed_tail:
                yield inflater.decompress(inflater.unconsumed_tail, CHUNK)
        yield inflater.flush()
    else:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
        while chunk := reader.read(CHUNK):
            yield chunk


def _raw_member(data: bytes, info: zipfile.ZipInfo) -> bytes:
    """A member's compressed bytes, located through its local file header."""
    start = info.header_offset
    fields = LOCAL_HEADER.unpack_from(data, start) if start + LOCAL_HEADER.size <= len(data) else None
    if fields is None or fields[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    begin = start + LOCAL_HEADER.size + fields[9] + fields[10]
    raw = data[begin : begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise zipfile.BadZipFile("member data runs past the end of the archive")
    return raw

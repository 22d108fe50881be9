"""Reading zip archives (Inspect's ``.eval``) one member at a time within a byte budget, for deflate and zstd alike.

The budget is in bytes decompressed, counted across the whole archive: an archive may expand to at most what the
Inspect reader can hold (``MAX_TOTAL_BYTES``, 512 MiB by default, or ``RUNLENS_MAX_FILE_BYTES`` when a deployment
sets that: the reader keeps the rows of every sample until the file is written, unlike the native reader, which
reads a file of any size in parts), and no member beyond
``MAX_MEMBER_BYTES``. It is checked twice: first from the central directory, before a byte is decompressed
(member count, declared sizes), then again while each member streams out, because declared sizes can lie: a
member that yields more than it declared, or an archive whose members together pass the total, is refused the
moment it does. There is no compression-ratio limit: a looping model's 250 KB of repeated output compresses
666:1 and is a legitimate log; what costs memory is the bytes that come out, and those are what is counted.

Members are yielded one at a time (``iter_members``), so a reader that parses each as it comes holds one member's
bytes at most, never the archive's expansion; the compressed bytes are read through a view of the archive, never
copied. The CLI and uploads both come through here, so both get the same limits.

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

MAX_MEMBERS = int(os.environ.get("RUNLENS_ZIP_MAX_MEMBERS", 200_000))
# what the Inspect reader may hold in all (it keeps every sample's rows until the file is written); a deployment's
# RUNLENS_MAX_FILE_BYTES when set
MAX_TOTAL_BYTES = int(
    os.environ.get("RUNLENS_ZIP_MAX_TOTAL_BYTES", os.environ.get("RUNLENS_MAX_FILE_BYTES", 512 * 1024**2))
)
MAX_MEMBER_BYTES = int(os.environ.get("RUNLENS_ZIP_MAX_MEMBER_BYTES", MAX_TOTAL_BYTES))
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


def iter_members(
    path: os.PathLike[str] | str,
    data: bytes,
    *,
    wanted: Callable[[str], bool] = lambda name: name.endswith(".json"),
) -> Iterator[tuple[str, bytearray]]:
    """``(name, content)`` of every wanted member, in archive order, one at a time, within the byte budget.

    Args:
        path: the archive's path, for locations.
        data: the archive's bytes (read through a view: compressed members are not copied).
        wanted: which member names to decompress (the others are neither read nor counted).

    Raises:
        ZipRefused: the archive is unreadable, or a member or the whole would pass a limit (located at the
            archive, ``file:1``, or at the member, ``file!member``). Members yielded before stay valid.
    """
    name = str(path)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise ZipRefused(f"{name}:1", f"not a readable zip archive: {exc}") from exc
    chosen = _check_directory(name, infos, wanted)
    budget = _Budget(name)
    view = memoryview(data)
    for info in chosen:
        yield info.filename, _read_member(archive, view, info, budget, f"{name}!{info.filename}")


def member_names(path: os.PathLike[str] | str, data: bytes) -> list[str]:
    """The names in an archive's central directory (nothing decompressed).

    Raises:
        ZipRefused: not a readable zip archive.
    """
    try:
        return zipfile.ZipFile(io.BytesIO(data)).namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise ZipRefused(f"{path}:1", f"not a readable zip archive: {exc}") from exc


def _mib(n: int) -> str:
    return f"{n / 1024**2:,.0f} MiB"


def _check_directory(path: str, infos: list[zipfile.ZipInfo], wanted: Callable[[str], bool]) -> list[zipfile.ZipInfo]:
    """The members to read, after every limit that the central directory alone can check."""
    if len(infos) > MAX_MEMBERS:
        raise ZipRefused(f"{path}:1", f"{len(infos):,} members exceed the limit of {MAX_MEMBERS:,}; archive refused")
    bad = [i.filename for i in infos if unsafe_name(i.filename)]
    if bad:
        raise ZipRefused(f"{path}!{bad[0]}", f"unsafe member name (absolute or '..'): {len(bad)} such member(s)")
    chosen = [i for i in infos if not i.is_dir() and wanted(i.filename)]
    declared = sum(i.file_size for i in chosen)
    if declared > MAX_TOTAL_BYTES:
        raise ZipRefused(
            f"{path}:1",
            f"{len(chosen):,} members declare {declared:,} bytes decompressed, more than the "
            f"{_mib(MAX_TOTAL_BYTES)} an archive may expand to; archive refused (RUNLENS_ZIP_MAX_TOTAL_BYTES)",
        )
    for info in chosen:
        loc = f"{path}!{info.filename}"
        if info.flag_bits & 0x1:
            raise ZipRefused(loc, "encrypted member; cannot read")
        if info.compress_type not in METHOD_NAMES:
            raise ZipRefused(loc, f"cannot decompress member: unsupported compression method {info.compress_type}")
        if info.file_size > MAX_MEMBER_BYTES:
            raise ZipRefused(
                loc,
                f"member declares {info.file_size:,} bytes decompressed, more than the {_mib(MAX_MEMBER_BYTES)} "
                "a member may hold; archive refused (RUNLENS_ZIP_MAX_MEMBER_BYTES)",
            )
    return chosen


class _Budget:
    """What the archive may still produce in all: decompressed bytes, counted as they come out."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.left = MAX_TOTAL_BYTES

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ZipRefused(
                f"{self.path}:1",
                f"members expand to more than the {_mib(MAX_TOTAL_BYTES)} an archive may hold in all (their "
                "headers declared less); archive refused",
            )


def _read_member(
    archive: zipfile.ZipFile, data: memoryview, info: zipfile.ZipInfo, budget: _Budget, loc: str
) -> bytearray:
    """A member's bytes, stopping as soon as it yields more than it declared or the budget allows."""
    body = bytearray()
    crc = 0
    try:
        for chunk in _decompressed(archive, data, info):
            if len(body) + len(chunk) > info.file_size:
                raise ZipRefused(
                    loc, f"member expands beyond its declared size of {info.file_size:,} bytes; archive refused"
                )
            budget.take(len(chunk))
            body += chunk
            crc = zlib.crc32(chunk, crc)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlib.error) as exc:
        raise ZipRefused(loc, f"cannot decompress member: {exc}") from exc
    except zstandard.ZstdError as exc:
        raise ZipRefused(loc, f"cannot decompress zstd member: {exc}") from exc
    if len(body) != info.file_size or crc != info.CRC:
        raise ZipRefused(loc, f"member is damaged: {len(body):,} bytes (declared {info.file_size:,}) or a CRC mismatch")
    return body


def _decompressed(archive: zipfile.ZipFile, data: memoryview, info: zipfile.ZipInfo) -> Iterator[bytes | memoryview]:
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
            yield inflater.decompress(raw[start : start + CHUNK], CHUNK)
            while inflater.unconsumed_tail:
                yield inflater.decompress(inflater.unconsumed_tail, CHUNK)
        yield inflater.flush()
    else:
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        while chunk := reader.read(CHUNK):
            yield chunk


def _raw_member(data: memoryview, info: zipfile.ZipInfo) -> memoryview:
    """A member's compressed bytes (a view into the archive), located through its local file header."""
    start = info.header_offset
    fields = LOCAL_HEADER.unpack_from(data, start) if start + LOCAL_HEADER.size <= len(data) else None
    if fields is None or fields[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    begin = start + LOCAL_HEADER.size + fields[9] + fields[10]
    raw = data[begin : begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise zipfile.BadZipFile("member data runs past the end of the archive")
    return raw

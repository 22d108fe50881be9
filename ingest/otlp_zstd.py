"""OTLP files the OpenTelemetry Collector's file exporter writes with ``compression: zstd``, decompressed.

The exporter has written two layouts over its versions: each export compressed on its own and preceded by its
compressed length (a 4-byte big-endian unsigned integer, the framing of ``format: proto``: for JSON too), and one
zstd stream holding what the uncompressed file would (JSON lines, or length-prefixed protobuf messages). Both give
back the file the exporter writes without compression (JSON lines, or 4-byte framed protobuf), so the spans' lines
(JSON) and message numbers (protobuf) are those of the exports, and the rest of the reader is unchanged.

Nothing is decompressed beyond a budget (half the memory available, as a file read whole): a zstd bomb is refused
at ``file:1`` as it expands, never held.
"""

from __future__ import annotations

from collections.abc import Iterator

MAGIC = b"\x28\xb5\x2f\xfd"  # a zstd frame's first bytes
BLOCK = 1024 * 1024


class TooLarge(ValueError):
    """Decompressing would pass the budget (``args[0]``: the budget in bytes)."""


def layout(data: bytes) -> str | None:
    """``stream`` (one zstd stream), ``framed`` (length-prefixed zstd frames), or None (not zstd)."""
    if data[:4] == MAGIC:
        return "stream"
    if len(data) >= 8 and data[4:8] == MAGIC:
        return "framed"
    return None


def _frames(data: bytes) -> Iterator[bytes]:
    """The compressed exports of a framed file, in order.

    Raises:
        ValueError: the length prefixes do not tile the file.
    """
    offset = 0
    while offset < len(data):
        size = int.from_bytes(data[offset : offset + 4], "big")
        if offset + 4 + size > len(data) or data[offset + 4 : offset + 8] != MAGIC:
            raise ValueError(f"export {offset} bytes in: a length prefix that does not frame a zstd export")
        yield data[offset + 4 : offset + 4 + size]
        offset += 4 + size


def expand(compressed: bytes, budget: int) -> bytes:
    """One zstd stream (one or more frames) decompressed within ``budget`` bytes.

    Raises:
        TooLarge: it expands past the budget.
        zstandard.ZstdError: it is not valid zstd.
    """
    import zstandard

    parts: list[bytes] = []
    size = 0
    with zstandard.ZstdDecompressor().stream_reader(compressed, read_across_frames=True) as reader:
        while block := reader.read(BLOCK):
            size += len(block)
            if size > budget:
                raise TooLarge(budget)
            parts.append(block)
    return b"".join(parts)


def decompressed(data: bytes, budget: int) -> bytes:
    """The file the exporter writes without compression (``data`` itself when it is not zstd).

    Raises:
        TooLarge: it expands past ``budget`` bytes.
        ValueError: it is zstd, but damaged or framed in a way the exporter does not write.
    """
    kind = layout(data)
    if kind is None:
        return data
    import zstandard

    try:
        if kind == "stream":
            return expand(data, budget)
        exports: list[bytes] = []
        for frame in _frames(data):
            exports.append(expand(frame, budget - sum(len(e) for e in exports)))
    except zstandard.ZstdError as exc:
        raise ValueError(f"damaged zstd data: {exc}") from exc
    if all(e.lstrip()[:1] == b"{" for e in exports):  # ``format: json``: one JSON line per export
        return b"".join(e.rstrip(b"\n") + b"\n" for e in exports)
    return b"".join(len(e).to_bytes(4, "big") + e for e in exports)


def head_of(data: bytes, n: int = 65536) -> bytes:
    """The first ``n`` bytes (at most) of the first export a zstd head holds (of the stream, or of the first framed
    export), for format detection; ``data`` itself when it is not zstd, and empty when it cannot be read."""
    kind = layout(data)
    if kind is None:
        return data
    import zstandard

    start = data if kind == "stream" else data[4 : 4 + int.from_bytes(data[:4], "big")]
    try:
        return zstandard.ZstdDecompressor().decompressobj().decompress(start)[:n]
    except zstandard.ZstdError:
        return b""

"""Reader of the native run-log format v1 (JSON Lines, see DESIGN.md)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.fastpath import TaskLine, decode_attempt
from ingest.jsonline import MAX_RECORD_BYTES, Readable, load_record, record_too_long

MAX_LINE_BYTES = MAX_RECORD_BYTES  # one record larger than this is refused, not parsed (nor copied)


def detect_native(path: Path, head: bytes) -> bool:
    """True when the file looks like native JSONL: its first non-blank line is an object with `record`."""
    for line in head.splitlines():
        if line.strip():
            try:
                first = json.loads(line)
            except ValueError:
                return b'"record"' in line
            return isinstance(first, dict) and "record" in first
    return False


def parse_native(
    path: Path, data: bytes, problems: ProblemCollector, progress: Any = None
) -> Iterator[tuple[str, Any]]:
    """Yield ``(file:line, record)`` for every line; undecodable lines become problems.

    A record is the line's JSON value, or a :class:`~ingest.fastpath.FastLine` for an attempt the fast path
    decoded (see ``Normaliser.feed``).

    Args:
        path: the file (for locations only).
        data: its bytes.
        problems: where bad lines are reported.
        progress: optional tqdm-like object updated with bytes consumed.
    """
    name = str(path)
    if not data or data.isspace():
        problems.add(f"{name}:1", "-", "empty file: expected JSON Lines records")
        return
    yield from _records(name, data, 0, problems, progress)


def parse_native_chunks(
    path: Path, problems: ProblemCollector, progress: Any, chunk_bytes: int
) -> Iterator[Iterator[tuple[str, Any]]]:
    """The file's records chunk by chunk, read from disk: each item yields the records of whole lines making at
    most ``chunk_bytes`` (or one longer line, up to a record's limit), with the same locations and problems as
    :func:`parse_native` of the whole file. Consume each chunk before asking for the next.

    Memory follows ``chunk_bytes``, not the file's size: a line over a record's limit is skipped while it is read
    (never held whole) and refused at its line.
    """
    with open(path, "rb") as fh:
        yield from parse_native_stream(str(path), fh, problems, progress, chunk_bytes)


def parse_native_stream(
    name: str, fh: Readable, problems: ProblemCollector, progress: Any, chunk_bytes: int
) -> Iterator[Iterator[tuple[str, Any]]]:
    """:func:`parse_native_chunks` of any readable stream (a file, an archive's member as it is decompressed),
    read once from start to end: nothing is sought, so ``fh`` need only have ``read``; ``name`` is the location."""
    lineno = 0  # lines before the chunk
    carry = b""  # the start of a line the last block did not end
    while True:
        block = fh.read(chunk_bytes)
        if not block:
            if carry:
                yield _records(name, carry, lineno, problems, progress)
            return
        if carry and b"\n" not in block and len(carry) + len(block) > MAX_LINE_BYTES:
            # the line goes on past a record's limit: not joined (a third copy), skipped unread
            lineno, carry = _refuse_long(name, fh, len(carry) + len(block), lineno, problems, progress, chunk_bytes)
            continue
        # The block's whole lines are read where they are, never copied into a part of their own: only the line
        # the last block left unfinished is joined to its end here (each copy of a block cost page faults: 1.3
        # CPU s, 0.9 of it in the kernel, to cut a 560 MB file into parts by copies, 0.4 s now)
        first = block.find(b"\n") if carry else 0
        if first < 0:  # a long line goes on through the whole block (within a record's limit, checked above)
            carry += block
            continue
        head = carry + block[: first + 1] if carry else b""
        start = first + 1 if carry else 0
        cut = block.rfind(b"\n")
        if cut < 0:  # no line ends in the block (and none was carried)
            if len(block) > MAX_LINE_BYTES:  # the line goes on past a record's limit: skip the rest unread
                lineno, carry = _refuse_long(name, fh, len(block), lineno, problems, progress, chunk_bytes)
            else:
                carry = block
            continue
        before, lineno = lineno, lineno + (1 if head else 0) + block.count(b"\n", start, cut + 1)
        carry = block[cut + 1 :]
        if head:
            yield itertools.chain(
                _records(name, head, before, problems, progress),
                _records(name, block, before + 1, problems, progress, start, cut + 1),
            )
        else:
            yield _records(name, block, before, problems, progress, 0, cut + 1)


def _refuse_long(
    name: str, fh: Readable, held: int, lineno: int, problems: ProblemCollector, progress: Any, block_bytes: int
) -> tuple[int, bytes]:
    """Refuse the line of which ``held`` bytes were read (over a record's limit): read on to its end without
    keeping it. Returns the line number reached and the bytes read past the line's end (the next lines' start)."""
    n_bytes = held
    rest = b""
    while block := fh.read(block_bytes):
        end = block.find(b"\n")
        if end >= 0:
            n_bytes += end
            rest = block[end + 1 :]
            break
        n_bytes += len(block)
    lineno += 1
    if progress is not None:
        progress.update(n_bytes + 1)
    problems.add(f"{name}:{lineno}", "-", record_too_long(n_bytes))
    return lineno, rest


_OPEN = ord("{")
# the start of a line of another record kind than an attempt: the fast path would refuse it at its first field
_TASK = b'{"record":"task"'
_OTHER_KIND = (b'{"record":"benchmark"', _TASK, b'{"record":"run"', b'{"record":"rating"')


def _records(
    name: str,
    data: bytes,
    lineno: int,
    problems: ProblemCollector,
    progress: Any,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[tuple[str, Any]]:
    """The records of the whole lines in ``data[start:stop]`` (read in place), the first being line ``lineno + 1``
    of file ``name``."""
    size = len(data) if stop is None else stop
    view = memoryview(data)
    while start < size:
        end = data.find(b"\n", start, size)
        if end < 0:
            end = size
        lineno += 1
        if progress is not None:
            progress.update(end + 1 - start)
        if end - start > MAX_LINE_BYTES:  # measured before the line is copied out: a 500 MB line cost 1.09 GB
            problems.add(f"{name}:{lineno}", "-", record_too_long(end - start))
            start = end + 1
            continue
        line, start = start, end + 1
        if data[line] != _OPEN and (line == end or data[line:end].isspace()):  # (an object's line starts with "{")
            continue
        if not data.startswith(_OTHER_KIND, line):  # maybe an attempt: decoded where it is in ``data`` (no copy)
            fast = decode_attempt(view[line:end])
            if fast is not None:
                yield f"{name}:{lineno}", fast
                continue
        elif data.startswith(_TASK, line):  # read by the normaliser, once for lines of the same bytes
            yield f"{name}:{lineno}", TaskLine(data[line:end])
            continue
        loc = f"{name}:{lineno}"
        record, reason = load_record(data[line:end])
        if reason is not None:
            problems.add(loc, "-", reason)
            continue
        yield loc, record

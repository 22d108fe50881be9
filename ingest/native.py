"""Reader of the native run-log format v1 (JSON Lines, see DESIGN.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.fastpath import decode_attempt
from ingest.jsonline import MAX_RECORD_BYTES, load_record, record_too_long

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
    start = 0
    lineno = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        lineno += 1
        if progress is not None:
            progress.update(end + 1 - start)
        if end - start > MAX_LINE_BYTES:  # measured before the line is copied out: a 500 MB line cost 1.09 GB
            problems.add(f"{name}:{lineno}", "-", record_too_long(end - start))
            start = end + 1
            continue
        raw = data[start:end]
        start = end + 1
        if not raw or raw.isspace():  # no copy of the line, unlike strip()
            continue
        loc = f"{name}:{lineno}"
        fast = decode_attempt(raw)
        if fast is not None:
            yield loc, fast
            continue
        record, reason = load_record(raw)
        if reason is not None:
            problems.add(loc, "-", reason)
            continue
        yield loc, record

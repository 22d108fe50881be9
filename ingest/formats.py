"""The registry of input formats. Each reader turns a file into native v1 records with locations.

To add a format, write ``detect`` and ``parse`` in a module of its own and add a ``Format`` to
``FORMATS``; detection order is the dict's order (most specific first, native last but one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.native import detect_native, parse_native

Records = Iterator[tuple[str, dict[str, Any]]]
Parser = Callable[..., Records]


@dataclass(frozen=True)
class Format:
    """An input format.

    Attributes:
        name: the ``--format`` value.
        detect: ``(path, first bytes) -> bool``; used by ``--format auto``.
        parse: ``(path, data, problems, progress, **options) -> (location, record)`` iterator.
        suffixes: file endings picked up when a folder is walked.
    """

    name: str
    detect: Callable[[Path, bytes], bool]
    parse: Parser
    suffixes: tuple[str, ...] = field(default=(".jsonl",))


FORMATS: dict[str, Format] = {
    "native": Format("native", detect_native, parse_native, (".jsonl", ".ndjson")),
}


def detect_format(path: Path, head: bytes) -> Format | None:
    """The first registered format whose detector accepts the file."""
    for fmt in FORMATS.values():
        try:
            if fmt.detect(path, head):
                return fmt
        except Exception:  # noqa: BLE001 - a detector that trips on odd input just says "not mine"
            continue
    return None


def walk_suffixes() -> tuple[str, ...]:
    """Every suffix some format reads, for walking folders."""
    return tuple(sorted({s for f in FORMATS.values() for s in f.suffixes}))


def parse_with(fmt: Format, path: Path, data: bytes, problems: ProblemCollector, progress: Any = None,
               **options: Any) -> Records:
    """Run a format's parser."""
    return fmt.parse(path, data, problems, progress, **options)

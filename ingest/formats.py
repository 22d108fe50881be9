"""The registry of input formats. Each reader turns a file into native v1 records with locations.

To add a format, write ``detect`` and ``parse`` in a module of its own and add a ``Format`` to
``FORMATS``; detection order is the dict's order (most specific first, native last but one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.csv_long import detect_csv_long, fingerprint_csv_long, parse_csv_long, swebench_format_parts
from ingest.csv_wide import detect_csv_wide, fingerprint_csv_wide, parse_csv_wide
from ingest.errors import ProblemCollector
from ingest.inspect_log import canonical_inspect, detect_inspect, parse_inspect
from ingest.jsonline import Readable
from ingest.lm_eval import detect_lm_eval, fingerprint_lm_eval, parse_lm_eval
from ingest.native import detect_native, parse_native, parse_native_stream
from ingest.openai_messages import detect_openai_messages, parse_openai_messages
from ingest.otlp import detect_otlp, fingerprint_otlp, parse_otlp

Records = Iterator[tuple[str, dict[str, Any]]]
Parser = Callable[..., Records]


def _no_options(parse: Parser) -> Parser:
    """A parser that takes no format options, tolerating options meant for other formats in a batch."""

    def wrapped(path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **_options: Any) -> Records:
        return parse(path, data, problems, progress)

    return wrapped


@dataclass(frozen=True)
class Format:
    """An input format.

    Attributes:
        name: the ``--format`` value.
        detect: ``(path, first bytes) -> bool``; used by ``--format auto``.
        parse: ``(path, data, problems, progress, **options) -> (location, record)`` iterator.
        suffixes: file endings picked up when a folder is walked.
        fingerprint: optional ``(path, data, options) -> dict`` of extra inputs (e.g. hashes of companion
            files) that enter the idempotency hash besides the file's own bytes.
        canonical: optional ``(path, data, options) -> bytes | None``: what the idempotency hash is taken of
            instead of the file's bytes, so one content in two layouts (an Inspect log as ``.eval`` and as
            ``.json``) is recognised as the same; None falls back to the bytes.
        chunks: optional ``(name, stream, problems, progress, chunk_bytes) -> iterator of record iterators``:
            the file (or an archive's member) read once from its stream in chunks of whole records (a large file
            is then validated with bounded memory, see ``ingest.pipeline``); it yields what ``parse`` yields for
            the whole file, with the same locations.
    """

    name: str
    detect: Callable[[Path, bytes], bool]
    parse: Parser
    suffixes: tuple[str, ...] = field(default=(".jsonl",))
    fingerprint: Callable[[Path, bytes, dict[str, Any]], dict[str, Any]] | None = None
    canonical: Callable[[Path, bytes, dict[str, Any]], bytes | None] | None = None
    revises_scores: bool = False  # a file may re-score a stored run (records.Normaliser)
    chunks: Callable[[str, Readable, ProblemCollector, Any, int], Iterator[Records]] | None = None


FORMATS: dict[str, Format] = {
    "inspect": Format(
        "inspect", detect_inspect, parse_inspect, (".eval", ".json"), canonical=canonical_inspect, revises_scores=True
    ),
    "openai-messages": Format("openai-messages", detect_openai_messages, parse_openai_messages, (".json",)),
    "csv": Format("csv", detect_csv_long, parse_csv_long, (".csv", ".tsv"), fingerprint=fingerprint_csv_long),
    "swebench": Format("swebench", *swebench_format_parts()[:2], (".csv",), fingerprint=swebench_format_parts()[2]),
    "csv-wide": Format("csv-wide", detect_csv_wide, parse_csv_wide, (".csv", ".tsv"), fingerprint=fingerprint_csv_wide),
    "otlp": Format(
        "otlp",
        detect_otlp,
        parse_otlp,
        (".jsonl", ".json", ".pb", ".binpb", ".otlp", ".zst"),
        fingerprint=fingerprint_otlp,
    ),
    "lm-eval": Format("lm-eval", detect_lm_eval, parse_lm_eval, (".json", ".jsonl"), fingerprint=fingerprint_lm_eval),
    "native": Format(
        "native", detect_native, _no_options(parse_native), (".jsonl", ".ndjson"), chunks=parse_native_stream
    ),
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


# Archives of logs: each member with a suffix some format reads is ingested as a file of its own
# (``ingest.archives``); an Inspect ``.eval`` is a zip too, but one log, read by its format.
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


def is_archive(path: Path | str) -> bool:
    """True for an archive of logs (by its suffix)."""
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def walk_suffixes() -> tuple[str, ...]:
    """Every suffix some format reads, for walking folders (archives of logs not included)."""
    return tuple(sorted({s for f in FORMATS.values() for s in f.suffixes}))


def parse_with(
    fmt: Format, path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any
) -> Records:
    """Run a format's parser."""
    return fmt.parse(path, data, problems, progress, **options)

"""What the commands of ``python -m analytics`` share: a registry entry (:class:`Report`), the run filter the
shared options name, one JSON document on stdout and a progress bar on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store import RunFilter


@dataclass(frozen=True)
class Report:
    """One report of ``python -m analytics``.

    Attributes:
        name: the sub-command.
        summary: one line for ``--help``.
        options: adds the report's own options to its parser.
        run: runs it; returns the exit code.
        filtered: the report honours the run filter (``--benchmark``, ``--eval-date``, ``--from``, ``--to``).
        json_help: help of ``--json`` (empty: the report has no JSON output).
        as_of: the report only reads, and can read a team store's past snapshot (``--as-of``).
    """

    name: str
    summary: str
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    filtered: bool = False
    json_help: str = "print the JSON report"
    as_of: bool = False


def no_options(parser: argparse.ArgumentParser) -> None:
    """A report with only the shared options."""


def run_filter(args: argparse.Namespace) -> RunFilter:
    """The run filter the shared options name (``--eval-date`` means both ``--from`` and ``--to``)."""
    return RunFilter(
        benchmark=getattr(args, "benchmark", None),
        date_from=args.eval_date or args.date_from,
        date_to=args.eval_date or args.date_to,
    )


def print_json(payload: Any, **kwargs: Any) -> None:
    """One JSON document on stdout (``default=str`` for dates; UTF-8 text left as is)."""
    json.dump(payload, sys.stdout, indent=1, ensure_ascii=False, **kwargs)
    sys.stdout.write("\n")


def progress_bar(desc: str, *, enabled: bool, unit: str) -> Any:
    """A tqdm bar on stderr (None when disabled)."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=0, desc=desc, unit=unit, file=sys.stderr)

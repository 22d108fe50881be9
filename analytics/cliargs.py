"""Command-line options several reports share (benchmark and evaluation-date filters)."""

from __future__ import annotations

import argparse
import datetime as dt


def add_benchmark_and_dates(parser: argparse.ArgumentParser) -> None:
    """``--benchmark``, ``--eval-date``, ``--from``, ``--to`` and ``--json``."""
    parser.add_argument("--benchmark", help="benchmark name (default: every benchmark)")
    parser.add_argument("--eval-date", type=dt.date.fromisoformat, help="only runs evaluated on this date")
    parser.add_argument("--from", dest="date_from", type=dt.date.fromisoformat, help="runs on or after this date")
    parser.add_argument("--to", dest="date_to", type=dt.date.fromisoformat, help="runs on or before this date")
    parser.add_argument("--json", action="store_true", help="print the JSON report")


def date_range(args: argparse.Namespace) -> tuple[dt.date | None, dt.date | None]:
    """(from, to) with ``--eval-date`` meaning both."""
    return (args.eval_date or args.date_from, args.eval_date or args.date_to)

"""The command line, on top of every layer: ``python -m analytics`` and ``python -m ingest`` delegate to it.

``from cli import main`` is ``python -m analytics``; its registry of reports is :data:`REPORTS`.
"""

from cli.reports import REPORTS, Report, build_parser, main, run_filter

__all__ = ["REPORTS", "Report", "build_parser", "main", "run_filter"]

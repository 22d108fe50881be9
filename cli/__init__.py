"""The command line, on top of every layer: ``python -m analytics`` and ``python -m ingest`` delegate to it.

``from cli import main`` is ``python -m analytics``; its registry of reports is :data:`REPORTS` (cli/main.py), the
analysis reports are in cli/reports.py and store administration in cli/admin.py.
"""

from cli.common import Report, run_filter
from cli.main import REPORTS, build_parser, main

__all__ = ["REPORTS", "Report", "build_parser", "main", "run_filter"]

"""``python -m analytics REPORT``: the reports of DESIGN.md on the command line.

Each report lives in its own module as ``cli(args) -> int`` plus ``add_arguments(parser)``; the registry
below maps report names to modules and is imported lazily, so one report's heavy dependencies (torch
for IRT, say) never slow the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from analytics.db import RunlensError

# report name -> module exposing add_arguments(parser) and cli(args) -> int
REPORTS: dict[str, str] = {
    "leaderboard": "analytics.leaderboard",
}


def build_parser() -> argparse.ArgumentParser:
    """One sub-command per report."""
    parser = argparse.ArgumentParser(prog="python -m analytics", description="Runlens reports over the database.")
    subs = parser.add_subparsers(dest="report", required=True, metavar="REPORT")
    for name, module in REPORTS.items():
        mod = importlib.import_module(module)
        sub = subs.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        sub.add_argument("--db", help="database path (default: $RUNLENS_DB or data/runlens.duckdb)")
        mod.add_arguments(sub)
        sub.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one report; project errors print their message and exit 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args._module.cli(args))
    except RunlensError as exc:
        print(f"python -m analytics {args.report}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``python -m analytics REPORT``: the reports of DESIGN.md on the command line.

Each report lives in its own module as ``cli(args) -> int`` plus ``add_arguments(parser)``; the registry
below maps report names to modules and is imported lazily, so one report's heavy dependencies (torch
for IRT, say) never slow the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from store import RunlensError

# report name -> module exposing add_arguments(parser) and cli(args) -> int
REPORTS: dict[str, str] = {
    "leaderboard": "analytics.leaderboard",
    "doctor": "analytics.doctor",
    "sql": "analytics.sql_sandbox",
    "coverage": "analytics.trajectory",
    "rules": "analytics.rules",
    "errors": "analytics.errors",
    "judge": "analytics.judge",
    "tmf": "analytics.tmf",
    "gem": "analytics.gem",
    "gem-metrics": "analytics.embeddings",
    "irt": "analytics.irt",
    "export-parquet": "store.export_parquet",
    "search": "analytics.search",
    "clusters": "analytics.clusters",
    "gate": "analytics.gate",
}


def build_parser(report: str | None = None) -> argparse.ArgumentParser:
    """One sub-command per report; only ``report``'s module is imported (all of them for ``--help``)."""
    parser = argparse.ArgumentParser(prog="python -m analytics", description="Runlens reports over the database.")
    subs = parser.add_subparsers(dest="report", required=True, metavar="REPORT", help=", ".join(REPORTS))
    for name, module in REPORTS.items():
        if report is not None and name != report:
            subs.add_parser(name)  # a name only: its options are parsed when it is the one asked for
            continue
        mod = importlib.import_module(module)
        summary = (mod.__doc__ or name).strip().splitlines()[0].replace("%", "%%")  # argparse %-formats help
        sub = subs.add_parser(name, help=summary)
        sub.add_argument("--db", help="database path (default: $RUNLENS_DB or data/runlens.duckdb)")
        mod.add_arguments(sub)
        sub.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one report; project errors print their message and exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in REPORTS else None).parse_args(argv)
    try:
        return int(args._module.cli(args))
    except RunlensError as exc:
        print(f"python -m analytics {args.report}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

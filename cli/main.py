"""The command line, ``python -m analytics REPORT``: one registry (:data:`REPORTS`) of every report.

Each entry names the report, says in one line what it does, declares its own options and runs it: the analysis
reports are in :mod:`cli.reports`, store administration in :mod:`cli.admin`. Options every report shares are
declared once here: ``--db``, ``--json`` and, for the reports that honour the global run filter,
``--benchmark``/``--eval-date``/``--from``/``--to`` (read back as one :class:`store.RunFilter` by
:func:`cli.common.run_filter`). ``--help`` imports nothing but the command line: a report's modules are imported
when it runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from cli.admin import (
    doctor_options,
    doctor_run,
    export_parquet_options,
    export_parquet_run,
    maintain_options,
    maintain_run,
    migrate_store_options,
    migrate_store_run,
    search_index_options,
    search_index_run,
    sql_options,
    sql_run,
)
from cli.common import Report
from cli.reports import (
    clusters_options,
    clusters_run,
    coverage_options,
    coverage_run,
    errors_options,
    errors_run,
    gate_options,
    gate_run,
    gem_metrics_options,
    gem_metrics_run,
    gem_options,
    gem_run,
    irt_options,
    irt_run,
    judge_options,
    judge_run,
    leaderboard_options,
    leaderboard_run,
    plan_options,
    plan_run,
    rules_options,
    rules_run,
    search_options,
    search_run,
    tmf_options,
    tmf_run,
)
from store import RunlensError

REPORTS: dict[str, Report] = {
    r.name: r
    for r in (
        Report("leaderboard", "Pass@k per run on shared tasks, with intervals and ranks", leaderboard_options,
               leaderboard_run, filtered=True, as_of=True),
        Report("doctor", "check the database's schema, counts and source files (exit 1 on a problem)",
               doctor_options, doctor_run, json_help="print the report as JSON"),
        Report("sql", "one read-only SQL statement through the sandbox (CSV on stdout)", sql_options, sql_run,
               json_help="print {columns, types, rows, n_rows, is_truncated, elapsed_s} instead of CSV"),
        Report("coverage", "trajectory coverage, recall and precision per run and slice", coverage_options,
               coverage_run, json_help='print {"rows": [...]} on stdout', as_of=True),
        Report("rules", "recompute rule findings from the tool graphs", rules_options, rules_run,
               json_help='print {"recomputed": {benchmark: n_findings}}'),
        Report("errors", "error distributions per run (AD-Bench Table 3 layout)", errors_options, errors_run,
               filtered=True, as_of=True),
        Report("judge", "LLM-judge the selected attempts (OpenAI-compatible endpoint)", judge_options, judge_run,
               json_help="print the job summary as JSON"),
        Report("tmf", "Tech-Market-Fit of one benchmark slice (xbench 5.2)", tmf_options, tmf_run, as_of=True),
        Report("gem", "GEM-Bench Tables 2, 3 and 6 per dataset x solution", gem_options, gem_run, as_of=True),
        Report("gem-metrics", "compute and store GEM embedding metrics (offline model)", gem_metrics_options,
               gem_metrics_run, json_help=""),
        Report("irt", "IRT abilities over time (fit and store when the data changed)", irt_options, irt_run,
               json_help="print the abilities and items as JSON"),
        Report("export-parquet", "export every table to a Parquet folder (RUNLENS_DB can point at it)",
               export_parquet_options, export_parquet_run, json_help="print the marker (tables, rows, columns) as JSON"),
        Report("search", "transcript search: phrase, words or regular expression", search_options, search_run,
               filtered=True, as_of=True),
        Report("search-index", "build or refresh transcript search's index", search_index_options, search_index_run,
               json_help="print what was done as JSON"),
        Report("clusters", "failure clusters of a benchmark (the stored clustering; computed and stored when missing)", clusters_options,
               clusters_run),
        Report("migrate-store", "copy a store into a new one (DuckDB file <-> team store), checking every table",
               migrate_store_options, migrate_store_run, json_help="print each table's rows and digests as JSON"),
        Report("maintain", "compact a team store (DuckLake) and expire snapshots older than --keep-days",
               maintain_options, maintain_run, json_help="print what was done as JSON"),
        Report("gate", "CI gate: is the candidate run significantly worse than the baseline?", gate_options,
               gate_run, json_help="print the result as JSON", as_of=True),
        Report("plan", "tasks and samples needed to detect a regression of --delta with 80% power", plan_options,
               plan_run, json_help="print the plan as JSON", as_of=True),
    )
}  # fmt: skip


def add_shared_options(parser: argparse.ArgumentParser, report: Report) -> None:
    """``--db`` for every report; ``--json`` and the run filter for those that have them."""
    parser.add_argument(
        "--db",
        help="database path, a local lake ducklake:sqlite:<catalog file> or a team store "
        "ducklake:postgres:<libpq string> (default: $RUNLENS_DB or the local lake data/runlens.lake)",
    )
    if report.filtered:
        parser.add_argument("--benchmark", help="benchmark name (default: every benchmark)")
        parser.add_argument("--eval-date", type=dt.date.fromisoformat, help="only runs evaluated on this date")
        parser.add_argument("--from", dest="date_from", type=dt.date.fromisoformat, help="runs on or after this date")
        parser.add_argument("--to", dest="date_to", type=dt.date.fromisoformat, help="runs on or before this date")
    if report.json_help:
        parser.add_argument("--json", action="store_true", help=report.json_help)
    if report.as_of:
        parser.add_argument(
            "--as-of",
            metavar="SNAPSHOT|TIME",
            help="read a team store (DuckLake) as it was: a snapshot id, or a time such as 2026-11-24T09:00 (UTC)",
        )


def build_parser(report: str | None = None) -> argparse.ArgumentParser:
    """One sub-command per report; only ``report``'s options are declared (``--help`` lists names and summaries)."""
    parser = argparse.ArgumentParser(prog="python -m analytics", description="Runlens reports over the database.")
    subs = parser.add_subparsers(dest="report", required=True, metavar="REPORT", help=", ".join(REPORTS))
    for name, rep in REPORTS.items():
        sub = subs.add_parser(name, help=rep.summary.replace("%", "%%"), description=rep.summary)
        if name != report:
            continue  # a name only: its options are declared (and its modules imported) when it is the one asked for
        add_shared_options(sub, rep)
        rep.options(sub)
        sub.set_defaults(_run=rep.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one report; the project's own errors print their message and exit 2."""
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in REPORTS else None).parse_args(argv)
    if not hasattr(args, "json"):
        args.json = False
    try:
        return int(args._run(args))
    except RunlensError as exc:
        print(f"python -m analytics {args.report}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

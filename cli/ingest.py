"""``python -m ingest``: load run logs (or the demo dataset) into the Runlens database.

``python -m ingest scores FILE.csv`` sets the scores of stored attempts after the run (:func:`scores_main`, through
``ingest.scores.apply_scores``); ``python -m ingest serve-otlp`` hands its arguments to the live OTLP receiver
(``ingest.otlp_receiver``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ingest.errors import IngestError
from ingest.formats import FORMATS
from ingest.pipeline import ingest_paths
from ingest.scores import apply_scores
from store import Location, RunlensError, resolve_db_path


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="python -m ingest",
        description="Validate and load evaluation logs into DuckDB (one transaction per file; "
        "identical content is never added twice).",
    )
    parser.add_argument("paths", nargs="*", help="files or folders (walked recursively)")
    parser.add_argument(
        "--db", help="database path or ducklake: location (default: $RUNLENS_DB or the local lake data/runlens.lake)"
    )
    parser.add_argument(
        "--format", default="auto", choices=["auto", *FORMATS], help="input format (default: auto-detect per file)"
    )
    parser.add_argument(
        "--mapping",
        help="column mapping for --format csv: a shipped name (swebench-verified, "
        "hal), a YAML file, or field=column,... (see docs/formats.md)",
    )
    for flag, what in (
        ("--agent", "agent name"),
        ("--benchmark", "benchmark name"),
        ("--run-id", "run id"),
        ("--scorer", "Inspect scorer, or lm-eval metric[,filter], whose value is the score"),
        ("--scores", "CSV of scores joined by trace_id (otlp)"),
    ):
        parser.add_argument(
            flag, help=f"{what} for adapters that cannot read it from the file (inspect, openai-messages, csv-wide)"
        )
    parser.add_argument("--demo", action="store_true", help="load the demo dataset")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--no-search-index",
        action="store_true",
        help="leave the store's search index as it is (by default, when the store has one, a process in the "
        "background adds the files' attempts to it once they are ingested; search scans what it does not cover)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes validating files while the previous one is written (default: the "
        "number of CPUs, at most 4, when there are several files of 64 MB or more in all; "
        "1: none)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; exit 0 when every file went in (or was already in), 2 when any was rejected."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve-otlp"]:  # the live OTLP receiver (docs/formats.md)
        from cli.serve_otlp import main as serve_otlp

        return serve_otlp(argv[1:])
    if argv[:1] == ["scores"]:  # scores given after the run (docs/formats.md, "Scores after the run")
        return scores_main(argv[1:])
    args = build_parser().parse_args(argv)
    if not args.paths and not args.demo:
        build_parser().print_usage(sys.stderr)
        print("python -m ingest: error: give files or folders, or --demo", file=sys.stderr)
        return 2
    started = time.perf_counter()
    db = resolve_db_path(args.db)
    try:
        if args.demo:
            from data.demo.build import load_demo

            load_demo(db, out=sys.stderr)
        options = {
            k: v
            for k, v in (
                ("mapping", args.mapping),
                ("agent", args.agent),
                ("benchmark", args.benchmark),
                ("run_id", args.run_id),
                ("scorer", args.scorer),
                ("scores", args.scores),
            )
            if v
        }
        results = ingest_paths(
            args.paths, db=db, fmt=args.format, progress=not args.no_progress, out=sys.stderr, jobs=args.jobs, **options
        )
    except RunlensError as exc:
        print(f"python -m ingest: {exc}", file=sys.stderr)
        return 2
    if args.paths and not results:  # an empty folder (or one without a log file) is a mistake, not a success
        print(f"python -m ingest: no log files found in {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    ok = [r for r in results if r.outcome == "ingested"]
    failed = [r for r in results if r.outcome == "failed"]
    dup = [r for r in results if r.outcome == "duplicate"]
    for result in ok:
        for note in result.warnings:
            print(f"warning: {note}", file=sys.stderr)
    if results:
        print(
            f"{len(results)} files: {len(ok)} ingested, {len(dup)} already present, {len(failed)} rejected; "
            f"{sum(r.n_runs for r in ok)} runs, {sum(r.n_attempts for r in ok)} attempts, "
            f"{sum(r.n_steps for r in ok)} steps in {time.perf_counter() - started:.1f} s -> {db}",
            file=sys.stderr,
        )
    if ok and not args.no_search_index:
        refresh_search_index_after(db)
    return 2 if failed else 0


def refresh_search_index_after(db: Location) -> None:
    """Start adding what was just ingested to the store's search index when it has one (``jobs.search_index``, a
    process of its own that outlives this one, under its own caps: the command returns at once); a refresh that
    cannot start leaves the ingest as it is and says so (search scans what the index does not cover)."""
    from jobs import search_index

    if not search_index.has_index(db):
        return
    try:
        pid = search_index.refresh_in_background(str(db))
    except OSError as exc:
        print(
            f"warning: the search index's refresh did not start ({exc}); search scans the new attempts until "
            "`python -m analytics search-index` adds them",
            file=sys.stderr,
        )
        return
    print(
        f"search index: adding the new attempts in the background (process {pid}); search scans them until it ends",
        file=sys.stderr,
    )


def scores_main(argv: list[str] | None = None) -> int:
    """``python -m ingest scores FILE.csv [--db PATH]``: exit 0 when every row was applied, 2 otherwise."""
    parser = argparse.ArgumentParser(
        prog="python -m ingest scores",
        description="Set the scores of stored attempts from a CSV: trace_id (or run_id, task_id, sample) and "
        "score, raw_score or passed; other numeric columns are metrics. All rows or none.",
    )
    parser.add_argument("file", help="the scores CSV")
    parser.add_argument("--db", help="database path (default: $RUNLENS_DB or data/runlens.duckdb)")
    args = parser.parse_args(argv)
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"python -m ingest scores: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    db = resolve_db_path(args.db)
    try:
        done = apply_scores(db, str(path), text, source=f"file {path.name}")
    except IngestError as exc:
        print(f"python -m ingest scores: nothing written:\n{exc}", file=sys.stderr)
        return 2
    except RunlensError as exc:
        print(f"python -m ingest scores: {exc}", file=sys.stderr)
        return 2
    print(f"{done.rows} row(s): {done.attempts} attempt(s) scored -> {db}", file=sys.stderr)
    return 0

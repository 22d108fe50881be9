"""Store administration on the command line: ``doctor``, ``sql``, ``export-parquet``, ``migrate-store``,
``maintain`` and ``search-index`` (registered in :data:`cli.main.REPORTS`).

Each command is an ``<name>_options(parser)`` and an ``<name>_run(args) -> int``; imports are lazy, inside the
functions, so ``--help`` imports nothing but the command line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from cli.common import print_json
from store import RunlensError


def search_index_options(parser: argparse.ArgumentParser) -> None:
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--rebuild", action="store_true", help="build the index anew instead of adding to it")
    how.add_argument("--drop", action="store_true", help="delete the index folder (search then scans)")


def search_index_run(args: argparse.Namespace) -> int:
    """Build, refresh or drop transcript search's index (jobs.search_index)."""
    import dataclasses

    from jobs import search_index

    if args.drop:
        dropped = search_index.drop(args.db)
        if args.json:
            print_json({"dropped": dropped})
        else:
            print("index dropped" if dropped else "no index")
        return 0
    done = search_index.refresh(args.db, rebuild=args.rebuild)
    if args.json:
        print_json(dataclasses.asdict(done))
        return 0
    print(
        f"search index {done.path}: {done.attempts_added:,} attempts added, {done.attempts_removed:,} removed; "
        f"{done.attempts_covered:,} covered ({done.attempts_not_indexable:,} without a known file are always scanned), "
        f"{done.rows:,} postings of {done.vocabulary:,} tokens in {done.segments} segment(s), "
        f"{done.text_chars:,} characters indexed now, {done.index_bytes / 1e6:,.0f} MB, {done.seconds} s"
    )
    return 0


def sql_options(parser: argparse.ArgumentParser) -> None:
    from analytics.sql_console import SandboxLimits

    parser.add_argument("query", help='one SQL statement, e.g. "SELECT * FROM v_runs"; "-" reads stdin')
    parser.add_argument("--timeout-s", type=float, default=SandboxLimits.timeout_s, help="statement timeout")
    parser.add_argument("--memory-limit", default=SandboxLimits.memory_limit, help="DuckDB memory limit")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="print at most this many rows (default: the full result, byte-capped)",
    )


def sql_run(args: argparse.Namespace) -> int:
    """CSV on stdout; refused (exit 3), failed (1) or bounded (4) with the reason on stderr."""
    from analytics import sql_console as sb

    sql = sys.stdin.read() if args.query == "-" else args.query
    limits = sb.SandboxLimits(
        timeout_s=args.timeout_s, memory_limit=args.memory_limit, max_rows=args.max_rows or sb.SandboxLimits.max_rows
    )
    try:
        if args.json or args.max_rows:
            result = sb.run_query(sql, db=args.db, limits=limits)
            if args.json:
                print(json.dumps(sb.result_json(result), default=str, indent=2))
            else:
                sys.stdout.write(sb.result_csv(result))
        else:  # streamed through a file: the full result is never held in this process
            import shutil
            import tempfile

            with tempfile.TemporaryDirectory(prefix="runlens-sql-") as tmp:
                dest = Path(tmp) / "result.csv"
                sb.export_to(sql, "csv", dest, db=args.db, limits=limits)
                with dest.open("rb") as fh:
                    shutil.copyfileobj(fh, sys.stdout.buffer)
            sys.stdout.flush()
    except sb.SqlRefused as exc:
        print(f"python -m analytics sql: {exc}", file=sys.stderr)
        return sb.EXIT_REFUSED
    except sb.SqlFailed as exc:
        print(f"python -m analytics sql: {exc.message}", file=sys.stderr)
        return sb.EXIT_BOUNDED if exc.kind in ("timeout", "memory", "too_large") else sb.EXIT_FAILED
    return 0


def doctor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--republish", action="store_true", help="also republish the read snapshot")
    parser.add_argument("--no-rehash", action="store_true", help="do not re-hash source files still on disk")
    parser.add_argument(
        "--rebuild-aggregates",
        action="store_true",
        help="first compute again every table kept for the pages (per run x task, run, slice, code) from the "
        "attempts and labels, in one writer transaction, then check",
    )
    parser.add_argument(
        "--rewrite-texts",
        action="store_true",
        help="first rewrite a lake's long texts sorted by hash, file by file (the layout the ingest writes since "
        "issue 33: a lookup by hash then reads one row group per file), then check",
    )


def doctor_run(args: argparse.Namespace) -> int:
    """Check the database (it waits for a running writer); exit 1 when anything is wrong."""
    from analytics import doctor
    from store import open as open_store
    from store import transaction, writer
    from store.aggregates import rebuild as rebuild_aggregates

    path = open_store(args.db)
    if not path.exists():
        print(f"{path}: no such database")
        return 1
    if args.rewrite_texts and rewrite_texts(path) != 0:
        return 1
    with writer(path, publish_snapshot=args.republish or args.rebuild_aggregates) as con:
        if args.rebuild_aggregates:
            with transaction(con):
                rebuild_aggregates(con)
        rep = doctor.check(con, str(path), rehash_sources=not args.no_rehash)
    if args.json:
        print_json(doctor.to_json(rep))
    else:
        print(doctor.text_report(str(path), rep))
    return 0 if rep.ok else 1


def rewrite_texts(store: Any) -> int:
    """``doctor --rewrite-texts``: a lake's texts rewritten in hash order (``Store.rewrite_texts_ordered``) in one
    writer transaction; another store is left as it is, and says why (exit 1)."""
    import time

    cpu, wall = time.process_time(), time.perf_counter()
    try:
        n = store.rewrite_texts_ordered()
    except RunlensError as exc:
        print(f"{exc} (left as it is)")
        return 1
    took = f"{time.perf_counter() - wall:.1f} s, {time.process_time() - cpu:.1f} CPU s"
    print(f"rewrote {n:,} texts sorted by hash in small row groups ({took})")
    return 0


def export_parquet_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="folder to write (created; must be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace a previous export in --out")


def export_parquet_run(args: argparse.Namespace) -> int:
    """Export and print a summary (or the marker with ``--json``)."""
    from store.export_parquet import export_parquet

    marker = export_parquet(args.db, args.out, overwrite=args.overwrite)
    if args.json:
        print_json(marker)
        return 0
    for table, spec in marker["tables"].items():
        parts = f" partitioned by {', '.join(spec['partition_by'])}" if spec["partition_by"] else ""
        print(f"{table}: {spec['rows']:,} rows{parts}")
    print(f"wrote {args.out} in {marker['seconds']:.1f} s; use it with RUNLENS_DB={args.out}")
    return 0


def migrate_store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from", dest="source", help="the store to copy (default: --db, $RUNLENS_DB or the file)")
    parser.add_argument("--to", dest="target", required=True, help="the new store: a DuckDB file or ducklake:...")


def migrate_store_run(args: argparse.Namespace) -> int:
    """Copy a store into a new one (file to team store or back) and check every table's rows and digest."""
    from store.transfer import copy_store

    def progress(table: str, n: int) -> None:
        print(f"\r{table}: {n:,} rows".ljust(60), end="", file=sys.stderr, flush=True)

    checks = copy_store(args.source or args.db, args.target, progress=None if args.json else progress)
    if args.json:
        print_json({"tables": [{**vars(c), "ok": c.ok} for c in checks], "ok": all(c.ok for c in checks)})
        return 0
    print(file=sys.stderr)
    for c in checks:
        print(f"{c.table:<16} {c.n_source:>12,} rows  digest {'matches' if c.ok else 'DIFFERS'}")
    print(f"copied {sum(c.n_source for c in checks):,} rows; check the target with python -m analytics doctor --db ...")
    return 0


def maintain_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-days",
        type=float,
        default=7.0,
        help="keep time travel (--as-of) for this many days; older snapshots and their files go (default 7)",
    )


def maintain_run(args: argparse.Namespace) -> int:
    """Compact a team store and expire old snapshots."""
    from store.transfer import maintain

    if args.keep_days < 0:
        raise RunlensError(f"--keep-days must be 0 or more, got {args.keep_days}")
    done = maintain(args.db, keep=dt.timedelta(days=args.keep_days))
    if args.json:
        print_json(vars(done))
        return 0
    print(
        f"flushed inlined rows of {done.flushed_tables} table(s), merged files of {done.merged_tables}, "
        f"expired {done.expired_snapshots} snapshot(s), removed {done.removed_files} file(s) in {done.seconds:.1f} s"
    )
    return 0

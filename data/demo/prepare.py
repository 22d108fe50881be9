"""Get the store ready before the dashboard serves anyone: create or migrate it, and load the demo dataset into an
empty one, printing progress. ``bash run.sh app`` runs this before starting the server, so the first page opens
as soon as the server answers instead of building the demo while the visitor waits; the dashboard's own start-up
(``ui.shell``) calls the same ``prepare_store`` and finds nothing left to do.

``python -m data.demo.prepare [--db PATH]``: exit 0 when the store is ready (a team store or an exported Parquet
folder is left as it is: neither gets demo data).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TextIO

import store as rdb


def prepare_store(path: str, *, out: TextIO | None = None) -> bool:
    """Create (or migrate) the store at ``path`` and load the demo dataset when it holds no runs; return whether
    the demo was loaded. Never into a team store, an exported Parquet folder, or with RUNLENS_SKIP_DEMO set."""
    store = rdb.open(path)
    moved = store.set_aside_unreadable()  # the demo database a DuckDB newer than the pinned one wrote: rebuilt
    if moved is not None:
        print(f"runlens: {path} was written by a newer DuckDB; moved to {moved}, rebuilding", file=sys.stderr)
    if not store.takes_demo_data:  # a team's shared store, a lake elsewhere, an exported Parquet folder (read-only)
        store.ensure_snapshot()  # creates a new lake
        return False
    info = store.prepare()  # creates or migrates; reads the published snapshot when it is current
    if not info.is_empty or os.environ.get("RUNLENS_SKIP_DEMO"):
        return False
    from data.demo.build import load_demo

    load_demo(path, out=out)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--db", help="the store (default: RUNLENS_DB, else the local lake data/runlens.lake)")
    args = parser.parse_args(argv)
    path = str(rdb.resolve_db_path(args.db))
    start = time.perf_counter()
    print(f"runlens: preparing {path} (the first start builds the demo dataset, about 10-30 s)...", file=sys.stderr)
    try:
        loaded = prepare_store(path, out=sys.stderr)
    except rdb.RunlensError as exc:
        print(f"runlens: the store could not be prepared: {exc}", file=sys.stderr)
        return 1
    done = "demo dataset loaded" if loaded else "ready"
    print(f"runlens: {done} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

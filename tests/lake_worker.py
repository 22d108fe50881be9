"""Processes of the team-store concurrency tests: ``python -m tests.lake_worker write FILE...`` ingests each file
in its own writer session (RUNLENS_DB names the lake) and prints one JSON line per file; ``read STOP`` loops
pages' reads until the file STOP exists and prints what it saw as one JSON line."""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path


def write(files: list[str]) -> int:
    from ingest.pipeline import ingest_paths

    for name in files:
        started = time.time()
        result = ingest_paths([name])[0]
        row = {"file": name, "outcome": result.outcome, "warnings": list(result.warnings)}
        # when the upload began and ended (the writer lock's wait included): how the writers' uploads interleaved
        print(json.dumps({**row, "started": started, "ended": time.time()}), flush=True)
    return 0


def read(stop: Path) -> int:
    import store as rdb
    from analytics import leaderboard as lb
    from store import RunFilter, lake

    seen: list[tuple[int, int]] = []
    failures: list[str] = []
    while not stop.exists():
        try:
            with rdb.reader() as con:
                snapshot = lake.current_snapshot(con)
                n_runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
                if n_runs:
                    lb.leaderboard(con, RunFilter(benchmark="team-bench"))
            seen.append((snapshot, int(n_runs)))
        except Exception:  # noqa: BLE001 -- a reader must never fail: record any error for the test to report
            failures.append(traceback.format_exc(limit=3))
        time.sleep(0.2)  # a dashboard user clicking through pages, not a busy loop
    print(json.dumps({"seen": seen, "failures": failures}), flush=True)
    return 0


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    raise SystemExit(write(rest) if mode == "write" else read(Path(rest[0])))

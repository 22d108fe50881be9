"""Peak memory and time of the resource attacks of issue 18, before (work in the calling process) and after.

``python bench/bench_hardening.py [--db PATH]`` prints one JSON line per attack. Each case runs in a fresh
subprocess so its peak RSS is its own: ``caller_mb`` is the growth of the calling process's peak (the
Streamlit server in the app), ``worker_mb`` the peak of the worker processes it started (0 when none).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASE = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
kind, mode, db = sys.argv[1], sys.argv[2], sys.argv[3]
from analytics import sql_console as sb
from ingest import upload_worker, uploads
from store import reader
from pathlib import Path
sql = {{
    "select_100kb": "SELECT " + ",".join(["1"] * 49_000),
    "in_list_100kb": "SELECT 1 WHERE 1 IN (" + ",".join(["1"] * 49_000) + ")",
    "parens_10k": "SELECT " + "(" * 10_000 + "1" + ")" * 10_000,
    "select_2mb": "SELECT " + ",".join(["1"] * 1_000_000),
}}.get(kind)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
outcome = "ok"
try:
    if sql is not None and mode == "before":
        sb.check_statement(sql, limits=sb.SandboxLimits(max_statement_chars=10**9))
    elif sql is not None:
        outcome = sb.try_query(sql, db=db).error_kind or "ok"
    elif mode == "before":
        with reader(db) as con:
            outcome = uploads.preview_file(con, Path(sys.argv[4])).outcome
    else:
        outcome = upload_worker.preview_uploads([(Path(sys.argv[4]).name, Path(sys.argv[4]).read_bytes())], db=db)[0].outcome
except Exception as exc:
    outcome = type(exc).__name__ + ": " + str(exc)[:80]
print(json.dumps({{"attack": kind, "mode": mode, "outcome": outcome, "seconds": round(time.perf_counter() - t, 2),
    "caller_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024,
    "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024}}))
"""


def big_native_log(path: Path, *, n_attempts: int = 20_000) -> Path:
    """A valid native log of ``n_attempts`` attempts with 1 KB answers (about 25 MB): an ordinary big upload."""
    head = (ROOT / "tests" / "fixtures" / "good.jsonl").read_text().splitlines()[:4]
    line = '{{"record":"attempt","run_id":"mini-a-v1","task_id":"T1","sample":{i},"score":1,"answer":"{a}"}}'
    body = [line.format(i=i + 10, a="x" * 1024) for i in range(n_attempts)]
    path.write_text("\n".join(head + body) + "\n")
    return path


def main() -> int:
    """Run every case before and after; one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", help="a Runlens database (default: a fresh one with tests/fixtures/good.jsonl)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rl-hardening-"))
    db = args.db
    if db is None:
        sys.path.insert(0, str(ROOT))
        from ingest.pipeline import ingest_paths

        db = str(work / "bench.duckdb")
        ingest_paths([ROOT / "tests" / "fixtures" / "good.jsonl"], db=db)
    big = big_native_log(work / "big.jsonl")
    cases = [(k, m) for k in ("select_100kb", "in_list_100kb", "parens_10k") for m in ("before", "after")]
    cases += [("select_2mb", "after")]
    cases += [("native_25mb", "before"), ("native_25mb", "after")]
    script = CASE.format(root=str(ROOT))
    for kind, mode in cases:
        out = subprocess.run(
            [sys.executable, "-c", script, kind, mode, db, str(big)], capture_output=True, text=True, cwd=ROOT
        )
        print(out.stdout.strip() or json.dumps({"attack": kind, "mode": mode, "error": out.stderr[-300:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

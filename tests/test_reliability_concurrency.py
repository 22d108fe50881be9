"""Concurrent use: 20 ingests in parallel processes while dashboard pages load in a loop.

Ten generated files are each ingested twice by 20 processes started together (they queue on the writer lock);
meanwhile AppTest loads the leaderboard and the errors page again and again. Every page load must be free of
errors, the attempt count a page sees must only grow (and always be a sum of whole files), and at the end every
attempt is there exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from bench.gen_logs import generate
from tests.conftest import FIXTURES, ROOT

N_FILES = 10

WORKER = """
import json, multiprocessing as mp, sys
from ingest.pipeline import ingest_paths

def one(path, db):
    results = ingest_paths([path], db=db)
    sys.exit(0 if all(r.outcome in ("ingested", "duplicate") for r in results) else 3)

db, paths = sys.argv[1], json.loads(sys.argv[2])
ctx = mp.get_context("fork")
procs = [ctx.Process(target=one, args=(p, db)) for p in paths]
for p in procs:
    p.start()
for p in procs:
    p.join()
sys.exit(max(p.exitcode for p in procs))
"""


def _n_attempts(db: Path) -> int:
    with rdb.reader(db) as con:
        return int(con.execute("SELECT count(*) FROM attempts").fetchall()[0][0])


@pytest.mark.slow
def test_twenty_ingests_during_page_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest.pipeline import ingest_paths

    db = tmp_path / "live.duckdb"
    ingest_paths([FIXTURES / "good.jsonl"], db=db)
    base = _n_attempts(db)
    files = generate(tmp_path / "logs", n_attempts=N_FILES * 40, n_runs=N_FILES, n_benchmarks=2, seed=9)
    sizes = [sum(b'"record":"attempt"' in ln for ln in f.read_bytes().splitlines()) for f in files]
    valid = {base + sum(c) for k in range(N_FILES + 1) for c in combinations(sizes, k)}
    jobs = [str(f) for f in files] * 2  # every file twice: the second ingest must add nothing
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(db), json.dumps(jobs)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    monkeypatch.setenv("RUNLENS_DB", str(db))
    loads, seen = 0, [base]
    try:
        while worker.poll() is None or loads < 3:
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
            at.run()
            if loads % 2:
                at.switch_page("views/errors.py")
                at.run()
            assert not at.exception, [e.value for e in at.exception]
            assert not at.error, [e.value for e in at.error]
            loads += 1
            n = _n_attempts(db)
            assert n in valid and n >= seen[-1], (n, seen)
            seen.append(n)
            time.sleep(0.05)
    finally:
        out, err = worker.communicate(timeout=600)
    assert worker.returncode == 0, err[-3000:]
    assert _n_attempts(db) == base + sum(sizes)
    with rdb.reader(db) as con:
        dups = con.execute(
            "SELECT count(*) FROM (SELECT run_id, task_id, sample FROM attempts GROUP BY ALL HAVING count(*) > 1)"
        ).fetchall()[0][0]
        logged = con.execute("SELECT count(*) FROM ingest_log WHERE outcome = 'ingested'").fetchall()[0][0]
    assert dups == 0 and logged == 1 + N_FILES
    assert loads >= 3 and len(set(seen)) >= 2, seen  # pages really ran while data arrived

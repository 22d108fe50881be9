"""What the Leaderboard, Tech-Market-Fit, Errors and Progress pages read, at the shape of a 10M-attempt store, from the
aggregates the writer keeps (migration 008: run_task_stats, run_task_codes, run_code_pairs; 009's per-run sums; 012
and 013's rows on run and task codes, 014's per-run sums on run codes), without building the attempts themselves.

``python bench/bench_aggregates.py --out /tmp/agg10m.duckdb [--tasks 66700 --runs 50 --benchmarks 4] [--repeat 3]``

The store holds benchmarks, tasks and runs as ``bench/gen_logs.py`` makes them at 10M attempts (50 runs of 200,000
attempts over 4 benchmarks: 66,700 tasks per run, three attempts per (run, task)) and the aggregates' rows such a
store has: one ``run_task_stats`` row per (run, task), about 1.4 ``run_task_codes`` rows per (run, task) (as the
1M-attempt store has), 25 pairs of codes per run; values are seeded random numbers. It is built once (``--out``
kept when it exists). Each read is one page's analytics load function on a new read-only connection (the read
only, not the statistics after it: ``bench/bench_vectorised.py --shapes`` measures those); the figures are the
least wall and CPU (process) seconds of ``--repeat`` calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import store as rdb  # noqa: E402
from store.paths import MIGRATIONS_DIR  # noqa: E402

CODES = ["PE", "DE", "TE", "HAL", "RE"]


def build(db: Path, *, n_tasks: int, n_runs: int, n_benchmarks: int) -> None:
    """A store of that shape holding only what the pages read besides the attempts."""
    with rdb.writer(db) as con, rdb.transaction(con):
        con.execute(
            "INSERT INTO benchmarks (benchmark, scoring, pass_threshold) "
            "SELECT 'bench-' || b, 'binary', 1.0 FROM range($benchmarks) t(b)",
            {"benchmarks": n_benchmarks},
        )
        con.execute(
            "INSERT INTO tasks (benchmark, task_id, level, category, human_minutes) "
            "SELECT 'bench-' || b, 't' || lpad(i::VARCHAR, 6, '0'), 'L' || (i % 3 + 1), 'c' || (i % 5), 5 + i % 40 "
            "FROM range($benchmarks) b(b), range($tasks) i(i)",
            {"benchmarks": n_benchmarks, "tasks": n_tasks},
        )
        con.execute(
            "INSERT INTO runs (run_id, benchmark, agent, agent_version, kind, eval_date, price_input_per_mtok, "
            "price_output_per_mtok) SELECT 'run-' || lpad(r::VARCHAR, 3, '0'), 'bench-' || (r % $benchmarks), "
            "'agent-' || (r % 7), 'v' || (r // 7), 'llm', DATE '2025-01-01' + INTERVAL (r * 9) DAY, 1.0, 4.0 "
            "FROM range($runs) t(r)",
            {"benchmarks": n_benchmarks, "runs": n_runs},
        )
        con.execute(
            """
            INSERT INTO run_task_stats
            SELECT run_id, task_id, 3, n_passed, 3 - n_passed, 0, 0, 0, n_passed / 3, cost, 1500, 300, 20,
                   3, n_passed, 5, cost, 3, n_passed, n_passed / 3, 5, cost
            FROM (SELECT r.run_id, t.task_id, (hash(r.run_id || t.task_id) % 4)::BIGINT AS n_passed,
                         (hash(t.task_id || r.run_id) % 1000) / 1e5 AS cost
                  FROM runs r JOIN tasks t USING (benchmark))
            """
        )
        con.execute(
            """
            INSERT INTO run_task_codes
            SELECT s.run_id, s.task_id, c.code, 1, 1 + (hash(s.task_id || c.code) % 2)::BIGINT
            FROM run_task_stats s JOIN (SELECT unnest($codes) AS code, generate_subscripts($codes, 1) AS k) c
              ON hash(s.run_id || s.task_id) % 10 < CASE c.k WHEN 1 THEN 6 WHEN 2 THEN 4 ELSE 1 END
            WHERE s.n_failed > 0
            """,
            {"codes": CODES},
        )
        con.execute(
            "INSERT INTO run_code_pairs SELECT r.run_id, a.code, 1, b.code, 1, 100 + hash(r.run_id || a.code || b.code) "
            "% 1000 FROM runs r, (SELECT unnest($codes) AS code) a, (SELECT unnest($codes) AS code) b",
            {"codes": CODES},
        )
        # migration 009's per (run, slice) sums of those rows, as its backfill computes them
        migration = (MIGRATIONS_DIR / "009_run_judge_counts.sql").read_text(encoding="utf-8")
        for table in ("run_slice_stats", "run_slice_codes"):
            con.execute(f"INSERT INTO {table}\n" + migration.split(f"INSERT INTO {table}\n")[1].split(";")[0])
        # migrations 012 and 013's (run, task) rows on codes (the TMF page's and the Leaderboard's), 014's per-run
        # sums (run health's) and 015's kept level and category of each coded task, as their backfills compute them
        # (012's codes into the three columns it had: 015 added three more)
        for name in ("012_run_task_tmf.sql", "013_run_task_board.sql", "014_run_health_sums.sql"):
            text = (MIGRATIONS_DIR / name).read_text(encoding="utf-8")
            for statement in ("INSERT INTO" + text.split("INSERT INTO", 1)[1]).split(";"):
                if statement.strip():
                    con.execute(
                        statement.replace("tmf_task_codes\n", "tmf_task_codes (benchmark, task_id, task_code)\n")
                    )
        text = (MIGRATIONS_DIR / "015_task_code_kinds.sql").read_text(encoding="utf-8")
        for statement in ("UPDATE" + text.split("UPDATE", 1)[1]).split(";"):
            if statement.strip():
                con.execute(statement)
        # 016's kept human minutes (its backfill makes the table again with them, from the tasks table)
        con.execute(
            "UPDATE tmf_task_codes SET human_minutes = t.human_minutes FROM tasks t "
            "WHERE t.benchmark = tmf_task_codes.benchmark AND t.task_id = tmf_task_codes.task_id"
        )


def _best(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_s": round(min(walls), 3), "cpu_s": round(min(cpus), 3)}


def reads(db: Path, repeat: int) -> dict[str, dict[str, float]]:
    """Each page's reads of bench-0 on a new connection."""
    from analytics import errors as er
    from analytics import leaderboard as lb
    from analytics import progress as prog
    from analytics import runs, tmf

    rf = rdb.RunFilter(benchmark="bench-0")

    def on(fn: Callable[[Any], Any]) -> Callable[[], Any]:
        def call() -> Any:
            with rdb.reader(db) as con:
                return fn(con)

        return call

    calls: dict[str, Callable[[], Any]] = {
        "runs.run_health": on(lambda con: runs.run_health(con, benchmark="bench-0")),
        "runs.load_runs": on(lambda con: runs.load_runs(con, rf)),
        "leaderboard.task_outcomes": on(lambda con: lb.task_outcomes(con, rf)),
        "tmf.load": on(lambda con: tmf.load(con, rf)),
        "errors.error_table": on(lambda con: er.error_table(con, rf)),
        "errors.cooccurrence (one run)": on(
            lambda con: er.cooccurrence(con, rdb.RunFilter(benchmark="bench-0", run_ids=("run-000",)))
        ),
        "progress.progress_view": on(lambda con: prog.progress_view(con, benchmark="bench-0")),
    }
    out = {}
    for name, fn in calls.items():
        out[name] = _best(fn, repeat)
        print(name, out[name], file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the DuckDB file built once and reused")
    parser.add_argument("--tasks", type=int, default=66_700)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--benchmarks", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"loadavg": [round(x, 2) for x in os.getloadavg()]}
    if not args.out.exists():
        start = time.perf_counter()
        build(args.out, n_tasks=args.tasks, n_runs=args.runs, n_benchmarks=args.benchmarks)
        result["build_s"] = round(time.perf_counter() - start, 1)
    with rdb.reader(args.out) as con:
        result["rows"] = {
            t: int(rdb.query_rows(con, f"SELECT count(*) FROM {t}")[0][0])
            for t in ("run_task_stats", "run_task_codes", "run_code_pairs")
        }
    result["reads"] = reads(args.out, args.repeat)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where an ingest goes, statement by statement: ``python bench/profile_ingest_write.py STORE PATH [PATH ...]``.

Ingests the files and folders PATH into STORE (``ducklake:sqlite:PATH`` or a DuckDB file; give a new one) in this
process, with ``--jobs 1`` (``RUNLENS_PROFILE_JOBS`` sets another number, or ``auto``: the workers' CPU is then reported apart,
and validation is timed only where the writer does it), and prints the process CPU (all DuckDB threads) and wall seconds of: the imports, opening the store
(extensions, attach, migrations), validating the file (``prepare_file``), and every statement of its write
(``store.ingest_writer.write_bundle``: the inserts, the aggregates' rows, the digest, the COMMIT that writes the
Parquet files and the catalog rows), heaviest first, then the write's CPU outside them (Arrow, Python).
No profiler: each figure is ``time.process_time``/``perf_counter`` around the call (cProfile charges every Python
call and inflated the validation 14-fold, BENCHMARKS.md "Ingest, third pass").
"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

C0, W0 = time.process_time(), time.perf_counter()

import duckdb  # noqa: E402

from ingest import batches, pipeline  # noqa: E402
from store import ingest_writer  # noqa: E402
from store import lake as lake_mod  # noqa: E402
from store.backends import lake as lake_backend  # noqa: E402

PHASES: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])  # type: ignore[arg-type]
STATEMENTS: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])  # type: ignore[arg-type]


def _add(table: dict[str, list[float]], key: str, cpu: float, wall: float) -> None:
    row = table[key]
    row[0] += cpu
    row[1] += wall
    row[2] += 1


def _phase(owner: Any, name: str, label: str) -> None:
    fn = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        c, w = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(PHASES, label, time.process_time() - c, time.perf_counter() - w)

    setattr(owner, name, timed)


class _TimedConnection:
    """A connection whose ``execute`` is timed and labelled by the statement's first words."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        c, w = time.process_time(), time.perf_counter()
        try:
            return self._con.execute(sql, *args, **kwargs)
        finally:
            words = " ".join(sql.split())
            key = words[:90] if not words.startswith("WITH") else "WITH ... " + words[words.find(")") :][:80]
            _add(STATEMENTS, key, time.process_time() - c, time.perf_counter() - w)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    store, paths = sys.argv[1], [Path(p) for p in sys.argv[2:]]
    setting = os.environ.get("RUNLENS_PROFILE_JOBS") or "1"
    jobs = None if setting == "auto" else int(setting)
    _add(PHASES, "imports", time.process_time() - C0, time.perf_counter() - W0)
    _phase(lake_mod, "connect", "open: connect (extensions, attach)")
    _phase(lake_backend, "migrate", "open: migrations")
    _phase(lake_mod, "keep_row_groups", "open: the tables' row-group options")
    _phase(pipeline, "load_known", "open: what the store holds (load_known)")
    _phase(pipeline, "prepare_file", "validate: prepare_file")
    _phase(pipeline, "_has_stored_attempts", "check: stored attempts of the file's runs")
    _phase(pipeline, "_label_rules", "check: which benchmarks have a tool graph")
    write = ingest_writer.write_bundle  # (imported by the pipeline when it writes)

    def timed_write(con: Any, *args: Any, **kwargs: Any) -> Any:
        c, w = time.process_time(), time.perf_counter()
        try:
            return write(_TimedConnection(con), *args, **kwargs)  # type: ignore[arg-type]
        finally:
            _add(PHASES, "write: write_bundle", time.process_time() - c, time.perf_counter() - w)

    ingest_writer.write_bundle = timed_write  # type: ignore[assignment]
    write_many = batches.write_batch

    def timed_batch(con: Any, *args: Any, **kwargs: Any) -> Any:
        c, w = time.process_time(), time.perf_counter()
        try:
            return write_many(_TimedConnection(con), *args, **kwargs)  # type: ignore[arg-type]
        finally:
            _add(
                PHASES, "write: write_batch (a batch of small files)", time.process_time() - c, time.perf_counter() - w
            )

    batches.write_batch = timed_batch  # type: ignore[assignment]
    lake_mod.is_lake_connection = _unwrapped(lake_mod.is_lake_connection)  # type: ignore[assignment]
    c, w = time.process_time(), time.perf_counter()
    results = pipeline.ingest_paths(paths, db=store, jobs=jobs)
    _add(PHASES, "ingest_paths (all of the above but imports)", time.process_time() - c, time.perf_counter() - w)
    outcomes = collections.Counter(r.outcome for r in results)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"{len(results)} files: {dict(outcomes)}; process CPU {time.process_time() - C0:.2f} s, "
        f"workers' CPU {children.ru_utime + children.ru_stime:.2f} s, wall {time.perf_counter() - W0:.2f} s"
    )
    print(f"{'phase':60s} {'n':>4s} {'CPU s':>7s} {'wall s':>7s}")
    for key, (cpu, wall, n) in PHASES.items():
        print(f"{key:60s} {int(n):4d} {cpu:7.3f} {wall:7.3f}")
    named = sum(cpu for key, (cpu, _, _) in PHASES.items() if not key.startswith(("ingest_paths", "imports")))
    rest = PHASES["ingest_paths (all of the above but imports)"][0] - named
    print(f"{'ingest_paths outside the phases above':60s} {'':4s} {rest:7.3f}")
    print(f"\n{'statement of the write (first words)':92s} {'n':>3s} {'CPU s':>7s} {'wall s':>7s}")
    in_statements = 0.0
    for key, (cpu, wall, n) in sorted(STATEMENTS.items(), key=lambda kv: -kv[1][0]):
        in_statements += cpu
        print(f"{key:92s} {int(n):3d} {cpu:7.3f} {wall:7.3f}")
    print(
        f"{'the write outside its statements (Arrow, Python)':96s} "
        f"{PHASES['write: write_bundle'][0] + PHASES['write: write_batch (a batch of small files)'][0] - in_statements:7.3f}"
    )


def _unwrapped(fn: Any) -> Any:
    def call(con: Any) -> Any:
        return fn(con._con if isinstance(con, _TimedConnection) else con)

    return call


if __name__ == "__main__":
    main()

"""SQL console, hardening round 2 (issue 30): the worker's answer apart from its stdout, no built-in view that shows
server paths or settings, memory bounded for Python and Arrow too, a bounded pool of workers, messages not
tracebacks."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import store as rdb
from analytics import sql_console as sb
from analytics.sql_console import worker as sql_worker
from ingest import workers
from tests.treemem import measured_in_fork

# Built-in views, pragmas and functions an attacker would try for the snapshot and WAL paths, the home and temp
# directories or the settings: each is refused, fails with DuckDB's own error, or runs and shows no path.
DISCLOSURE = [
    "FROM duckdb_databases",
    "FROM duckdb_databases()",
    "SELECT path FROM system.main.duckdb_databases",
    'FROM "duckdb_databases"',
    "FROM main.duckdb_databases",
    "FROM DUCKDB_DATABASES",
    "FROM pragma_database_list",
    "FROM pragma_database_list()",
    "PRAGMA database_list",
    "CALL pragma_database_list()",
    "FROM pg_settings",
    "FROM pg_catalog.pg_settings",
    "SELECT setting FROM system.pg_catalog.pg_settings",
    "FROM duckdb_settings",
    "FROM duckdb_settings()",
    "SELECT current_setting('home_directory')",
    "SELECT current_setting('temp_directory')",
    "SELECT getenv('HOME')",
    "FROM duckdb_extensions()",
    "FROM duckdb_extensions",
    "FROM duckdb_secrets()",
    "FROM duckdb_secrets",
    "FROM duckdb_temporary_files()",
    "FROM duckdb_logs",
    "FROM duckdb_memory()",
    "FROM duckdb_external_file_cache()",
    "FROM which_secret('s3://x', 's3')",
    "SHOW DATABASES",
    "SHOW ALL TABLES",
    "DESCRIBE duckdb_databases",
    "SUMMARIZE duckdb_databases",
    "SUMMARIZE pg_settings",
    "SELECT * FROM (SHOW DATABASES)",
    "PRAGMA show_databases",
    "FROM pragma_show('duckdb_databases')",
    "PRAGMA database_size",
    "SELECT current_database(), current_schema()",
    "FROM pragma_metadata_info()",
    "FROM pragma_storage_info('runs')",
    "FROM information_schema.schemata",
    "FROM information_schema.views",
    "FROM pg_catalog.pg_database",
    "FROM pg_views",
    "FROM sqlite_master",
    "FROM duckdb_views()",
    "EXPLAIN ANALYZE SELECT count(*) FROM runs",
    "FROM duckdb_variables()",
    "SELECT * FROM query('FROM duckdb_databases')",
    "WITH d AS (FROM duckdb_databases) FROM d",
    "SELECT (SELECT path FROM duckdb_databases LIMIT 1)",
    "SELECT 1 WHERE EXISTS (FROM pg_settings WHERE setting LIKE '/%')",
    "FROM nonexistent_table_xyz",
    "SELECT * FROM 'runlens.duckdb'",
]


def _secrets(db: Path) -> list[str]:
    """What no answer may show: the database's folder (snapshot, WAL), the home and temp directories."""
    return [str(db.parent), str(Path.home()), os.environ.get("TMPDIR", "/tmp")]


def _answer_text(sql: str, db: Path) -> tuple[str, str]:
    try:
        result = sb.run_query(sql, db=db, is_isolated=False)
    except sb.SqlRefused as exc:
        return "refused", str(exc)
    except sb.SqlFailed as exc:
        return "failed", str(exc)
    return "ran", sb.result_csv(result) + "".join(str(c) for c in result.df.columns)


@pytest.mark.parametrize("layout", ["duckdb", "parquet"])
def test_no_payload_discloses_a_path_or_setting(fixture_db: Path, tmp_path: Path, layout: str) -> None:
    db = fixture_db
    if layout == "parquet":
        from store import export_parquet

        db = tmp_path / "export"
        export_parquet.export_parquet(fixture_db, db)
    outcomes = {}
    for sql in DISCLOSURE:
        kind, text = _answer_text(sql, db)
        leaked = [s for s in _secrets(db) if s in text]
        assert not leaked, (sql, kind, text[:300])
        assert "Traceback" not in text
        outcomes[sql] = kind
    for sql in ("FROM duckdb_databases", "FROM pragma_database_list", "FROM pg_settings", "FROM duckdb_settings"):
        assert outcomes[sql] == "refused", sql
    assert outcomes["SHOW DATABASES"] == "ran"  # names only: harmless, and useful


def test_disclosing_views_are_refused_with_the_reason() -> None:
    for sql in ("FROM duckdb_databases", "SELECT * FROM pg_catalog.pg_settings", 'FROM "pragma_database_list"'):
        with pytest.raises(sb.SqlRefused, match="is not allowed \\(it shows the server's file paths and settings\\)"):
            sb.check_statement(sql)


def test_the_answer_does_not_travel_on_stdout(
    fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose stdout is full of noise (DuckDB's progress bar was: an UnpicklingError) still answers."""
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text("import sys\nsys.stdout.write('\\r[=====>    ] 50%\\r' * 1000)\n")
    monkeypatch.setenv("PYTHONPATH", str(noisy))
    result = sb.run_query("SELECT 42 AS answer", db=fixture_db)
    assert result.df["answer"].tolist() == [42]
    data = sb.export_result("SELECT 42 AS answer", "csv", db=fixture_db)
    assert data.decode().splitlines() == ['"answer"', "42"]


def test_a_slow_cross_join_ends_with_a_message(demo_db: Path) -> None:
    """The issue's link (`/sql?q=SELECT count(*) FROM steps a, steps b, steps c`): a timeout message, not a
    traceback, within the timeout plus the worker's start."""
    limits = sb.SandboxLimits(timeout_s=2.0)
    started = time.perf_counter()
    outcome = sb.try_query("SELECT count(*) FROM steps a, steps b, steps c", db=demo_db, limits=limits)
    assert time.perf_counter() - started < 30
    assert outcome.error_kind == "timeout", outcome
    assert outcome.error == "the statement ran longer than 2 s and was stopped"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT repeat('x', 100000000) AS s FROM range(20)",  # 2 GB of Arrow strings in one batch
        "SELECT list(repeat('y', 10000)) FROM range(200000)",  # one 2 GB list value
    ],
)
def test_a_worker_holding_too_much_is_stopped_with_a_message(fixture_db: Path, sql: str) -> None:
    # in a process of its own (what earlier tests left in this one is not the request's)
    outcome, grown_mb, held = measured_in_fork(lambda: sb.try_query(sql, db=fixture_db))
    assert outcome.error_kind == "memory", outcome
    assert "needed more memory than the sandbox allows (DuckDB 384MB, the worker 1,024 MB in all)" in str(
        outcome.error
    ), outcome.error
    assert "Traceback" not in str(outcome.error)
    assert grown_mb < 1024 + 100, f"{grown_mb:.0f} MB: {held}"  # one worker within its limit, and the request's own


def test_the_worker_limit_follows_a_larger_duckdb_limit() -> None:
    assert sb.SandboxLimits().worker_memory_bytes() == workers.WORKER_MEMORY_BYTES
    bigger = sb.SandboxLimits(memory_limit="2GB").worker_memory_bytes()
    assert bigger == 2 * 1000**3 + 640 * 1024**2


def test_workers_beyond_the_pool_queue_then_are_refused(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every slot taken, a statement waits its turn and is then refused with a message, never started."""
    monkeypatch.setattr(sql_worker, "WORKER_WAIT_S", 0.5)
    started = []
    real_popen = __import__("subprocess").Popen
    monkeypatch.setattr("subprocess.Popen", lambda *a, **k: started.append(a) or real_popen(*a, **k))
    release = threading.Event()
    holders = [threading.Thread(target=lambda: _hold_slot(release), daemon=True) for _ in range(workers.WORKER_SLOTS)]
    for t in holders:
        t.start()
    while workers.running() < workers.WORKER_SLOTS:
        time.sleep(0.01)
    try:
        outcome = sb.try_query("SELECT 1", db=fixture_db)
    finally:
        release.set()
        for t in holders:
            t.join()
    assert outcome.error_kind == "busy" and not started
    assert f"the server runs at most {workers.WORKER_SLOTS} worker(s) at once" in str(outcome.error)
    assert sb.try_query("SELECT 1", db=fixture_db).result is not None  # free again


def _hold_slot(release: threading.Event) -> None:
    with workers.worker_slot("a test", wait_s=5, want_bytes=1):
        release.wait(10)


def test_export_streams_to_a_file(fixture_db: Path, tmp_path: Path) -> None:
    dest = tmp_path / "all.csv"
    size = sb.export_to("SELECT range AS i FROM range(100000)", "csv", dest, db=fixture_db)
    assert size == dest.stat().st_size and dest.read_text().splitlines()[-1] == "99999"
    assert not list(Path(rdb.PROJECT_ROOT).glob("runlens-sql-*"))

"""The local lake (``ducklake:sqlite:<catalog file>``): DuckLake with a SQLite catalog and Parquet files on the local
disk, no server. The file store's guarantees hold on it: idempotent by content hash, each file whole or absent
(SIGKILL at any point), concurrent writer processes while readers in other processes read, time travel; and
``migrate-store`` moves a file store into it in one command."""

from __future__ import annotations

import datetime as dt
import json
import random
import signal
import time
from pathlib import Path

import pytest

import store as rdb
from analytics import doctor
from store import lake
from tests.conftest import FIXTURES, ROOT
from tests.lake_support import make_upload, run_cli, spawn_worker, writers_and_readers


def _local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, str]]:
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    monkeypatch.setenv("RUNLENS_DB", location)
    return location, {"RUNLENS_DB": location}


def test_location_parses_to_a_catalog_file_with_its_data_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    found = rdb.resolve_db_path(f"ducklake:sqlite:{tmp_path}/a.lake")
    assert isinstance(found, lake.Lake) and found.is_local
    assert found.catalog_file == tmp_path / "a.lake"
    assert found.data_path == str(tmp_path / "a.lake.files")
    assert str(found) == f"ducklake:sqlite:{tmp_path}/a.lake" == found.label
    assert rdb.resolve_db_path(str(found)) == found
    with pytest.raises(rdb.LakeError, match="ducklake:sqlite:<catalog file>"):
        lake.parse("ducklake:mysql:x")
    with pytest.raises(rdb.LakeError, match="path is empty"):
        lake.parse("ducklake:sqlite: ")


def test_ingest_is_idempotent_and_time_travels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location, env = _local(tmp_path, monkeypatch)
    assert lake.snapshot_id(lake.parse(location)) is None  # no catalog yet
    first = run_cli("ingest", str(FIXTURES / "good.jsonl"), env=env)
    assert first.returncode == 0, first.stderr
    again = run_cli("ingest", str(FIXTURES / "good.jsonl"), env=env)
    assert again.returncode == 0 and "already ingested" in again.stdout + again.stderr
    catalog = lake.parse(location)
    import sqlite3

    with sqlite3.connect(catalog.catalog_file) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # readers read while a writer commits
    with rdb.reader(location) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] == 6
        assert con.execute("SELECT count(*) FROM ingest_log").fetchall()[0][0] == 1
    before = lake.snapshot_id(catalog)
    assert before is not None
    upload = make_upload(tmp_path, 1)
    assert run_cli("ingest", str(upload), env=env).returncode == 0
    assert (lake.snapshot_id(catalog) or 0) > before
    with rdb.reader(location, as_of=str(before)) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] == 6
    snapshot, at = lake.resolve_as_of(catalog, dt.datetime.now(dt.UTC))
    assert snapshot == lake.snapshot_id(catalog) and at.tzinfo is not None
    with pytest.raises(rdb.LakeError, match="no snapshot"):
        lake.resolve_as_of(catalog, dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    assert rdb.db_version(location) == f"snapshot:{lake.snapshot_id(catalog)}"


def test_migrate_store_moves_a_file_store_in_one_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "old.duckdb"
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    assert run_cli("ingest", "--db", str(db), str(FIXTURES / "good.jsonl"), env={}).returncode == 0
    target = f"ducklake:sqlite:{tmp_path / 'new.lake'}"
    done = run_cli("analytics", "migrate-store", "--from", str(db), "--to", target, "--json", env={})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    with rdb.reader(db) as old, rdb.reader(target) as new:
        query = "SELECT run_id, count(*), sum(score) FROM attempts GROUP BY 1 ORDER BY 1"
        assert old.execute(query).fetchall() == new.execute(query).fetchall()
    board = run_cli("analytics", "leaderboard", "--db", target, "--json", env={})
    assert board.returncode == 0 and json.loads(board.stdout)


@pytest.mark.slow
def test_writers_in_several_processes_while_others_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location, env = _local(tmp_path, monkeypatch)
    # as tests/test_lake_concurrency.py: writer w uploads files 4w .. 4w + 4, every other writer in reverse order, so
    # two writers ask for each of the 4 contested files at the same time (16 distinct files, 20 uploads)
    n_files, n_writers, n_uploads = 16, 4, 5
    files = [make_upload(tmp_path, i) for i in range(n_files)]
    plans = [[str(files[(w * 4 + j) % n_files]) for j in range(n_uploads)] for w in range(n_writers)]
    plans = [plan[::-1] if w % 2 else plan for w, plan in enumerate(plans)]
    rdb.ensure_snapshot(location)
    stop = tmp_path / "stop"
    outcomes, reads, _ = writers_and_readers(plans, env, stop, drop=("RUNLENS_LAKE_DATA_PATH",))
    uploaded = {f for plan in plans for f in plan}
    assert set(outcomes) == uploaded
    assert all(o.count("ingested") == 1 for o in outcomes.values()), outcomes
    with rdb.reader(location) as con:
        n_runs, n_attempts, n_ids = con.execute(
            "SELECT count(DISTINCT run_id), count(*), count(DISTINCT attempt_id) FROM attempts"
        ).fetchall()[0]
    assert n_runs == len(uploaded) and n_attempts == n_ids == 40 * len(uploaded)
    for read in reads:
        assert read["failures"] == [], read["failures"][:2]
        snapshots = [s for s, _ in read["seen"]]
        runs = [n for _, n in read["seen"]]
        assert len(snapshots) > 3 and snapshots == sorted(snapshots) and runs == sorted(runs)


@pytest.mark.slow
def test_a_writer_killed_at_any_point_leaves_each_file_whole_or_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, env = _local(tmp_path, monkeypatch)
    rng = random.Random(33)
    files = [make_upload(tmp_path, i, n_tasks=400, samples=5) for i in range(6)]  # 2,000 attempts each
    for trial, path in enumerate(files):
        proc = spawn_worker(["write", str(path)], env, drop=("RUNLENS_LAKE_DATA_PATH",))
        time.sleep(rng.uniform(0.3, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        with rdb.reader(location) as con:
            n = con.execute("SELECT count(*) FROM attempts WHERE run_id = ?", [f"run-{trial}"]).fetchall()[0][0]
            logged = con.execute("SELECT count(*) FROM ingest_log WHERE path = ?", [str(path)]).fetchall()[0][0]
        assert (n, logged) in ((0, 0), (2000, 1)), f"trial {trial}: {n} attempts, {logged} log rows"
    with rdb.writer(location, wait_s=5) as con:  # the killed writer's flock is gone
        report = doctor.check(con, location, rehash_sources=False)
    assert report.ok, report.problems


def test_search_index_beside_a_local_lake_gives_the_scans_hits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analytics import search as sr
    from jobs import search_index

    location, _ = _local(tmp_path, monkeypatch)
    from ingest.pipeline import ingest_paths

    ingest_paths([FIXTURES / "good.jsonl", make_upload(tmp_path, 3)], db=location)
    done = search_index.refresh(location)
    assert done.path == str(tmp_path / "store.lake.search") and done.attempts_covered == 46
    with rdb.reader(location) as con:
        for query in ("search", "x", "T00"):
            indexed = sr.search(con, query=query)
            scanned = sr.search(con, query=query, use_index=False)
            assert indexed.is_indexed and not scanned.is_indexed
            assert (indexed.n_attempts, indexed.n_hits) == (scanned.n_attempts, scanned.n_hits)
            assert indexed.hits.equals(scanned.hits)


def test_the_default_is_the_local_lake_unless_an_earlier_file_store_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from store import paths

    monkeypatch.delenv("RUNLENS_DB", raising=False)
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    monkeypatch.setattr(paths, "DEFAULT_DB", tmp_path / "runlens.duckdb")
    monkeypatch.setattr(paths, "DEFAULT_LAKE", tmp_path / "runlens.lake")
    found = rdb.resolve_db_path()
    assert isinstance(found, lake.Lake) and found.catalog_file == tmp_path / "runlens.lake"
    assert rdb.legacy_default_notice(found) is None
    (tmp_path / "runlens.duckdb").touch()  # a file store an earlier version made: kept in use, and said so
    assert rdb.resolve_db_path() == tmp_path / "runlens.duckdb"
    notice = rdb.legacy_default_notice(tmp_path / "runlens.duckdb")
    assert notice and "migrate-store --from data/runlens.duckdb --to ducklake:sqlite:data/runlens.lake" in notice
    (tmp_path / "runlens.lake").touch()  # migrated: the lake wins
    assert isinstance(rdb.resolve_db_path(), lake.Lake)
    assert rdb.legacy_default_notice(tmp_path / "runlens.duckdb") is None


def test_first_start_on_the_default_lake_loads_the_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    from store import paths

    monkeypatch.delenv("RUNLENS_DB", raising=False)
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    monkeypatch.delenv("RUNLENS_SKIP_DEMO", raising=False)
    for module in (paths,):
        monkeypatch.setattr(module, "DEFAULT_DB", tmp_path / "runlens.duckdb")
        monkeypatch.setattr(module, "DEFAULT_LAKE", tmp_path / "runlens.lake")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    location = f"ducklake:sqlite:{tmp_path / 'runlens.lake'}"
    with rdb.reader(location) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE is_demo").fetchall()[0][0] > 0
    assert not (tmp_path / "runlens.duckdb").exists()


def test_the_sql_console_and_maintain_work_on_a_local_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analytics.sql_console import run_query
    from ingest.pipeline import ingest_paths
    from store.transfer import maintain

    location, env = _local(tmp_path, monkeypatch)
    ingest_paths([make_upload(tmp_path, i) for i in range(3)], db=location)
    assert run_query("SELECT count(*) AS n FROM attempts", db=location).df["n"].tolist() == [120]
    refused = run_cli("analytics", "sql", "SELECT * FROM read_csv('/etc/passwd')", env=env)
    assert refused.returncode != 0 and "not allowed" in refused.stderr
    with rdb.reader(location) as con:  # this process keeps the snapshot attached for the next reader
        con.execute("SELECT count(*) FROM attempts").fetchall()
    done = maintain(location, keep=dt.timedelta(0))
    assert done.expired_snapshots >= 1
    found = lake.parse(location)
    oldest = lake.snapshot_range(found)[0]  # type: ignore[index]
    # no attachment of this process was left on a snapshot the expiry removed (it was detached before)
    assert [k[2] for k in lake._POOL if k[0] == found.conninfo and k[2] < oldest] == []
    with rdb.reader(location) as con:
        assert con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] == 120


def test_the_shared_engine_loads_the_packaged_binaries_and_nothing_by_name(tmp_path: Path) -> None:
    """The process's shared instance (Runlens' own statements only) loads ducklake and sqlite_scanner from their
    packages' paths without DuckDB's signature check (0.21 CPU s per process), so it must load nothing else: no
    autoloading, no extension folder. The SQL console's instance, which runs a user's statements, still checks
    every signature; a team store (the postgres binary's file is not named as DuckDB expects) too."""
    engine = lake._new_instance(lake=lake.parse(f"ducklake:sqlite:{tmp_path / 'x.lake'}"))
    console = lake._new_instance({"threads": 1}, lake=lake.parse(f"ducklake:sqlite:{tmp_path / 'x.lake'}"))
    team = lake._new_instance(lake=lake.Lake("dbname=x", data_path=str(tmp_path)))
    try:

        def setting(con: object, name: str) -> str:
            return str(con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0])  # type: ignore[attr-defined]

        def loaded(con: object) -> dict[str, str]:
            rows = con.execute(  # type: ignore[attr-defined]
                "SELECT extension_name, install_path FROM duckdb_extensions() WHERE loaded AND install_mode IS "
                "DISTINCT FROM 'STATICALLY_LINKED'"
            ).fetchall()
            return dict(rows)

        paths = loaded(engine)
        assert set(paths) == {"ducklake", "sqlite_scanner"}
        assert setting(engine, "allow_unsigned_extensions").lower() == "true"
        assert setting(engine, "autoload_known_extensions").lower() == "false"
        assert setting(engine, "autoinstall_known_extensions").lower() == "false"
        for con in (console, team):
            assert setting(con, "allow_unsigned_extensions").lower() == "false"
        assert {"ducklake", "sqlite_scanner"} <= set(loaded(console))
        assert "postgres_scanner" in loaded(team)
    finally:
        for con in (engine, console, team):
            con.close()

"""The team store (DuckLake on a real PostgreSQL, data in a folder or on a local S3 server): ingest, reports,
doctor, time travel, migration both ways, maintenance, and constraints DuckLake cannot declare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import store as rdb
from analytics import doctor
from analytics import leaderboard as lb
from ingest.pipeline import ingest_paths
from store import RunFilter
from store import lake as lk
from store.transfer import copy_store, maintain
from tests.conftest import FIXTURES
from tests.lake_support import make_upload, new_lake, run_cli


def _leaderboard(db: str | Path) -> list[dict[str, object]]:
    """The leaderboard's rows as JSON values (NaN as null, so two equal tables compare equal)."""
    with rdb.reader(db) as con:
        df = lb.leaderboard(con, RunFilter(benchmark="mini-bench"))
    return json.loads(df.sort_values(["slice", "run_id"]).to_json(orient="records", default_handler=str))


def test_location_parsing_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNLENS_LAKE_DATA_PATH", "/data/lake")
    loc = rdb.resolve_db_path("ducklake:postgres:dbname=x host=h password=secret")
    assert isinstance(loc, lk.Lake) and loc.conninfo == "dbname=x host=h password=secret"
    assert loc.data_path == "/data/lake" and "secret" not in loc.label and str(loc).endswith("password=secret")
    uri = rdb.resolve_db_path("ducklake:postgres:postgresql://ann:s3cr3t@db.internal:5432/runlens")
    assert uri.label == "ducklake:postgres:postgresql://ann:***@db.internal:5432/runlens"  # type: ignore[union-attr]
    with pytest.raises(rdb.LakeError, match="ducklake:postgres:"):
        rdb.resolve_db_path("ducklake:/tmp/catalog.ducklake")
    with pytest.raises(rdb.LakeError, match="empty"):
        rdb.resolve_db_path("ducklake:postgres:  ")
    assert lk.parse_as_of("42") == 42 and lk.parse_as_of("2026-11-24T09:00").tzinfo is not None
    with pytest.raises(rdb.LakeError, match="snapshot id"):
        lk.parse_as_of("yesterday")


def test_an_unreachable_catalog_names_the_location_without_its_password(tmp_path: Path) -> None:
    db = "ducklake:postgres:dbname=nope host=127.0.0.1 port=1 user=x password=hunter2 connect_timeout=2"
    with pytest.raises(rdb.RunlensError) as err:
        ingest_paths([FIXTURES / "good.jsonl"], db=db)
    assert "dbname=nope" in str(err.value) and "hunter2" not in str(err.value)


def test_ingest_reports_and_doctor_match_the_single_file_store(lake: str, tmp_db: Path) -> None:
    for db in (lake, tmp_db):
        results = ingest_paths([FIXTURES / "good.jsonl"], db=db)
        assert [r.outcome for r in results] == ["ingested"]
    assert _leaderboard(lake) == _leaderboard(tmp_db)
    with rdb.writer(lake) as con:
        report = doctor.check(con, lake)
    assert report.ok, report.problems
    assert report.counts["attempts"] > 0 and all(n == 0 for n in report.constraints.values())
    # the CLI works unchanged on the lake (the contract: python -m ingest / analytics leaderboard --json / doctor)
    env = {"RUNLENS_DB": lake}
    upload = make_upload(tmp_db.parent, 1)
    assert run_cli("ingest", str(upload), "--no-progress", env=env).returncode == 0
    out = run_cli("analytics", "leaderboard", "--json", "--benchmark", "team-bench", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["benchmark"] == "team-bench"
    checked = run_cli("analytics", "doctor", env=env)
    assert checked.returncode == 0 and "25 of 25 hold" in checked.stdout, checked.stdout + checked.stderr


def test_the_schema_on_a_lake_keeps_not_null_and_defaults_but_no_keys(lake: str) -> None:
    with rdb.writer(lake) as con:
        assert lk.is_lake_connection(con)
        nullable = dict(
            con.execute(
                "SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = 'runs'"
            ).fetchall()
        )
        assert nullable["run_id"] == "NO" and nullable["agent"] == "NO" and nullable["family"] == "YES"
        con.execute("INSERT INTO benchmarks (benchmark) VALUES ('b')")
        assert con.execute("SELECT scoring, is_demo FROM benchmarks").fetchall() == [("binary", False)]


def test_a_duplicate_upload_is_refused_and_ids_never_collide(lake: str, tmp_path: Path) -> None:
    files = [make_upload(tmp_path, i) for i in range(3)]
    first = ingest_paths(files, db=lake)
    again = ingest_paths([files[1], tmp_path / "upload-1.jsonl"], db=lake)
    assert [r.outcome for r in first] == ["ingested"] * 3
    assert [r.outcome for r in again] == ["duplicate", "duplicate"]
    with rdb.reader(lake) as con:
        n, distinct = con.execute("SELECT count(*), count(DISTINCT attempt_id) FROM attempts").fetchall()[0]
        assert n == distinct == 3 * 40
        messages = con.execute(
            f"SELECT commit_message, commit_extra_info FROM {lk.alias(con)}.snapshots() WHERE commit_message LIKE 'ingest %'"
        ).fetchall()
    # the three small files went in one transaction (ingest.batches): one commit naming each file and its hash
    assert [m[0] for m in messages] == ["ingest 3 files"]
    extra = json.loads(messages[0][1])["files"]
    assert [f["file_id"] for f in extra] == [1, 2, 3]
    assert all(f["content_hash"] and f["file"].endswith(".jsonl") for f in extra)


def test_readers_pin_a_snapshot_and_as_of_travels_back(lake: str, tmp_path: Path, tmp_db: Path) -> None:
    ingest_paths([make_upload(tmp_path, 1)], db=lake)
    before = lk.snapshot_id(lk.parse(lake))
    assert before is not None and rdb.db_version(lake) == f"snapshot:{before}"
    ingest_paths([make_upload(tmp_path, 2)], db=lake)
    assert rdb.db_version(lake) != f"snapshot:{before}"
    with rdb.reader(lake, as_of=before) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 1
    with rdb.reader(lake) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 2
    env = {"RUNLENS_DB": lake}
    past = run_cli("analytics", "leaderboard", "--json", "--benchmark", "team-bench", "--as-of", str(before), env=env)
    assert past.returncode == 0, past.stderr
    assert {r["run_id"] for r in json.loads(past.stdout)["rows"]} == {"run-1"}
    refused = run_cli("analytics", "leaderboard", "--as-of", "1", env={"RUNLENS_DB": str(tmp_db)})
    assert refused.returncode == 2 and "team store" in refused.stderr
    with pytest.raises(rdb.LakeError, match="no snapshot"):
        lk.resolve_as_of(lk.parse(lake), 10_000)


def test_migrate_store_both_ways_keeps_every_row(lake: str, demo_db: Path, tmp_path: Path) -> None:
    checks = copy_store(demo_db, lake)
    assert all(c.ok for c in checks) and sum(c.n_source for c in checks if c.table == "attempts") > 1000
    back = tmp_path / "back.duckdb"
    assert all(c.ok for c in copy_store(lake, back))
    with rdb.reader(demo_db) as a, rdb.reader(back) as b:
        for table in ("attempts", "steps", "runs", "ratings"):
            assert (
                a.execute(f"SELECT count(*) FROM {table}").fetchall()
                == b.execute(f"SELECT count(*) FROM {table}").fetchall()
            )
    with pytest.raises(rdb.RunlensError, match="not empty"):
        copy_store(demo_db, lake)


def test_migrate_store_command_line(postgres, demo_db: Path, tmp_path: Path) -> None:
    location, env = new_lake(postgres, tmp_path / "data")
    out = run_cli("analytics", "migrate-store", "--from", str(demo_db), "--to", location, "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ok"] is True
    checked = run_cli("analytics", "doctor", "--db", location, env=env)
    assert checked.returncode == 0, checked.stdout


def test_maintain_compacts_and_keeps_the_data(lake: str, tmp_path: Path) -> None:
    ingest_paths([make_upload(tmp_path, i) for i in range(6)], db=lake)
    with rdb.reader(lake) as con:
        before = con.execute("SELECT count(*), sum(attempt_id) FROM attempts").fetchall()
    done = maintain(lake, keep=__import__("datetime").timedelta(0))
    assert done.expired_snapshots > 0 and done.seconds >= 0
    with rdb.reader(lake) as con:
        assert con.execute("SELECT count(*), sum(attempt_id) FROM attempts").fetchall() == before
    with pytest.raises(rdb.RunlensError, match="team store"):
        maintain(tmp_path / "file.duckdb")


def test_doctor_finds_what_a_lake_cannot_forbid(lake: str, tmp_path: Path) -> None:
    ingest_paths([make_upload(tmp_path, 1)], db=lake)
    with rdb.writer(lake) as con:
        con.execute("INSERT INTO runs (run_id, benchmark, agent, kind) VALUES ('run-1', 'team-bench', 'x', 'robot')")
        report = doctor.check(con, lake)
    assert not report.ok
    assert report.constraints["duplicate runs keys (run_id)"] == 1
    assert report.constraints["runs.kind outside {llm, agent, framework, human}"] == 1


def test_the_sql_console_reads_a_lake_and_nothing_else(lake: str, tmp_path: Path) -> None:
    from analytics.sql_console import run_query

    ingest_paths([make_upload(tmp_path, 1)], db=lake)
    assert run_query("SELECT count(*) AS n FROM attempts", db=lake).df["n"].tolist() == [40]
    refused = run_cli("analytics", "sql", "SELECT * FROM read_csv('/etc/passwd')", env={"RUNLENS_DB": lake})
    assert refused.returncode != 0 and "not allowed" in refused.stderr


@pytest.mark.slow
def test_a_lake_on_a_local_s3_server(postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts.servers import start_s3

    s3 = start_s3()
    try:
        s3.create_bucket("team")
        location, env = new_lake(postgres, tmp_path / "unused")
        env |= s3.env() | {"RUNLENS_LAKE_DATA_PATH": "s3://team/lake/"}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        ingest_paths([make_upload(tmp_path, i) for i in range(3)] + [FIXTURES / "good.jsonl"], db=location)
        done = maintain(location)  # flushes the inlined rows to Parquet on the server
        assert done.seconds >= 0
        assert any(key.startswith("lake/") and key.endswith(".parquet") for key in s3.list_keys("team"))
        monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH")  # readers use the data path stored in the lake
        with rdb.reader(location) as con:
            assert con.execute("SELECT count(*) FROM attempts").fetchall()[0][0] == 120 + 6
        # the SQL console's sandbox (external access off) reads the lake's files on the server
        from analytics.sql_console import run_query

        monkeypatch.setenv("RUNLENS_LAKE_DATA_PATH", "s3://team/lake/")  # as a team's machines set it
        scan = "SELECT count(*) AS n FROM attempts WHERE task_id || sample <> ''"  # reads the files, not the counts
        assert run_query(scan, db=location).df["n"].tolist() == [126]
    finally:
        s3.stop()


def test_snapshots_expired_by_another_process_do_not_break_this_one(lake: str, postgres, tmp_path: Path) -> None:
    ingest_paths([make_upload(tmp_path, 0)], db=lake)
    with rdb.reader(lake) as con:  # this process keeps the snapshot attached for the next reader
        pinned = lk.current_snapshot(con)
    ingest_paths([make_upload(tmp_path, 1)], db=lake)
    done = run_cli("analytics", "maintain", "--keep-days", "0", env={"RUNLENS_DB": lake})
    assert done.returncode == 0, done.stderr
    with pytest.raises(rdb.LakeError):
        lk.resolve_as_of(lk.parse(lake), pinned)  # gone
    assert [r.outcome for r in ingest_paths([make_upload(tmp_path, 2)], db=lake)] == ["ingested"]
    with rdb.reader(lake) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(3,)]
    other, env = new_lake(postgres, tmp_path / "other")  # a new lake's first lookups search every catalog
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RUNLENS_LAKE_DATA_PATH", env["RUNLENS_LAKE_DATA_PATH"])
        assert [r.outcome for r in ingest_paths([make_upload(tmp_path, 3)], db=other)] == ["ingested"]

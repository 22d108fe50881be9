"""export-parquet: the same schema as a folder of hive-partitioned Parquet files, read in place by every page."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from analytics import leaderboard as lb
from store import RunFilter
from store.export_parquet import export_parquet
from store.parquet import MARKER, ParquetFolderError
from tests.conftest import ROOT

TABLES = ("benchmarks", "tasks", "runs", "attempts", "steps", "texts", "error_labels", "ingest_log")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analytics", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def demo_export(demo_db_master: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The demo DB exported through the CLI: (duckdb file, parquet folder)."""
    out = tmp_path_factory.mktemp("pq") / "runlens-parquet"
    done = _cli("export-parquet", "--db", str(demo_db_master), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return demo_db_master, out


def test_export_writes_hive_partitions_and_a_marker(demo_export: tuple[Path, Path]) -> None:
    db, out = demo_export
    marker = json.loads((out / MARKER).read_text())
    assert marker["tables"]["attempts"]["partition_by"] == ["bench", "month"]
    assert list((out / "attempts").glob("bench=*/month=*/*.parquet"))
    assert list((out / "steps").glob("bench=*/month=*/*.parquet"))
    with rdb.reader(db) as con:
        for table in TABLES:
            n = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
            assert marker["tables"][table]["rows"] == n, table


def test_every_table_and_view_reads_back_identically(demo_export: tuple[Path, Path]) -> None:
    db, out = demo_export
    with rdb.reader(db) as src, rdb.reader(out) as pq:
        for table in (*TABLES, "v_attempts", "v_steps", "v_errors", "v_runs"):
            cols_src = src.execute(f"DESCRIBE {table}").fetchall()
            cols_pq = pq.execute(f"DESCRIBE {table}").fetchall()
            assert [c[:2] for c in cols_src] == [c[:2] for c in cols_pq], table
            order = ", ".join(str(i + 1) for i in range(len(cols_src)))
            sql = f"SELECT * FROM {table} ORDER BY {order} LIMIT 2000"
            assert src.execute(sql).fetchall() == pq.execute(sql).fetchall(), table


def test_leaderboard_report_equals_the_duckdb_one(demo_export: tuple[Path, Path]) -> None:
    db, out = demo_export
    a = _cli("leaderboard", "--db", str(db), "--json")
    b = _cli("leaderboard", "--db", str(out), "--json")
    assert a.returncode == 0 and b.returncode == 0, (a.stderr, b.stderr)
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert len(json.loads(a.stdout)) >= 1
    with rdb.reader(db) as con:
        bench = con.execute("SELECT min(benchmark) FROM runs").fetchall()[0][0]
        want = lb.leaderboard(con, RunFilter(benchmark=bench))
    with rdb.reader(out) as con:
        got = lb.leaderboard(con, RunFilter(benchmark=bench))
    assert want.to_dict("records") == got.to_dict("records")


def test_writers_refuse_a_parquet_folder(demo_export: tuple[Path, Path]) -> None:
    _, out = demo_export
    with pytest.raises(rdb.RunlensError, match="Parquet folder"), rdb.writer(out):
        pass
    before = rdb.db_version(out)
    from ingest.pipeline import ingest_paths

    with pytest.raises(rdb.RunlensError, match="Parquet folder"):
        ingest_paths([ROOT / "tests" / "fixtures" / "good.jsonl"], db=out)
    assert rdb.db_version(out) == before and before.startswith("parquet:")


def test_export_refuses_a_non_empty_folder_unless_overwriting(fixture_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "pq"
    export_parquet(fixture_db, out)
    with pytest.raises(ParquetFolderError, match="not empty"):
        export_parquet(fixture_db, out)
    marker = export_parquet(fixture_db, out, overwrite=True)
    assert marker["tables"]["attempts"]["rows"] == 6
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "keep.txt").write_text("mine")
    with pytest.raises(ParquetFolderError, match="holds no"):
        export_parquet(fixture_db, stray, overwrite=True)
    assert (stray / "keep.txt").read_text() == "mine"


def test_leaderboard_page_renders_from_the_parquet_folder(
    demo_export: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, out = demo_export
    monkeypatch.setenv("RUNLENS_DB", str(out))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    with rdb.reader(db) as con:
        agents = {a for (a,) in con.execute("SELECT DISTINCT agent FROM runs").fetchall()}
    shown = " ".join(str(df.value.to_string()) for df in at.dataframe)
    assert any(agent in shown for agent in agents)


def test_an_export_read_from_a_local_s3_server(
    demo_export: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/scale.md's recipe: the folder copied to a bucket, a local pointer folder holding the marker with its
    ``location``; httpfs comes from the PyPI package (nothing downloaded)."""
    import duckdb

    from scripts.servers import start_s3
    from store import lake_extensions

    db, out = demo_export
    s3 = start_s3()
    try:
        s3.create_bucket("team")
        for key, value in s3.env().items():
            monkeypatch.setenv(key, value)
        copier = duckdb.connect()
        lake_extensions.enable_s3(copier)
        for path in sorted(out.rglob("*.parquet")):
            rel = path.relative_to(out).as_posix()
            copier.execute(f"COPY (FROM read_parquet('{path}')) TO 's3://team/runlens/{rel}' (FORMAT parquet)")
        copier.close()
        pointer = tmp_path / "runlens-s3"
        pointer.mkdir()
        marker = json.loads((out / MARKER).read_text()) | {"location": "s3://team/runlens"}
        (pointer / MARKER).write_text(json.dumps(marker))
        b = _cli("leaderboard", "--db", str(pointer), "--json")
        a = _cli("leaderboard", "--db", str(db), "--json")
        assert b.returncode == 0, b.stderr
        assert json.loads(a.stdout) == json.loads(b.stdout)
    finally:
        s3.stop()

"""A lake keeps its long texts sorted by hash in small row groups (issue 33), so the drilldown's lookup of a step's
result by hash reads one row group per file: the ingest writes them in hash order, the lake's table option holds
the row-group size, and a store written before is rewritten in that order with the same rows. Its steps are kept
in row groups of their own size (reads of a few attempts decode less)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import store as rdb
from analytics import trajectory as tr
from bench.gen_logs import generate
from ingest.pipeline import ingest_paths
from store import lake


def _data_files(location: str, table: str) -> list[str]:
    with rdb.reader(location) as con:
        return [
            r[0]
            for r in con.execute("SELECT data_file FROM ducklake_list_files(current_database(), ?)", [table]).fetchall()
        ]


def _text_files(location: str) -> list[str]:
    return _data_files(location, "texts")


def _check_files(files: list[str]) -> int:
    """Every texts file of the lake in hash order, in row groups of at most TEXTS_ROW_GROUP_ROWS; its row count."""
    n = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        assert all(meta.row_group(i).num_rows <= lake.TEXTS_ROW_GROUP_ROWS for i in range(meta.num_row_groups))
        hashes = pq.read_table(f, columns=["text_hash"]).column(0).to_pylist()
        assert hashes == sorted(hashes), f
        n += len(hashes)
    return n


def test_ingested_texts_are_sorted_in_small_row_groups_and_found_by_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    files = generate(tmp_path / "logs", n_attempts=1500, n_runs=3, n_benchmarks=1, seed=33)
    ingest_paths(files, db=location, jobs=1)
    with rdb.reader(location) as con:
        option = con.execute(
            "SELECT value FROM ducklake_options(current_database()) WHERE option_name = 'parquet_row_group_size' "
            "AND scope_entry = 'main.texts'"
        ).fetchall()
        assert option == [(str(lake.TEXTS_ROW_GROUP_ROWS),)]
        texts = dict(con.execute("SELECT text_hash, text FROM texts").fetchall())
        long = con.execute(
            "SELECT attempt_id, step, result_hash FROM steps WHERE result_hash IS NOT NULL ORDER BY attempt_id, step"
        ).fetchall()
        assert texts
        assert _check_files(_text_files(location)) == len(texts)
        seen = 0
        for attempt_id in sorted({a for a, _, _ in long})[:: max(1, len(long) // 40)]:
            page = tr.steps_page(con, attempt_id=attempt_id, offset=0, limit=200).set_index("step")
            for a, step, digest in long:
                if a == attempt_id:
                    assert page.loc[step, "result_preview"] == texts[digest][: tr.PREVIEW_CHARS]
                    assert tr.step_result(con, attempt_id=a, step=step) == texts[digest]
                    seen += 1
        assert seen > 0
    # a store whose texts were written in any order: rewritten in hash order, the same rows
    with rdb.open(location).writer() as con:
        con.execute("BEGIN")
        assert lake.rewrite_texts_ordered(con) == len(texts)
        con.execute("COMMIT")
    with rdb.reader(location) as con:
        assert dict(con.execute("SELECT text_hash, text FROM texts").fetchall()) == texts
    assert _check_files(_text_files(location)) == len(texts)


def test_doctor_rewrite_texts_sorts_a_lake_written_in_any_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m analytics doctor --rewrite-texts``: a lake whose texts were written out of hash order (as before
    issue 33) gets them sorted in small row groups, the same rows, then the check runs; a file store is left as it
    is and says so."""
    from cli.main import main

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    ingest_paths(generate(tmp_path / "logs", n_attempts=600, n_runs=2, n_benchmarks=1, seed=5), db=location, jobs=1)
    with rdb.open(location).writer() as con, rdb.transaction(con):  # the former layout: texts in any order
        texts = dict(con.execute("SELECT text_hash, text FROM texts").fetchall())
        con.execute("CREATE TEMP TABLE shuffled AS SELECT text_hash, text FROM texts")
        con.execute("DELETE FROM texts")
        con.execute("INSERT INTO texts SELECT text_hash, text FROM shuffled ORDER BY text")  # one file, any order
    assert len(texts) > 2
    with pytest.raises(AssertionError):
        _check_files(_text_files(location))
    assert main(["doctor", "--db", location, "--rewrite-texts", "--no-rehash"]) == 0
    assert f"rewrote {len(texts):,} texts sorted by hash" in capsys.readouterr().out
    assert _check_files(_text_files(location)) == len(texts)
    with rdb.reader(location) as con:
        assert dict(con.execute("SELECT text_hash, text FROM texts").fetchall()) == texts
    file_store = tmp_path / "file.duckdb"
    ingest_paths(generate(tmp_path / "logs2", n_attempts=60, n_runs=1, n_benchmarks=1, seed=6), db=file_store, jobs=1)
    assert main(["doctor", "--db", str(file_store), "--rewrite-texts", "--no-rehash"]) == 1
    assert "this store is not a lake (left as it is)" in capsys.readouterr().out


def _row_groups(location: str, table: str) -> list[int]:
    metas = [pq.ParquetFile(f).metadata for f in _data_files(location, table)]
    return [m.row_group(i).num_rows for m in metas for i in range(m.num_row_groups)]


def _option(location: str, table: str) -> list[tuple[str]]:
    with rdb.reader(location) as con:
        return con.execute(
            "SELECT value FROM ducklake_options(current_database()) WHERE option_name = 'parquet_row_group_size' "
            "AND scope_entry = ?",
            [f"main.{table}"],
        ).fetchall()


def test_steps_are_written_in_the_lakes_row_groups_also_in_a_lake_written_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lake written before steps had their option (only texts') gets it at its next writer session; the steps
    written from then on are in row groups of that many rows, and read the same."""
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    monkeypatch.setattr(lake, "ROW_GROUP_ROWS", {"texts": lake.TEXTS_ROW_GROUP_ROWS})  # the former writer
    ingest_paths(generate(tmp_path / "a", n_attempts=300, n_runs=1, n_benchmarks=1, seed=7), db=location, jobs=1)
    assert _option(location, "steps") == [] and len(_row_groups(location, "steps")) == 1
    monkeypatch.setattr(lake, "ROW_GROUP_ROWS", {"texts": lake.TEXTS_ROW_GROUP_ROWS, "steps": 2048})
    monkeypatch.setattr(lake, "_ROW_GROUPS_SET", set())  # a new process
    (more,) = generate(tmp_path / "b", n_attempts=2000, n_runs=1, n_benchmarks=1, seed=8)  # about 10,000 steps
    more.write_text(more.read_text(encoding="utf-8").replace('"run-0', '"more-0'), encoding="utf-8")
    assert [r.outcome for r in ingest_paths([more], db=location, jobs=1)] == ["ingested"]
    assert _option(location, "steps") == [("2048",)] and _option(location, "texts") == [
        (str(lake.TEXTS_ROW_GROUP_ROWS),)
    ]
    groups = _row_groups(location, "steps")
    big = [g for g in groups if g > 2048]  # the first session's file, unless the small-file merge rewrote it
    assert len(big) <= 1 and len(groups) - len(big) > 3, groups
    with rdb.reader(location) as con:
        (n_steps,) = con.execute("SELECT count(*) FROM steps").fetchone()
    assert sum(groups) == n_steps

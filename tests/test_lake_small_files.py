"""A lake fed by small commits merges its small Parquet files as it goes (``store.lake.merge_small_files``, run at
the end of every writer session): the rows, their row ids and time travel stay as they were, and the count of small
files stays bounded however many commits come."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import store as rdb
from store import lake

TABLES = ("t0", "t1", "t2")


def _contents(con: object) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the test's tables with its DuckLake row id, in row-id order."""
    return {t: con.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid").fetchall() for t in TABLES}  # type: ignore[attr-defined]


def _data_files(catalog: Path, below: int | None = None) -> dict[str, int]:
    """Each table's count of current data files (those smaller than ``below`` bytes when it is given)."""
    with sqlite3.connect(catalog) as db:
        rows = db.execute(
            "SELECT t.table_name, count(*) FROM ducklake_data_file f JOIN ducklake_table t USING (table_id) "
            "WHERE f.end_snapshot IS NULL AND t.end_snapshot IS NULL AND f.file_size_bytes < ? GROUP BY 1",
            [below if below is not None else 2**62],
        ).fetchall()
    return {str(t): int(n) for t, n in rows}


def _small_files(catalog: Path) -> dict[str, int]:
    return {t: n for t, n in _data_files(catalog, lake.SMALL_FILE_BYTES).items() if t in TABLES}


def test_small_commits_are_merged_rows_row_ids_and_time_travel_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    monkeypatch.setattr(lake, "SMALL_FILES", 2)
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    catalog = lake.parse(location)
    with rdb.writer(location) as con:
        for t in TABLES:
            con.execute(f"CREATE TABLE {t} (k INTEGER, v VARCHAR)")
    snapshots: list[tuple[int, dict[str, list[tuple[object, ...]]]]] = []
    counts = []
    for i in range(6):
        with rdb.writer(location) as con:  # one commit: a file in each table (more rows than DuckLake inlines)
            con.execute("BEGIN")
            for t in TABLES:
                con.execute(f"INSERT INTO {t} SELECT range, ? || range FROM range(?, ?)", [t, i * 100, i * 100 + 100])
            if i == 3:
                con.execute("DELETE FROM t1 WHERE k % 7 = 0")  # a file with deletes is merged with its deletes
            con.execute("COMMIT")
            snapshots.append((int(lake.snapshot_id(catalog) or 0), _contents(con)))  # (merged as the session ends)
        counts.append(_small_files(catalog.catalog_file))
    # unmerged, each table would hold 6 files; one table is merged a session (the one with the most small files,
    # once it has 2), so none passes 2 + the count of tables written to
    assert max(max(c.values()) for c in counts) <= 2 + len(TABLES), counts
    assert sum(counts[-1].values()) < 6 * len(TABLES)
    for snapshot, contents in snapshots[2::2] + [snapshots[-1]]:  # read as written, row ids included
        with rdb.reader(location, as_of=str(snapshot)) as con:
            assert _contents(con) == contents
    with rdb.reader(location) as con:
        assert _contents(con) == snapshots[-1][1]
        assert con.execute("SELECT count(*) FROM t0").fetchall()[0][0] == 600


def test_no_merge_below_the_threshold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    with rdb.writer(location) as con:
        con.execute("CREATE TABLE t0 (k INTEGER, v VARCHAR)")
    for i in range(2):
        with rdb.writer(location) as con:
            con.execute("INSERT INTO t0 SELECT range, 'x' FROM range(?, ?)", [i * 100, i * 100 + 100])
            if i == 1:
                assert lake.merge_small_files(con) is None  # two small files, below the 16 that start a merge
    assert _small_files(lake.parse(location).catalog_file) == {"t0": 2}


def test_a_large_file_read_in_parts_makes_one_data_file_a_table_with_the_rows_of_the_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    from bench.gen_logs import generate
    from ingest import pipeline
    from ingest.pipeline import ingest_paths

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    [path] = generate(tmp_path / "logs", n_attempts=600, n_runs=1, seed=3)
    whole = f"ducklake:sqlite:{tmp_path / 'whole.lake'}"
    ingest_paths([path], db=whole, jobs=1)
    monkeypatch.setattr(pipeline, "CHUNK_BYTES", 64 * 1024)  # parts of about 40 attempts
    assert path.stat().st_size > 8 * 64 * 1024
    parts = f"ducklake:sqlite:{tmp_path / 'parts.lake'}"
    [result] = ingest_paths([path], db=parts, jobs=1)
    assert result.outcome == "ingested"
    tables = ("attempts", "steps", "error_labels", "texts")
    found = {}
    for location in (whole, parts):
        with rdb.reader(location) as con:
            rows = {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
        found[location] = (_data_files(lake.parse(location).catalog_file), rows)
    assert found[parts][1] == found[whole][1] and len(found[parts][1]["steps"]) > 1000
    # one Parquet file a table as for the file read whole, not one a part
    assert (
        {t: found[parts][0].get(t) for t in tables}
        == {t: found[whole][0].get(t) for t in tables}
        == {t: 1 for t in tables}
    )

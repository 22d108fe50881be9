"""``run_task_tmf`` (migration 012, store/tmf_rows.py): the Tech-Market-Fit page's (run, task) rows on integer codes,
``run_task_board`` (migration 013): the Leaderboard's, on the same codes, ``run_health_sums`` (migration 014):
each run's counts that run health sums, and each coded task's level, category and listing (migration 015) and human
minutes (016); kept by the writer. After an ingest, a deletion, late scores, replaced attempts, judge labels and rule
findings the rows, read back by their codes' run and task ids, equal a recomputation from ``run_task_stats``, and
every code is one run's or one (benchmark, task)'s; on the demo and on a generated store, on a file store and a
local lake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import store as rdb
from store import aggregates, tmf_rows
from tests.migration_support import roll_back
from tests.test_aggregates import assert_same, change_attempts, generated_logs  # noqa: F401  (a fixture)


def stored(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.stored_sql}) ORDER BY run_id, task_id")


def expected(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.expected_sql}) ORDER BY run_id, task_id")


def board_stored(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.board_stored_sql}) ORDER BY run_id, task_id")


def board_expected(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.board_expected_sql}) ORDER BY run_id, task_id")


def health_stored(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.health_stored_sql}) ORDER BY run_id")


def health_expected(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.health_expected_sql}) ORDER BY run_id")


def kinds_stored(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.kinds_stored_sql}) ORDER BY benchmark, task_id")


def kinds_expected(con: Any) -> Any:
    return rdb.query_df(con, f"SELECT * FROM ({tmf_rows.kinds_expected_sql}) ORDER BY benchmark, task_id")


def check(db: str | Path) -> None:
    """The rows equal the recomputation; codes are unique; no row or code of a run that is gone."""
    with rdb.reader(db) as con:
        rows = stored(con)
        assert len(rows) > 0
        assert_same(rows, expected(con), "run_task_tmf")
        board = board_stored(con)
        assert len(board) == len(rows)
        assert_same(board, board_expected(con), "run_task_board")
        sums = health_stored(con)
        assert len(sums) > 0
        assert_same(sums, health_expected(con), "run_health_sums")
        # migrations 015 and 016: each coded task's level, category, listing and human minutes, as tasks has them
        kinds = kinds_stored(con)
        assert len(kinds) > 0 and kinds["is_listed"].all() and kinds["level"].notna().any()
        assert kinds["human_minutes"].notna().any()
        assert_same(kinds, kinds_expected(con), "tmf_task_codes")
        dup = "SELECT count(*) FROM (SELECT {k} FROM {t} GROUP BY {k} HAVING count(*) > 1)"
        for table, key in [
            ("tmf_run_codes", "run_id"),
            ("tmf_run_codes", "run_code"),
            ("tmf_task_codes", "benchmark, task_id"),
            ("tmf_task_codes", "task_code"),
            ("run_task_tmf", "run_code, task_code"),
            ("run_task_board", "run_code, task_code"),
            ("run_health_sums", "run_code"),
        ]:
            assert rdb.query_rows(con, dup.format(k=key, t=table))[0][0] == 0, (table, key)
        orphans = rdb.query_rows(
            con,
            "SELECT count(*) FROM tmf_run_codes c WHERE c.run_id NOT IN (SELECT run_id FROM runs)",
        )[0][0]
        assert orphans == 0
        # a row's task code is one of its run's benchmark
        wrong = rdb.query_rows(
            con,
            "SELECT count(*) FROM run_task_tmf t JOIN tmf_run_codes rc USING (run_code) JOIN runs r USING (run_id) "
            "JOIN tmf_task_codes tc USING (task_code) WHERE tc.benchmark <> r.benchmark",
        )[0][0]
        assert wrong == 0


def test_demo_rows_equal_their_recomputation_before_and_after_changes(demo_db: Path) -> None:
    check(demo_db)
    with rdb.reader(demo_db) as con:
        n_before = len(stored(con))
    change_attempts(demo_db)
    check(demo_db)
    with rdb.reader(demo_db) as con:
        assert len(stored(con)) < n_before  # the deleted run's rows went


@pytest.mark.parametrize("backend", ["file", "local lake"])
def test_generated_store_rows_equal_their_recomputation_after_ingest_delete_and_update(
    generated_logs: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    from ingest.pipeline import ingest_paths

    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    db: str | Path = tmp_path / "gen.duckdb" if backend == "file" else f"ducklake:sqlite:{tmp_path / 'gen.lake'}"
    files = sorted(generated_logs.glob("*"))
    assert {r.outcome for r in ingest_paths(files[:-1], db=db, jobs=1)} == {"ingested"}
    check(db)
    assert [r.outcome for r in ingest_paths(files[-1:], db=db, jobs=1)] == ["ingested"]
    check(db)
    change_attempts(db)
    check(db)


def test_migration_012_backfills_an_older_store(demo_db: Path) -> None:
    """A store at version 11 gets the tables from its run_task_stats when a writer first opens it."""
    with rdb.writer(demo_db) as con:
        before = stored(con)
        assert "run_task_tmf" in roll_back(con, 11)
    with rdb.writer(demo_db) as con:
        assert rdb.schema_version(con) == rdb.latest_version()
        assert len(before) > 0
        assert_same(stored(con), before, "backfilled")
    check(demo_db)


NEW_CODES = "tmf_task_codes_016"  # migration 016 makes tmf_task_codes again under this name (none after it)


@pytest.mark.parametrize(
    ("version", "dropped", "backfilled", "untouched"),
    [
        (12, ["run_task_board", "run_health_sums", NEW_CODES], board_stored, stored),  # 013: the Leaderboard's rows
        (13, ["run_health_sums", NEW_CODES], health_stored, board_stored),  # 014: each run's sums
        (14, [NEW_CODES], kinds_stored, board_stored),  # 015: each coded task's level, category and listing
        # 016: each coded task's human minutes (015 and 016 in one transaction from 014: the table altered and
        # updated, then made again)
        (15, [NEW_CODES], kinds_stored, board_stored),
    ],
    ids=["013", "014", "015", "016"],
)
def test_a_migration_backfills_an_older_store(
    demo_db: Path, version: int, dropped: list[str], backfilled: Any, untouched: Any
) -> None:
    """A store at ``version`` gets the migration's kept rows from its run_task_stats and 012's codes; the rows of
    earlier migrations stay as they were."""
    with rdb.writer(demo_db) as con:
        before, kept = backfilled(con), untouched(con)
        assert roll_back(con, version) == dropped
    with rdb.writer(demo_db) as con:
        assert rdb.schema_version(con) == rdb.latest_version()
        assert len(before) > 0
        assert_same(backfilled(con), before, "backfilled")
        assert_same(untouched(con), kept, "earlier rows untouched")
    check(demo_db)


def test_refresh_of_every_pair_equals_the_recomputation(demo_db: Path) -> None:
    with rdb.writer(demo_db) as con:
        before = stored(con)
        pairs = [(str(r), str(t)) for r, t in rdb.query_rows(con, "SELECT DISTINCT run_id, task_id FROM attempts")]
        with rdb.transaction(con):
            for table in tmf_rows.TABLES:
                con.execute(f"DELETE FROM {table}")
            aggregates.refresh_pairs(con, pairs)
        assert_same(stored(con), before, "refreshed")


def test_a_deleted_run_takes_its_rows_and_code(demo_db: Path) -> None:
    from store.delete import delete_run_con

    count = "SELECT count(*) FROM {} JOIN tmf_run_codes USING (run_code) WHERE run_id = ?"
    with rdb.writer(demo_db) as con:
        run = rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id LIMIT 1")[0][0]
        for table in tmf_rows.CODED:
            assert rdb.query_rows(con, count.format(table), [run])[0][0] > 0
        delete_run_con(con, run, actor="test")
        for table in tmf_rows.CODED:
            assert rdb.query_rows(con, count.format(table), [run])[0][0] == 0
        assert rdb.query_rows(con, "SELECT count(*) FROM tmf_run_codes WHERE run_id = ?", [run])[0][0] == 0

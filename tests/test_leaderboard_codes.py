"""The leaderboard's per (run, task) read with run and task keys as integer codes (issue 33) gives the frame of
``task_outcome_rows.sql`` in (run, task) order (the text keys, as the version diff reads them): the same columns,
dtypes, values and order, on the demo and on a generated store, for every benchmark, with and without errored
attempts, for all runs, one run, and none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics.leaderboard import load as lb_load
from analytics.sqlfiles import load_sql
from tests.conftest import ROOT


def compare(db: str | Path) -> int:
    n = 0
    with rdb.reader(db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            runs = [
                r[0]
                for r in rdb.query_rows(con, "SELECT run_id FROM runs WHERE benchmark = ? ORDER BY 1 DESC", [bench])
            ]
            for run_ids in (runs, runs[:1], []):
                for leave_out in (False, True):
                    params: dict[str, Any] = {"run_ids": run_ids, "exclude_errored": leave_out}
                    text = rdb.query_df(con, f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id", params)
                    coded = lb_load._coded_outcomes(con, params, bench)
                    pd.testing.assert_frame_equal(coded, text, check_exact=True)
                    # a task missing from the tasks table (or no benchmark): the text keys are read
                    coded = lb_load._coded_outcomes(con, params, None)
                    pd.testing.assert_frame_equal(coded, text, check_exact=True)
                    n += len(text)
    return n


def test_demo_codes_give_the_text_keys_frame(demo_db: Path) -> None:
    assert compare(demo_db) > 0


def test_codes_in_any_order_give_the_text_keys_frame_and_a_wrong_kept_row_is_seen(demo_db: Path) -> None:
    """The kept rows' codes are any integers (a run or task coded later gets the next one): with every run's and
    task's code reversed, the rows come in another order than their keys' and are put back in it; and a kept row
    that differs from run_task_stats makes the frames differ (the comparison can fail)."""
    with rdb.writer(demo_db) as con, rdb.transaction(con):
        for code, tables in (
            ("run_code", ("tmf_run_codes", "run_task_tmf", "run_task_board")),
            ("task_code", ("tmf_task_codes", "run_task_tmf", "run_task_board")),
        ):
            top = rdb.query_rows(con, f"SELECT max({code}) FROM {tables[0]}")[0][0]
            for table in tables:
                con.execute(f"UPDATE {table} SET {code} = {2 * int(top) + 1000} - {code}")  # no old code
    assert compare(demo_db) > 0
    assert compare_boards(demo_db) > 0  # the board's rows, read out of order, are taken in order by their places
    with rdb.writer(demo_db) as con:
        con.execute(
            "UPDATE run_task_board SET n_scored_passed = n_scored_passed + 1 WHERE (run_code, task_code) = "
            "(SELECT (run_code, task_code) FROM run_task_board WHERE n_scored > n_scored_passed ORDER BY ALL LIMIT 1)"
        )
    with pytest.raises(AssertionError):
        compare(demo_db)


def test_a_wrong_kept_level_is_seen_and_an_unlisted_task_reads_the_text_keys(demo_db: Path) -> None:
    """The board's tasks' level and category are the ones kept on their codes (migration 015): a wrong one makes
    the board differ from the one with the tasks table's (the comparison can fail); a coded task whose kept
    listing says the tasks table lacks it sends the board to its text keys, which give the same board."""
    query = (
        "SELECT c.task_code, c.benchmark FROM tmf_task_codes c WHERE c.level IS NOT NULL AND c.task_code IN "
        "(SELECT task_code FROM run_task_board) ORDER BY 1 LIMIT 1"
    )
    with rdb.writer(demo_db) as con:
        code, bench = rdb.query_rows(con, query)[0]
        con.execute("UPDATE tmf_task_codes SET is_listed = false WHERE task_code = ?", [code])
    assert compare_boards(demo_db, listed=False, only=bench) > 0
    with rdb.writer(demo_db) as con:
        con.execute("UPDATE tmf_task_codes SET is_listed = true, level = level || '-wrong' WHERE task_code = ?", [code])
    with pytest.raises(AssertionError):
        compare_boards(demo_db, only=bench)


@pytest.fixture(scope="module")
def generated_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen")
    cmd = [sys.executable, str(ROOT / "bench" / "gen_logs.py"), "--attempts", "2000", "--runs", "6"]
    cmd += ["--benchmarks", "2", "--out", str(out), "--seed", "7"]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def generated_lake(generated_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The generated logs ingested into a local lake once for the module: the tests below only read it."""
    from ingest.pipeline import ingest_paths

    db = f"ducklake:sqlite:{tmp_path_factory.mktemp('gen-lake') / 'gen.lake'}"
    with pytest.MonkeyPatch.context() as m:
        m.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
        assert {r.outcome for r in ingest_paths(sorted(generated_logs.glob("*")), db=db, jobs=1)} == {"ingested"}
    return db


def test_generated_lake_codes_give_the_text_keys_frame(generated_lake: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    assert compare(generated_lake) > 0


def compare_boards(db: str | Path, *, listed: bool = True, only: str | None = None) -> int:
    """The leaderboard through the task codes (``load.board_rows``: no id per row, the rows in the order read, each
    task's level and category as kept on its code) equals the leaderboard of the same rows by their text keys, given
    with the runs in another order (so the rows are picked and reordered, and every task id hashed) and each task's
    level and category from the tasks table, for every benchmark, with and without errored attempts, every slice
    kind. ``listed`` false: a coded task may be unlisted (the rows are then read by their text keys); ``only``: that
    benchmark alone."""
    from analytics import leaderboard as lb
    from analytics.compare import ranking_metric as compare_metric
    from analytics.leaderboard import compute as lb_compute
    from analytics.runs import load_runs
    from tests.test_aggregates import assert_same

    n = 0
    with rdb.reader(db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            if only is not None and bench != only:
                continue
            rf = rdb.RunFilter(benchmark=bench)
            runs = load_runs(con, rf)
            for leave_out in (False, True):
                coded, codes = lb_load.coded_task_outcomes(con, rf, runs=runs, exclude_errored=leave_out)
                assert (codes is not None and len(codes) == len(coded)) or not listed
                board = lb.leaderboard(con, rf, exclude_errored=leave_out)
                # the runs in reverse order, each run's tasks in theirs (the rows a run's means are summed over)
                by_text = coded.sort_values("run_id", ascending=False, kind="stable").reset_index(drop=True)
                # each task's level and category from the tasks table itself, not the ones kept on its code
                tasks = rdb.query_df(con, "SELECT task_id, level, category FROM tasks WHERE benchmark = ?", [bench])
                at = pd.Index(tasks["task_id"]).get_indexer(by_text["task_id"])
                for col in ("level", "category"):
                    by_text[col] = np.where(at >= 0, tasks[col].to_numpy(dtype=object)[np.maximum(at, 0)], None)
                _, scoring, _ = lb_load.ranked_score(con, benchmark=bench, scorer=None)
                read = lb_load.board_rows(con, rf, runs=runs, exclude_errored=leave_out)
                assert read is None or read.scoring == scoring  # read with the keys, as its own statement gives it
                metric = compare_metric(scoring)
                want = lb_compute.with_scale(
                    lb.leaderboard_rows(runs, by_text, metric=metric), runs, scoring=scoring, scorer=None
                )
                assert_same(board, want, f"{bench} {leave_out}")
                n += len(board)
    return n


def test_demo_leaderboard_by_codes_equals_it_by_text_keys(demo_db: Path) -> None:
    assert compare_boards(demo_db) > 0


def test_the_scoring_read_with_the_keys_is_the_benchmarks(demo_db: Path) -> None:
    """The board's keys' statement reads the benchmark's scoring (``BoardRows.scoring``): the one
    ``benchmark_scoring`` reads, binary and graded, and the graded board ranks by mean score."""
    from analytics import leaderboard as lb
    from analytics.runs import load_runs

    db = demo_db  # the test's own copy
    with rdb.reader(db) as con:
        bench = rdb.query_rows(con, "SELECT min(benchmark) FROM runs")[0][0]
        before = lb_load.benchmark_scoring(con, benchmark=bench)
    with rdb.writer(db) as con:
        con.execute("UPDATE benchmarks SET scoring = 'graded' WHERE benchmark = ?", [bench])
    with rdb.reader(db) as con:
        rf = rdb.RunFilter(benchmark=bench)
        read = lb_load.board_rows(con, rf, runs=load_runs(con, rf))
        assert read is not None and read.scoring == lb_load.benchmark_scoring(con, benchmark=bench) == "graded"
        assert before != "graded" and set(lb.leaderboard(con, rf)["metric"]) == {"mean_score"}


def test_generated_lake_leaderboard_by_codes_equals_it_by_text_keys(
    generated_lake: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    assert compare_boards(generated_lake) > 0


def compare_slice_subsets(db: str | Path) -> int:
    """The board of some slice kinds (the Leaderboard page computes "all" and the breakdown shown) is the full
    board's rows of those slices, value for value: no slice's ranks, tests or intervals depend on another's."""
    from analytics import leaderboard as lb
    from tests.test_aggregates import assert_same

    n = 0
    with rdb.reader(db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            rf = rdb.RunFilter(benchmark=bench)
            for leave_out in (False, True):
                full = lb.leaderboard(con, rf, exclude_errored=leave_out)
                for kinds in (("all", "level"), ("all", "category"), ("all",)):
                    part = lb.leaderboard(con, rf, exclude_errored=leave_out, slices=kinds)
                    keep = full["slice"].map(lambda s, kinds=kinds: s == "all" or s.split("=", 1)[0] in kinds)
                    want = full[keep].reset_index(drop=True)
                    assert_same(part, want, f"{bench} {leave_out} {kinds}")
                    n += int(part["slice"].ne("all").sum())
    return n


def test_demo_leaderboard_of_some_slices_is_the_full_boards_rows(demo_db: Path) -> None:
    assert compare_slice_subsets(demo_db) > 0


def test_generated_lake_leaderboard_of_some_slices_is_the_full_boards_rows(
    generated_lake: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    assert compare_slice_subsets(generated_lake) > 0


def test_task_places_of_codes_equal_those_of_the_codes_as_objects() -> None:
    """The verdicts' task places from integer codes (counted) equal those of the same codes hashed as objects."""
    import numpy as np

    from analytics.leaderboard import verdicts

    rng = np.random.default_rng(3)
    for codes in (rng.integers(0, 50, 400), rng.permutation(1000)[:300], np.array([7]), np.array([0, 0, 5, 2, 5])):
        place, names = verdicts._task_places(codes.astype(np.int64))
        want_place, want_names = verdicts._task_places(codes.astype(object))
        assert place.tolist() == want_place.tolist()
        assert names.dtype == want_names.dtype == object
        assert names.tolist() == want_names.tolist() and all(type(v) is int for v in names)

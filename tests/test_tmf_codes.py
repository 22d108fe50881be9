"""The TMF page's work without what grows with its (run, task) rows (issue 33): the rows read with their run's and
task's position instead of their ids' text, and the analysis on integer codes, give the same results as the
rows' details attached by id and the analysis hashing ids (the path a hand-built frame still takes).

On the demo store and on a generated one: the rows of ``load`` equal ``attach_details`` of the three reads of
before, and every analysis of the page (overall with its bootstrap, every period, the level and category slices)
is the same, value for value, with and without the code columns, for Pass@1, the mean score with repricing from
tokens and the hull, and the latency axis with a human time.
"""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analytics import compare, stats, tmf
from analytics.sqlfiles import load_sql
from analytics.tmf.analysis import slice_rows
from analytics.tmf.codes import (
    CODE_COLUMNS,
    factorize_codes,
    factorize_ids,
    first_rows,
    ids_in,
    last_rows,
    stable_order,
)
from analytics.tmf.overview import PreparedOverview
from store import RunFilter, query_df, query_rows, reader, with_run_filter
from tests.test_aggregates import assert_same

tmf_load = importlib.import_module("analytics.tmf.load")  # the module (``tmf.load`` is its function)
tmf_codes = importlib.import_module("analytics.tmf.codes")
tmf_model = importlib.import_module("analytics.tmf.model")

ROOT = Path(__file__).resolve().parent.parent

OPTIONS = (
    tmf.TmfOptions(n_replicates=60, n_boot=60),
    tmf.TmfOptions(
        performance="mean_score", cost_source="tokens", is_repriced=True, supply="hull", n_replicates=60, n_boot=60
    ),
    tmf.TmfOptions(axis="latency", human_minutes=7.0, n_replicates=60, n_boot=60),
)


def rows_by_id(con: object, run_filter: RunFilter) -> pd.DataFrame:
    """The rows as ``load`` built them before: three reads, the details attached by id (``attach_details``)."""
    params = dataclasses.replace(run_filter, with_humans=True).params()
    outcomes = query_df(con, load_sql("tmf_run_tasks"), params)  # type: ignore[arg-type]
    runs = query_df(
        con,  # type: ignore[arg-type]
        with_run_filter(
            f"""SELECT {", ".join(tmf.RUN_COLUMNS)}, {compare.IS_BASELINE_SQL} AS is_baseline FROM runs r
            WHERE r.benchmark = $benchmark AND $run_filter ORDER BY r.eval_date NULLS LAST, r.agent, r.run_id"""
        ),
        params,
    )
    tasks = query_df(
        con,  # type: ignore[arg-type]
        f"SELECT {', '.join(tmf.TASK_COLUMNS)} FROM tasks WHERE benchmark = ?",
        [run_filter.benchmark],
    )
    return tmf.attach_details(outcomes, runs, tasks)


def page_analyses(inputs: tmf.TmfInputs, opt: tmf.TmfOptions) -> tuple[tmf.Overview, ...]:
    """Everything the page computes from the rows (and the category slices), for ``opt``."""
    sliced = slice_rows(inputs)
    prepared = PreparedOverview(
        tmf.prepare(inputs, options=opt.supply_side(), sliced=sliced),
        tuple(tmf.prepare_periods(inputs, options=opt.supply_side(), freq="quarter", sliced=sliced)),
        {kind: tmf.prepare_slices(inputs, kind=kind, options=opt.supply_side()) for kind in ("level", "category")},
    )
    return (tmf.finish_overview(prepared, opt),)


def check_slices(inputs: tmf.TmfInputs) -> None:
    """The slices, their names and the task table from codes equal those of the frame functions."""
    rows = inputs.with_details()
    assert_same(inputs.task_table, rows.loc[~rows["task_id"].duplicated(), tmf.TASK_COLUMNS])
    for kind in ("level", "category"):
        names = inputs.slice_names(kind)
        assert names == tmf.slice_names(rows, kind)
        values = rows[kind].dropna().astype(str).unique().tolist()
        for name in [*names, *(f"{kind}={v}" for v in values), f"{kind}=absent", "all"]:
            assert_same(inputs.slice(name), tmf.slice_tasks(inputs.tasks, name), name)
    with pytest.raises(tmf.TmfError):
        inputs.slice("level=")


def check_store(db: str | Path) -> int:
    """Compare both ways on every benchmark of ``db``; the number of (run, task) rows compared."""
    n_rows = 0
    with reader(db) as con:
        benchmarks = [r[0] for r in query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY 1")]
        for bench in benchmarks:
            rf = RunFilter(benchmark=bench)
            inputs = tmf.load(con, rf)
            plain = inputs.with_details().drop(columns=[c for c in CODE_COLUMNS.values() if c in inputs.tasks])
            assert_same(plain, rows_by_id(con, rf), f"{bench} rows")
            assert inputs.runs is not None and "kind" not in inputs.tasks  # run details once per run
            assert "run_code" in inputs.tasks
            n_rows += len(plain)
            by_id = tmf.TmfInputs(bench, plain, inputs.abilities)
            check_slices(inputs)
            for opt in OPTIONS:
                full = page_analyses(inputs, opt)
                assert_same(full, page_analyses(by_id, opt), f"{bench} {opt}")
                # the page reads only the row columns its options use: the same rows and the same analyses
                wanted = tmf_load.row_columns_for(opt.performance, opt.cost_source, opt.is_repriced)
                lean = tmf.load(con, rf, row_columns=wanted)
                dropped = [c for c in tmf_load.ROW_COLUMNS if c not in wanted]
                assert not set(dropped) & set(lean.tasks.columns)
                assert_same(lean.tasks, inputs.tasks.drop(columns=dropped), f"{bench} lean rows")
                assert_same(page_analyses(lean, opt), full, f"{bench} {opt} lean")
    return n_rows


def test_demo_analyses_are_the_same_on_codes_and_on_ids(demo_db: Path) -> None:
    assert check_store(demo_db) > 0


@pytest.fixture(scope="module")
def generated_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small generated local lake (bench/gen_logs.py: 8 runs over 2 benchmarks, 3,000 attempts)."""
    from ingest.pipeline import ingest_paths

    out = tmp_path_factory.mktemp("gen")
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen_logs.py"), "--attempts", "3000", "--runs", "8"]
        + ["--benchmarks", "2", "--out", str(out / "logs"), "--seed", "5"],
        check=True,
        capture_output=True,
    )
    db = f"ducklake:sqlite:{out / 'gen.lake'}"
    assert {r.outcome for r in ingest_paths(sorted((out / "logs").glob("*")), db=db, jobs=1)} == {"ingested"}
    return db


def test_generated_store_analyses_are_the_same_on_codes_and_on_ids(
    generated_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    assert check_store(generated_store) > 0


def test_a_task_the_benchmark_does_not_list_leaves_the_task_code_out() -> None:
    """Rows naming a task missing from the tasks read get empty details and no ``task_code`` (not a code per task)."""
    runs = pd.DataFrame({c: ["r1", "r2"] if c == "run_id" else [None, None] for c in tmf.RUN_COLUMNS})
    tasks = pd.DataFrame({"task_id": ["a"], "level": ["L1"], "category": ["c"], "human_minutes": [3.0]})
    outcomes = {
        "run_at": np.array([0, 0, 1]),
        "task_at": np.array([0, -1, 0]),
        "task_id": np.array(["a", "zz", "a"], dtype=object),
        "n": np.array([1, 1, 1]),
    }
    rows = tmf_load.details_by_code(outcomes, runs, tasks)
    assert "task_code" not in rows and rows["run_code"].tolist() == [0, 0, 1]
    assert rows["run_id"].tolist() == ["r1", "r1", "r2"]
    assert rows["level"].tolist() == ["L1", None, "L1"] and np.isnan(rows["human_minutes"][1])


def test_the_rows_frame_built_a_column_at_a_time_equals_the_one_built_at_once() -> None:
    """``details_by_code``'s frame, built column by column (each in its own block), has the columns, order, dtypes,
    index and values ``pd.DataFrame`` gives the same columns at once: text with None, floats with NaN, integers,
    booleans, datetimes, Series and arrays, and no rows."""
    rng = np.random.default_rng(9)
    for n in (0, 1, 5, 257):
        ids = np.array([f"t{i}" if i % 4 else None for i in range(n)], dtype=object)
        floats = rng.random(n)
        floats[::3] = np.nan
        columns: dict[str, object] = {
            "run_id": pd.Series(ids),
            "task_id": ids,
            "level": pd.Series(ids).where(pd.Series(floats > 0.5), None),
            "human_minutes": pd.Series(floats),
            "n": rng.integers(0, 9, n),
            "c": floats * 2,
            "is_baseline": pd.Series(floats > 0.2),
            "eval_date": pd.Series(pd.to_datetime(rng.integers(0, 10**9, n), unit="s")),
            "run_code": rng.integers(0, 3, n),
        }
        got = tmf_load._unconsolidated_frame(columns, n)
        pd.testing.assert_frame_equal(got, pd.DataFrame(columns), check_exact=True)
        assert list(got.columns) == list(columns)


def test_code_helpers_equal_pandas_on_random_rows() -> None:
    """``factorize_ids``, ``ids_in``, ``first_rows`` and ``stable_order`` against pandas and numpy, with and
    without the code column, on rows in any order."""
    rng = np.random.default_rng(4)
    for trial in range(30):
        n = int(rng.integers(0, 60))
        codes = rng.integers(0, 7, n)
        if trial % 2:
            codes = np.sort(codes)
        names = np.array([f"run-{c}" for c in range(7)], dtype=object)
        rows = pd.DataFrame({"run_id": names[codes], "run_code": codes})
        want_codes, want_ids = pd.factorize(rows["run_id"])
        for frame in (rows, rows[["run_id"]]):
            got_codes, got_ids = factorize_ids(frame, "run_id")
            np.testing.assert_array_equal(got_codes, want_codes)
            pd.testing.assert_index_equal(got_ids, want_ids)
            wanted = {"run-1", "run-4", "other"}
            np.testing.assert_array_equal(ids_in(frame, "run_id", wanted), rows["run_id"].isin(wanted).to_numpy())
        np.testing.assert_array_equal(first_rows(want_codes), np.unique(want_codes, return_index=True)[1])
        last = np.full(len(want_ids), -1, dtype=np.int64)
        np.maximum.at(last, want_codes, np.arange(n))
        np.testing.assert_array_equal(last_rows(want_codes), last)
        np.testing.assert_array_equal(stable_order(codes), np.argsort(codes, kind="stable"))


def test_the_irt_check_and_an_analysis_without_abilities_read_the_same(demo_db: Path) -> None:
    """``has_irt_fit`` asks without reading the abilities and says what ``irt_abilities`` being non-empty says
    (no fit; a newest fit without abilities; one with), and so does the runs' statement of ``load`` and the first
    view (``prepare_current``); the page's analysis of Pass@1 reads no abilities and is the
    same as with them read; the IRT analysis still reads them."""
    from store import writer

    bench = "ad-bench"
    rf = RunFilter(benchmark=bench)

    def agrees() -> bool:
        with reader(demo_db) as con:
            has = tmf.has_irt_fit(con, benchmark=bench)
            assert has == (not tmf.irt_abilities(con, benchmark=bench).empty)
            # the page's first view reads it with the runs
            assert tmf.load(con, rf, with_abilities=False).has_irt_fit is has
            assert tmf.prepare_current(con, rf, options=tmf.TmfOptions(n_replicates=0)).has_irt_fit is has
            return has

    assert not agrees()
    with reader(demo_db) as con:
        agent, version = query_rows(con, "SELECT agent, agent_version FROM runs WHERE benchmark = ? LIMIT 1", [bench])[
            0
        ]
    with writer(demo_db) as con:
        con.execute(
            "INSERT INTO irt_fits VALUES ('k-old', ?, '1pl', NULL, TIMESTAMP '2026-01-01', 1, 0, NULL)", [bench]
        )
        con.execute(
            "INSERT INTO irt_abilities (fit_key, subject, agent, agent_version, ability, ability_lo, ability_hi)"
            " VALUES ('k-old', ?, ?, ?, 0.5, 0.1, 0.9)",
            [f"{agent} {version}".strip(), agent, version],
        )
    assert agrees()
    with writer(demo_db) as con:  # a newer fit without abilities hides the older one
        con.execute(
            "INSERT INTO irt_fits VALUES ('k-new', ?, '1pl', NULL, TIMESTAMP '2026-02-01', 1, 0, NULL)", [bench]
        )
    assert not agrees()
    with writer(demo_db) as con:
        con.execute(
            "INSERT INTO irt_abilities (fit_key, subject, agent, agent_version, ability, ability_lo, ability_hi)"
            " VALUES ('k-new', ?, ?, ?, 1.5, 1.0, 2.0)",
            [f"{agent} {version}".strip(), agent, version],
        )
    assert agrees()
    with writer(demo_db) as con:  # a newer fit of another benchmark, without abilities, is not this one's newest
        con.execute(
            "INSERT INTO irt_fits VALUES ('k-other', 'other-bench', '1pl', NULL, TIMESTAMP '2026-03-01', 1, 0, NULL)"
        )
    assert agrees()
    with reader(demo_db) as con:
        without = tmf.load(con, rf, with_abilities=False)
        full = tmf.load(con, rf)
        assert without.abilities.empty and list(without.abilities.columns) == list(full.abilities.columns)
        assert full.abilities["fit_key"].tolist() == ["k-new"]
        opt = tmf.TmfOptions(n_replicates=40, n_boot=40)
        movie = tuple(tmf.prepare_periods(full, options=opt))
        assert_same(
            tmf.overview(con, rf, options=opt),
            tmf.finish_overview(
                PreparedOverview(
                    tmf.prepare(full, options=opt),
                    movie,
                    {"level": tmf.prepare_slices(full, kind="level", options=opt)},
                    tuple(label for label, _ in movie),
                ),
                opt,
            ),
        )
        irt = tmf.overview(con, rf, options=tmf.TmfOptions(performance="irt"))
        assert irt.overall is not None and np.isfinite(irt.overall.points["performance"]).sum() >= 1


def test_rows_with_a_task_the_benchmark_does_not_list_come_in_task_id_order(demo_db: Path) -> None:
    """``load`` orders the rows by the task's code, which is its id's order only when every task is listed: with a
    task missing from the benchmark's tasks (taken out here by hand, with its code's kept listing and details as the
    writer gives an unlisted task's: migrations 015 and 016), the rows are read again in task id order and keep
    that task's id: the same frame as the details attached by id."""
    from store import writer

    with reader(demo_db) as con:
        bench, task = query_rows(
            con,
            "SELECT t.benchmark, min(t.task_id) FROM tasks t JOIN runs r USING (benchmark)"
            " GROUP BY 1 ORDER BY count(DISTINCT r.run_id) DESC, 1 LIMIT 1",
        )[0]
        listed = tmf.load(con, RunFilter(benchmark=bench))
    assert "task_code" in listed.tasks
    with writer(demo_db) as con:
        con.execute("DELETE FROM tasks WHERE benchmark = ? AND task_id = ?", [bench, task])
        con.execute(
            "UPDATE tmf_task_codes SET is_listed = false, level = NULL, category = NULL, human_minutes = NULL"
            " WHERE benchmark = ? AND task_id = ?",
            [bench, task],
        )
    with reader(demo_db) as con:
        rf = RunFilter(benchmark=bench)
        inputs = tmf.load(con, rf)
        rows = inputs.with_details()
        assert "task_code" not in rows and task in set(rows["task_id"])
        assert rows.loc[rows["task_id"] == task, "level"].isna().all()
        assert_same(rows.drop(columns="run_code"), rows_by_id(con, rf), "rows")
        # the task sorts first of the benchmark's ids: in task id order it leads every run's rows
        firsts = rows.groupby("run_id", sort=False)["task_id"].first()
        assert (firsts[rows.loc[rows["task_id"] == task, "run_id"].unique()] == task).all()


def test_a_wrong_kept_human_minutes_is_seen(demo_db: Path) -> None:
    """The rows' tasks' details are the ones kept on their codes (migrations 015 and 016), read without joining the
    tasks table: a wrong kept human minutes makes the rows differ from those with the tasks table's details (the
    comparison of ``check_store`` can fail)."""
    from store import writer

    with reader(demo_db) as con:
        bench, task = query_rows(
            con,
            "SELECT c.benchmark, min(c.task_id) FROM tmf_task_codes c WHERE c.human_minutes IS NOT NULL"
            " AND c.task_code IN (SELECT task_code FROM run_task_tmf) GROUP BY 1 ORDER BY 1 LIMIT 1",
        )[0]
    rf = RunFilter(benchmark=bench)

    def plain_rows(con: object) -> pd.DataFrame:
        rows = tmf.load(con, rf).with_details()  # type: ignore[arg-type]
        return rows.drop(columns=[c for c in CODE_COLUMNS.values() if c in rows])

    with reader(demo_db) as con:
        assert_same(plain_rows(con), rows_by_id(con, rf), "rows")
    with writer(demo_db) as con:
        con.execute(
            "UPDATE tmf_task_codes SET human_minutes = human_minutes + 1 WHERE benchmark = ? AND task_id = ?",
            [bench, task],
        )
    with reader(demo_db) as con, pytest.raises(AssertionError):
        assert_same(plain_rows(con), rows_by_id(con, rf), "rows")


def test_codes_numbered_in_order_of_first_appearance_factorize_as_pandas_does() -> None:
    """``factorize_codes`` equals ``pd.factorize(codes)[0]`` (values and dtype) on codes it takes as they are (rows
    by run then task, as ``load`` gives them; any codes already in order of first appearance) and on codes it must
    hash (a gap, a first code other than 0, a negative code, codes out of order, unsigned, empty)."""
    rng = np.random.default_rng(12)
    cases = [np.zeros(0, dtype=np.int64), np.array([0]), np.array([3]), np.array([0, 2, 1]), np.array([0, -1, 1])]
    cases += [np.array([0, 1, 1, 0, 2], dtype=np.uint32), np.repeat(np.arange(5), 3), np.tile(np.arange(6), 4)]
    for _ in range(40):
        raw = rng.integers(-2 if rng.random() < 0.2 else 0, 9, int(rng.integers(1, 80)))
        cases += [raw, pd.factorize(raw)[0], np.sort(raw)]
    taken_as_they_are = 0
    for codes in cases:
        want = pd.factorize(codes)[0]
        got = factorize_codes(codes)
        assert got.dtype == want.dtype and got is not codes
        np.testing.assert_array_equal(got, want)
        taken_as_they_are += bool(codes.size and np.array_equal(codes, want))
    assert taken_as_they_are > 40  # the cases exercise the path without hashing, not only pandas' own


def test_a_frames_codes_are_made_once_and_follow_a_replaced_column() -> None:
    """``coded_rows`` gives ``factorize_codes`` of the frame's code column and their ``first_rows`` (as pandas would),
    made once per frame (the same read-only arrays the second time), new ones for a column replaced or another frame
    (also one equal to it, or at the same address after the first is gone), and no entry once the frame is gone;
    ``factorize_ids`` and ``first_rows_of`` from them equal ``pd.factorize`` and ``~duplicated()``."""
    rng = np.random.default_rng(3)
    codes = np.repeat(rng.permutation(7), 5)
    frame = pd.DataFrame({"run_id": [f"r{c}" for c in codes], "run_code": codes})
    got, first = tmf_codes.coded_rows(frame, "run_code")
    want, _ = pd.factorize(codes)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(first, np.flatnonzero(~frame["run_id"].duplicated().to_numpy()))
    again = tmf_codes.coded_rows(frame, "run_code")
    assert again[0] is got and again[1] is first  # made once
    with pytest.raises(ValueError):
        got[0] = 5  # shared: read-only
    ids_codes, ids = factorize_ids(frame, "run_id")
    want_codes, want_ids = pd.factorize(frame["run_id"])
    np.testing.assert_array_equal(ids_codes, want_codes)
    assert list(ids) == list(want_ids)
    np.testing.assert_array_equal(tmf_codes.first_rows_of(frame, "run_id"), first)
    replaced = np.tile(np.arange(5), 7)  # other codes than those of ``codes``' stretches
    frame["run_code"] = replaced  # a column replaced: codes of the new one
    np.testing.assert_array_equal(tmf_codes.coded_rows(frame, "run_code")[0], replaced)
    other = frame.copy()  # another frame, equal: its own entry, equal codes
    assert tmf_codes.coded_rows(other, "run_code")[0] is not tmf_codes.coded_rows(frame, "run_code")[0]
    np.testing.assert_array_equal(tmf_codes.coded_rows(other, "run_code")[0], replaced)
    key = (id(frame), "run_code")
    assert key in tmf_codes._CODED
    del frame
    assert key not in tmf_codes._CODED  # dropped with its frame
    for _ in range(20):  # new frames, some at a freed address: never an earlier frame's codes
        fresh = rng.integers(0, 4, 12)
        frame = pd.DataFrame({"run_id": fresh.astype(str), "run_code": fresh})
        np.testing.assert_array_equal(tmf_codes.coded_rows(frame, "run_code")[0], pd.factorize(fresh)[0])
        del frame


def _intervals_from_the_matrix(codes: np.ndarray, series: list[np.ndarray], n_runs: int, seed: int) -> np.ndarray:
    """``_bootstrap_by_size`` as it was: every size's runs stacked into one matrix for ``stats.bootstrap_mean_cis``."""
    out = np.full((n_runs, len(series), 2), np.nan)
    order = stable_order(codes)
    sizes = np.bincount(codes, minlength=n_runs)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for size in np.unique(sizes[sizes > 0]):
        runs = np.flatnonzero(sizes == size)
        rows = order[starts[runs][:, None] + np.arange(size)]
        matrix = np.stack([values[rows] for values in series], axis=-1).transpose(1, 0, 2).reshape(size, -1)
        cis = stats.bootstrap_mean_cis(matrix, stats.stable_rng(seed, "tmf", str(size)), n_boot=50)
        out[runs] = cis.reshape(len(runs), len(series), 2)
    return out


def test_run_intervals_without_a_draw_equal_those_of_the_matrix_of_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run points' intervals (``model._bootstrap_by_size``) are bit for bit those of one matrix per run size
    through ``stats.bootstrap_mean_cis`` when a size's runs need no draw (every series with more finite values than
    ``BOOTSTRAP_MAX_TASKS``, one or none: each interval taken from its run's rows alone), and when some need one;
    rows in any order, NaN cells, series with one finite value or none."""
    monkeypatch.setattr(stats, "BOOTSTRAP_MAX_TASKS", 12)  # small runs bootstrap, large ones get the normal interval
    rng = np.random.default_rng(21)
    without_draw = 0
    for trial in range(40):
        n_runs = int(rng.integers(1, 6))
        sizes = rng.choice([1, 5, 13, 30, 30], n_runs)
        codes = np.repeat(np.arange(n_runs), sizes)
        if trial % 2:
            codes = rng.permutation(codes)
        series = [rng.normal(size=codes.size) * 3, rng.random(codes.size)]
        series[0][rng.random(codes.size) < 0.2] = np.nan
        if trial % 3 == 0:  # one run with a single cost, another with none
            series[0][codes == 0] = np.nan
            series[0][np.flatnonzero(codes == 0)[:1]] = 1.5
            series[1][codes == n_runs - 1] = np.nan
        got = tmf_model._bootstrap_by_size(codes, series, n_runs, seed=3, n_boot=50)
        want = _intervals_from_the_matrix(codes, series, n_runs, seed=3)
        np.testing.assert_array_equal(got, want)
        finite = np.array([[np.isfinite(v[codes == r]).sum() for v in series] for r in range(n_runs)])
        without_draw += int(((finite <= 1) | (finite > 12)).all(axis=1).any())
    assert without_draw > 10


def test_rows_reordered_a_run_at_a_time_equal_the_rows_gathered_by_a_stable_sort() -> None:
    """``_row_order`` + ``_reordered`` (rows as the store keeps them: each run's rows together in task order, runs
    in code order) give the rows of ``values[np.argsort(key, kind="stable")]``: runs permuted as whole stretches,
    a run split in two stretches, stretches that interleave (one run's tasks inside another's: the sort), many short
    stretches (the sort), and rows in order already (None); ``_all_reordered`` (the columns shared with a second
    thread) gives each column its own rows. Fails with a stretch copied to the wrong place."""
    rng = np.random.default_rng(3)
    n_ranks = 50

    def check(run_at: np.ndarray, rank: np.ndarray, expect: type | None) -> None:
        key = run_at * (n_ranks + 1) + rank
        order = tmf_load._row_order(run_at, rank, n_ranks + 1)
        if expect is None:
            assert order is None and bool((key[1:] > key[:-1]).all())
            return
        assert isinstance(order, expect)
        want = np.argsort(key, kind="stable")
        for values in (
            rng.normal(size=len(key)),
            np.arange(len(key)),
            np.array([f"t{i}" for i in range(len(key))], dtype=object),
        ):
            got = tmf_load._reordered(values, order)
            assert got.dtype == values.dtype
            np.testing.assert_array_equal(got, values[want])
        # every column at once, every other one by the second thread (None kept): the same columns, each its own
        columns = {"a": rng.normal(size=len(key)), "none": None, "b": np.arange(len(key)), "c": rng.random(len(key))}
        done = tmf_load._all_reordered(columns, order)
        assert list(done) == list(columns) and done["none"] is None
        for name in ("a", "b", "c"):
            np.testing.assert_array_equal(done[name], np.asarray(columns[name])[want], err_msg=name)

    for n_runs in (1, 2, 13):
        sizes = rng.integers(1, n_ranks, size=n_runs)
        parts = [(np.full(k, r), np.sort(rng.choice(n_ranks, size=k, replace=False))) for r, k in enumerate(sizes)]
        in_order = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        check(*in_order, None)
        if n_runs == 1:
            continue
        shuffled = [parts[i] for i in rng.permutation(n_runs)]
        while [int(p[0][0]) for p in shuffled] == list(range(n_runs)):
            shuffled = [parts[i] for i in rng.permutation(n_runs)]
        run_at, rank = (np.concatenate([p[i] for p in shuffled]) for i in (0, 1))
        check(run_at, rank, tmf_load.Stretches)
        # the first run's rows split in two, its second half placed last: still whole stretches
        first, cut = parts[0], max(1, len(parts[0][0]) // 2)
        if len(first[0]) > 1:
            split = [(first[0][cut:], first[1][cut:]), *parts[1:], (first[0][:cut], first[1][:cut])]
            check(*(np.concatenate([p[i] for p in split]) for i in (0, 1)), tmf_load.Stretches)
    # a run in two stretches: whole stretches unless they interleave (then the stable sort's order)
    run_at = np.array([1, 1, 0, 0, 1, 1])
    check(run_at, np.array([0, 5, 1, 2, 6, 9]), tmf_load.Stretches)  # run 1 in two stretches that do not overlap
    check(run_at, np.array([0, 5, 1, 2, 3, 9]), np.ndarray)  # run 1's second stretch starts inside its first
    check(np.array([1, 1, 0, 0, 0, 1]), np.array([3, 4, 1, 2, 5, 0]), tmf_load.Stretches)  # run 1's stretches swapped
    # many short stretches (every row its own): the sort
    run_at = rng.permutation(np.repeat(np.arange(400), 1))
    check(run_at, np.zeros(400, dtype=np.int64), np.ndarray)

"""The reads rewritten so pages do not grow with the store (issue 33) give what the former reads gave, on the demo
and on a small generated store: each former query or loop is kept here as the reference."""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pytest

import store as rdb
from analytics import diff as rd
from analytics.diff import load as diff_load
from bench.gen_logs import generate
from ingest.pipeline import ingest_paths

FORMER_TASK_OUTCOMES = (
    "SELECT a.task_id, t.level, t.category, count(*) AS n, avg(a.passed::INT) AS rate, "
    "arg_min(a.passed, a.sample)::INT AS first, min(a.sample) AS first_sample, "
    "avg(a.score) AS score, avg(a.cost_usd) AS cost_usd, avg(a.latency_s) AS latency_s, "
    "avg(a.input_tokens + a.output_tokens) AS tokens, avg(a.n_tool_calls) AS steps, "
    "(SELECT list_sort(list(DISTINCT e.code)) FROM error_labels e JOIN attempts x USING (attempt_id) "
    " WHERE x.run_id = ? AND x.task_id = a.task_id) AS codes "
    "FROM attempts a JOIN runs r USING (run_id) "
    "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id "
    "WHERE a.run_id = ? AND a.passed IS NOT NULL GROUP BY ALL ORDER BY a.task_id"
)


T = TypeVar("T", bound=Hashable)


def _sample(rows: Sequence[T], *, one_in: int, seed: int, keep: Iterable[T] = ()) -> list[T]:
    """A seeded random one in ``one_in`` of ``rows`` (at least one) and the rows in ``keep``, in the rows' order: a
    varied sample that still holds the cases a test names (a run's longest attempt, a task with the most samples)."""
    picked = set(random.Random(seed).sample(range(len(rows)), max(1, len(rows) // one_in)))
    kept = set(keep)
    return [row for i, row in enumerate(rows) if i in picked or row in kept]


def _first_per(rows: Sequence[T], group: Any, best: Any) -> list[T]:
    """Per group of ``rows`` (``group(row)``), its first row with the highest ``best(row)``."""
    out: dict[Any, T] = {}
    for row in rows:
        if group(row) not in out or best(row) > best(out[group(row)]):
            out[group(row)] = row
    return list(out.values())


def _lists(col: pd.Series) -> list[Any]:
    return [list(v) if isinstance(v, (list, np.ndarray)) else None for v in col]


def test_a_runs_task_outcomes_equal_the_former_query(store_db: Path) -> None:
    with rdb.reader(store_db) as con:
        runs = [r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id")]
        assert len(runs) >= 2
        n_codes = 0
        for run in runs:
            new = diff_load._task_outcomes(con, run)
            old = rdb.query_df(con, FORMER_TASK_OUTCOMES, [run, run])
            codes = _lists(old.pop("codes"))
            assert _lists(new.pop("codes")) == codes
            n_codes += sum(c is not None for c in codes)
            pd.testing.assert_frame_equal(new, old)
        assert n_codes > 0  # the codes were compared, not only missing ones


def _former_measure_means(a: dict[str, Any], b: dict[str, Any], key: str) -> tuple[float, float, int]:
    shared = [t for t in a[key] if t in b[key] and np.isfinite(a[key][t]) and np.isfinite(b[key][t])]
    return (
        float(np.mean([a[key][t] for t in shared])) if shared else float("nan"),
        float(np.mean([b[key][t] for t in shared])) if shared else float("nan"),
        len(shared),
    )


def test_the_diff_of_every_pair_of_a_benchmark_keeps_its_figures(store_db: Path) -> None:
    with rdb.reader(store_db) as con:
        bench = rdb.query_rows(con, "SELECT benchmark FROM runs GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")[0][0]
        pair = rd.default_pair(rd.run_pairs(con, benchmark=bench))
        assert pair is not None
        result = rd.compare_runs(con, run_a=pair[0], run_b=pair[1])
        metric = result.metric
        values = {r: diff_load.metric_values(con, r, metric) for r in pair}
    rows = result.measures.set_index("measure")
    for key, name in (("value", metric), ("cost_usd", "cost_usd"), ("latency_s", "latency_s")):
        mean_a, mean_b, n = _former_measure_means(values[pair[0]], values[pair[1]], key)
        row = rows.loc[rd.MEASURES[name]]
        assert int(row["n_tasks"]) == n
        assert row["mean_a"] == pytest.approx(mean_a, rel=1e-12, nan_ok=True)
        assert row["mean_b"] == pytest.approx(mean_b, rel=1e-12, nan_ok=True)


def test_the_judge_figures_equal_the_former_path(store_db: Path) -> None:
    from analytics import review as rv
    from store import RunFilter

    with rdb.reader(store_db) as con:
        for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
            flt = RunFilter(benchmark=bench)
            new = rv.judge_corrections(con, flt)
            preds, source = rv.judge_predictions(con, flt)
            sample, _ = rv.calibration_sample(con, flt)
            humans = rv.human_consensus(rv.current_reviews(con, flt))
            old = rv.corrections_of(preds, source, humans[humans["attempt_id"].isin(sample)])
            pd.testing.assert_frame_equal(new, old)


FORMER_QUEUE = """
    WITH lj AS (SELECT attempt_id, TRY_CAST(judge->>'result_correct' AS BOOLEAN) AS judge_correct FROM attempts),
    rj AS (SELECT v.attempt_id, bool_and(TRY_CAST(v.verdict->>'result_correct' AS BOOLEAN)) AS judge_correct,
                  (SELECT list(DISTINCT e.code) FROM error_labels e WHERE e.attempt_id = v.attempt_id
                     AND e.source = 'judge') AS codes
           FROM judge_verdicts v WHERE NOT v.is_failure GROUP BY v.attempt_id),
    lb AS (SELECT attempt_id, list(DISTINCT code) AS codes FROM error_labels WHERE source = 'label'
           GROUP BY attempt_id),
    mine AS (SELECT attempt_id, count(*) AS n_reviews, bool_or(reviewer = $reviewer) AS is_reviewed_by_me
             FROM v_reviews GROUP BY attempt_id)
    SELECT a.attempt_id, a.run_id, r.agent, a.task_id, a.sample, a.passed, lj.judge_correct AS log_judge_correct,
           rj.judge_correct AS runlens_judge_correct, array_to_string(list_sort(lb.codes), ', ') AS log_codes,
           array_to_string(list_sort(rj.codes), ', ') AS judge_codes, coalesce(m.n_reviews, 0) AS n_reviews,
           coalesce(m.is_reviewed_by_me, false) AS is_reviewed_by_me
    FROM attempts a JOIN runs r USING (run_id)
    LEFT JOIN lj USING (attempt_id) LEFT JOIN rj USING (attempt_id) LEFT JOIN lb USING (attempt_id)
    LEFT JOIN mine m USING (attempt_id)
    WHERE r.benchmark = $benchmark AND a.passed = false
    ORDER BY coalesce(m.is_reviewed_by_me, false), a.run_id, a.task_id, a.sample
    LIMIT $n
"""


def test_the_failed_queue_equals_the_former_query_with_and_without_my_reviews(store_db: Path, tmp_path: Path) -> None:
    import shutil

    from analytics import review as rv
    from store import RunFilter

    db = tmp_path / "queue.duckdb"
    for suffix in ("", ".read"):  # a copy: reviews are written
        if Path(f"{store_db}{suffix}").exists():
            shutil.copyfile(f"{store_db}{suffix}", f"{db}{suffix}")
    with rdb.reader(db) as con:
        bench = rdb.query_rows(con, "SELECT benchmark FROM runs GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")[0][0]
        first = rdb.query_rows(
            con,
            "SELECT attempt_id FROM attempts JOIN runs USING (run_id) WHERE benchmark = ? AND passed = false "
            "ORDER BY run_id, task_id, sample LIMIT 3",
            [bench],
        )
    from jobs.reviews import record_review

    for (attempt_id,) in first:  # "me" reviews the head of the queue: those go to its back
        record_review(db, attempt_id=int(attempt_id), reviewer="me", verdict="incorrect")
    flt = RunFilter(benchmark=bench)
    with rdb.reader(db) as con:
        for who in ("me", "someone else", None):
            for n in (1, 5, 50):
                new = rv.review_queue(con, flt, queue="failed", reviewer=who, n=n)
                old = rdb.query_df(con, FORMER_QUEUE, {"reviewer": who or "", "n": n, "benchmark": bench})
                pd.testing.assert_frame_equal(new, old)


def test_the_diff_and_gate_read_together_equal_each_read_apart(store_db: Path) -> None:
    """The Version diff page reads each run's per-task values once for the diff and the sequential gate
    (``gate.diff_and_gate``): the same RunDiff and GateResult as ``compare_runs`` and ``gate`` called apart, and
    the tasks' code changes (computed once per distinct pair of code lists) as computed task by task."""
    from dataclasses import replace

    from analytics import gate
    from analytics.diff.compute import _code_change
    from tests.test_aggregates import assert_same

    with rdb.reader(store_db) as con:
        n_checked = 0
        for (bench,) in rdb.query_rows(con, "SELECT benchmark FROM runs GROUP BY 1 HAVING count(*) > 1 ORDER BY 1"):
            runs = rd.run_pairs(con, benchmark=bench)["run_id"].tolist()[:3]
            for run_a, run_b in zip(runs, runs[1:], strict=False):
                for basis in rd.BASES:
                    try:
                        apart = rd.compare_runs(con, run_a=run_a, run_b=run_b, basis=basis)
                    except rdb.RunlensError:
                        continue
                    both = gate.diff_and_gate(con, run_a=run_a, run_b=run_b, basis=basis)
                    # the arrays kept for the changes table (object arrays of code lists) compared apart
                    bare = [replace(d, task_rank=None, code_ids=None, code_lists=None) for d in (both.diff, apart)]
                    assert_same(bare[0], bare[1], f"{run_a} {run_b} {basis}")
                    assert both.diff.code_lists is not None and apart.code_lists is not None
                    assert [repr(x) for x in both.diff.code_lists] == [repr(x) for x in apart.code_lists]
                    assert both.gate_error is None
                    assert_same(both.gate, gate.gate(con, baseline=run_a, candidate=run_b, sequential=True))
                    t = rd.tasks_by_change(apart)
                    codes = zip(apart.tasks["codes_a"], apart.tasks["codes_b"], strict=True)
                    by_task = dict(zip(apart.tasks["task_id"], codes, strict=True))
                    assert t["error_codes"].tolist() == [_code_change(*by_task[x]) for x in t["task_id"]]
                    n_checked += 1
    assert n_checked >= 2


FORMER_RUNS_WITH_TASK = (
    "SELECT r.run_id, r.agent, r.agent_version, r.eval_date, count(*) AS n_samples, "
    "avg(a.passed::INT) AS pass_rate FROM attempts a JOIN runs r USING (run_id) "
    "WHERE r.benchmark = ? AND a.task_id = ? GROUP BY ALL "
    "ORDER BY r.eval_date DESC NULLS LAST, r.run_id"
)


def test_the_drilldowns_same_task_in_other_runs_equals_the_former_query(store_db: Path) -> None:
    from analytics import trajectory as tr

    with rdb.reader(store_db) as con:
        pairs = rdb.query_rows(con, "SELECT DISTINCT r.benchmark, a.task_id FROM attempts a JOIN runs r USING (run_id)")
        pairs = sorted(pairs)[::3]  # a third of the tasks: every benchmark, mixed and missing verdicts among them
        rates = []
        for bench, task in pairs:
            new = tr.runs_with_task(con, benchmark=bench, task_id=task)
            old = rdb.query_df(con, FORMER_RUNS_WITH_TASK, [bench, task])
            assert not new.empty
            pd.testing.assert_frame_equal(new, old)
            rates += old["pass_rate"].tolist()
        assert len({bench for bench, _ in pairs}) >= 2
        assert any(0 < r < 1 for r in rates) and any(r in (0, 1) for r in rates)  # not only whole rates compared


def test_the_drilldowns_task_marks_and_failed_neighbours_equal_those_of_every_attempt(store_db: Path) -> None:
    from analytics import trajectory as tr
    from ui import transcript

    with rdb.reader(store_db) as con:
        runs = [r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id")]
        kinds: set[str] = set()
        n_moves = 0
        for run in runs:
            attempts = tr.attempts_of(con, run_id=run)  # the former read: every attempt of the run
            marks = transcript.task_marks(attempts)
            new = tr.task_marks_of(con, run_id=run)
            assert list(new.items()) == list(marks.items())  # the same marks in the same order
            kinds |= set(marks.values())
            # every 25th attempt, the first and the last, and one not in the run
            picks = [*attempts[["task_id", "sample"]].itertuples(index=False, name=None)][::25]
            picks += [tuple(attempts[["task_id", "sample"]].iloc[-1]), ("no-such-task", 0)]
            for task, sample in picks:
                old = transcript.failed_neighbours(attempts, str(task), int(sample))
                assert tr.failed_around(con, run_id=run, task_id=str(task), sample=int(sample)) == old
                n_moves += sum(x is not None for x in old)
                if task == "no-such-task":
                    continue
                # the buttons' state drawn without a read: from the marks and the task's own verdicts
                here = attempts[attempts["task_id"] == task]
                passed = {
                    int(s): (None if pd.isna(v) else bool(v))
                    for s, v in zip(here["sample"], here["passed"], strict=True)
                }
                sides = tr.failed_on_either_side(new, passed, str(task), int(sample))
                assert sides == (old[0] is not None, old[1] is not None), (run, task, sample)
        assert {"✓", "✗"} <= kinds and n_moves > 0


def test_the_drilldowns_task_attempts_equal_attempts_of_and_attempt_detail(store_db: Path) -> None:
    """One statement for a task's samples and the attempt shown: the same samples, verdicts and details as
    ``attempts_of`` and ``attempt_detail`` (a seeded one in 60 of the tasks of the runs, each run's task with the
    most samples and the first tasks with each mix of statuses)."""
    from analytics import trajectory as tr

    with rdb.reader(store_db) as con:
        rows = rdb.query_rows(
            con,
            "SELECT run_id, task_id, count(*), string_agg(DISTINCT status, ',' ORDER BY status) FROM attempts "
            "GROUP BY ALL ORDER BY ALL",
        )
        most = _first_per(rows, lambda r: r[0], lambda r: r[2])
        mixes = [r for mix in sorted({r[3] for r in rows}) for r in [x for x in rows if x[3] == mix][:3]]
        pairs = [(run, task) for run, task, _, _ in _sample(rows, one_in=60, seed=15, keep=most + mixes)]
        assert len({run for run, _ in pairs}) == len({r[0] for r in rows})  # every run
        n_samples = 0
        for run, task in pairs:
            got = tr.task_attempts(con, run_id=run, task_id=task)
            former = tr.attempts_of(con, run_id=run, task_id=task)
            assert list(got) == [int(s) for s in former["sample"]]
            for s, p in zip(former["sample"], former["passed"], strict=True):
                assert got[int(s)]["passed"] == (None if pd.isna(p) else p)
                want = tr.attempt_detail(con, run_id=run, task_id=task, sample=int(s))
                assert want is not None and got[int(s)].keys() == want.keys()
                for key, value in want.items():
                    assert repr(got[int(s)][key]) == repr(value), (run, task, s, key)
                n_samples += 1
        assert n_samples > len(pairs)  # tasks with several samples among them


FORMER_HEALTH_HELD = """
WITH held AS (  -- the runs' attempts summed from run_task_stats (before migration 014 kept the sums per run)
    SELECT s.run_id, sum(s.n_attempts) AS n_attempts, sum(s.n_errored) AS n_errored,
           sum(s.n_limited) AS n_limited, sum(s.n_unscored) AS n_unscored,
           sum(s.n_scored) AS n_scored, sum(s.n_scored_passed) AS n_scored_passed,
           sum(s.n_kept) AS n_kept, sum(s.n_kept_passed) AS n_kept_passed
    FROM run_task_stats s JOIN runs r USING (run_id)
    WHERE r.benchmark = $benchmark
    GROUP BY s.run_id
)
"""


def test_run_health_from_the_kept_sums_equals_the_former_query(store_db: Path, tmp_path: Path) -> None:
    """Run health (the Leaderboard's first view) from run_health_sums equals it summed from run_task_stats, for every
    benchmark; and a kept sum that differs makes it differ (the comparison can fail)."""
    from analytics.runs import load as runs_load
    from tests.conftest import copy_store

    head, rest = runs_load.HEALTH_SQL.split("\n)\n", 1)
    assert head.lstrip().startswith("WITH held AS")
    former = FORMER_HEALTH_HELD.strip() + "\n" + rest

    def compare(db: Path) -> int:
        n = 0
        with rdb.reader(db) as con:
            for (bench,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1"):
                new = rdb.query_df(con, runs_load.HEALTH_SQL, {"benchmark": bench})
                old = rdb.query_df(con, former, {"benchmark": bench})
                pd.testing.assert_frame_equal(new, old, check_exact=True)
                n += len(new)
        return n

    assert compare(store_db) > 0
    db = copy_store(store_db, tmp_path)
    with rdb.writer(db) as con:
        con.execute(
            "UPDATE run_health_sums SET n_errored = n_errored + 1 WHERE run_code = (SELECT min(run_code) FROM run_health_sums)"
        )
    with pytest.raises(AssertionError):
        compare(db)


def test_the_sidebars_attempt_count_equals_counting_the_attempts(store_db: Path, tmp_path: Path) -> None:
    """The per-run counts kept at ingest give the store's attempts, also after a run is deleted."""
    from analytics import catalog as cat
    from store.delete import delete_run
    from tests.conftest import copy_store

    copy = copy_store(store_db, tmp_path)
    counts = []
    for deleted in (False, True):
        with rdb.reader(copy) as con:
            n = rdb.query_rows(con, "SELECT count(*) FROM attempts")[0][0]
            assert n > 0 and cat.attempt_count(con) == n == cat.catalog(con).n_attempts
            counts.append(n)
            first = rdb.query_rows(con, "SELECT min(run_id) FROM attempts")[0][0]
        if not deleted:
            delete_run(first, db=copy)
    assert counts[1] < counts[0]


FORMER_TEXTS = "SELECT t.text_hash, left(t.text, ?) FROM texts t SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS h) q ON t.text_hash = q.h"


def _former_steps_page(con: Any, attempt_id: int, offset: int, limit: int) -> pd.DataFrame:
    """``trajectory.steps_page`` before its texts were looked up in the steps' own commits first."""
    from analytics import trajectory as tr

    page = rdb.query_df(
        con,
        "SELECT step, round, kind, tool, args, content, left(result, ?) AS result_preview, "
        "coalesce(result_chars, length(result)) AS result_chars, input_tokens, output_tokens, "
        "latency_s, error, result_hash FROM steps WHERE attempt_id = ? ORDER BY step LIMIT ? OFFSET ?",
        [tr.PREVIEW_CHARS, attempt_id, limit, offset],
    )
    hashes = sorted({h for h in page["result_hash"] if isinstance(h, str)})
    if hashes:
        texts = dict(rdb.query_rows(con, FORMER_TEXTS, [tr.PREVIEW_CHARS, hashes]))
        page["result_preview"] = page["result_preview"].where(
            page["result_preview"].notna(), page["result_hash"].map(texts)
        )
    return page.drop(columns="result_hash")


def test_the_drilldowns_steps_page_equals_the_former_read_on_a_lake_and_a_file(
    tmp_path: Path, generated_db: Path
) -> None:
    """On a lake, a page's long texts are looked up in the commits that wrote its steps first: the pages equal the
    former read's, also for a run whose long texts an earlier commit had stored (the second file below repeats the
    first's texts under other run ids, so its texts are found only by the whole-table lookup)."""
    from analytics import trajectory as tr

    logs = tmp_path / "logs"
    files = generate(logs, n_attempts=400, n_runs=2, n_benchmarks=1, seed=34)
    again = logs / "again.jsonl"
    again.write_text(files[0].read_text(encoding="utf-8").replace('"run-0', '"rerun-0'), encoding="utf-8")
    location = f"ducklake:sqlite:{tmp_path / 'store.lake'}"
    ingest_paths(files, db=location, jobs=1)
    ingest_paths([again], db=location, jobs=1)  # a commit of its own (one ingest may write several files in one)
    n_repeated = 0
    for db in (location, generated_db):
        with rdb.reader(db) as con:
            rows = rdb.query_rows(
                con,
                "SELECT a.attempt_id, a.n_steps, a.run_id LIKE 'rerun-%', a.run_id FROM attempts a WHERE a.attempt_id "
                "IN (SELECT attempt_id FROM steps WHERE result_hash IS NOT NULL) ORDER BY 1",
            )
            assert len(rows) > 20
            # of the lake, every 7th rerun and every 14th other attempt; of the file, a seeded one in 28 and each
            # run's longest attempt
            if db == location:
                picks = sorted([r for r in rows if r[2]][::7] + [r for r in rows if not r[2]][::14])
            else:
                picks = _sample(rows, one_in=28, seed=7, keep=_first_per(rows, lambda r: r[3], lambda r: r[1]))
            for attempt_id, n_steps, is_rerun, _ in picks:
                for offset, limit in ((0, 25), (0, 2), (max(int(n_steps) - 2, 0), 10)):
                    new = tr.steps_page(con, attempt_id=int(attempt_id), offset=offset, limit=limit)
                    old = _former_steps_page(con, int(attempt_id), offset, limit)
                    pd.testing.assert_frame_equal(new, old)
                n_repeated += bool(is_rerun)
    assert n_repeated > 5  # the whole-table lookup was needed for these


def test_the_drilldowns_tool_calls_from_a_whole_page_equal_the_tool_calls_read(store_db: Path) -> None:
    from analytics import trajectory as tr

    with rdb.reader(store_db) as con:
        rows = rdb.query_rows(con, "SELECT attempt_id, run_id, n_steps FROM attempts ORDER BY 1")
        # a seeded one in 30 of the attempts, and each run's attempts with the most and the fewest steps
        ends = [*_first_per(rows, lambda r: r[1], lambda r: r[2]), *_first_per(rows, lambda r: r[1], lambda r: -r[2])]
        picks = _sample(rows, one_in=30, seed=5, keep=ends)
        assert {r[1] for r in picks} == {r[1] for r in rows}  # every run
        ids = [r[0] for r in picks]
        checked = 0
        for attempt_id in ids:
            page = tr.steps_page(con, attempt_id=int(attempt_id), offset=0, limit=100)
            calls = tr.tool_calls_of(con, attempt_id=int(attempt_id))
            pd.testing.assert_frame_equal(tr.tool_calls_in(page), calls)
            checked += not calls.empty
        assert checked > 10


# run health's later runs of an eval set, as their own statement (before run health read them in its one statement)
FORMER_SUPERSEDED = """
SELECT r.run_id, min(later.run_id) AS superseded_by
FROM runs r JOIN runs later
  ON later.benchmark = r.benchmark AND later.run_id <> r.run_id
 AND json_extract_string(later.extra, '$.inspect_eval_set_id') = json_extract_string(r.extra, '$.inspect_eval_set_id')
 AND json_extract_string(later.extra, '$.inspect_task_id') = json_extract_string(r.extra, '$.inspect_task_id')
 AND json_extract_string(later.extra, '$.inspect_created') > json_extract_string(r.extra, '$.inspect_created')
WHERE r.benchmark = ?
GROUP BY r.run_id
"""


def _former_run_health(con: Any, benchmark: str) -> pd.DataFrame:
    """Run health as three statements (its rows, the later runs, the OTLP files), as it was read before."""
    from analytics.runs import load as runs_load
    from analytics.runs.compute import with_health

    df = rdb.query_df(con, runs_load.HEALTH_SQL, {"benchmark": benchmark})
    later = (
        {} if df.empty else dict(rdb.query_df(con, FORMER_SUPERSEDED, [benchmark]).itertuples(index=False, name=None))
    )
    files = [int(f) for (f,) in rdb.query_rows(con, runs_load.OTLP_FILES_SQL)] if not df.empty else []
    partial = dict(rdb.query_rows(con, runs_load.PARTIAL_SQL, [files, benchmark])) if files else {}
    return with_health(df, later, partial)


def test_run_health_in_one_statement_equals_the_three_former_ones(store_db: Path, tmp_path: Path) -> None:
    """Run health's one statement gives the frame of the three it replaced, for every benchmark: on the store as it
    is, and with runs of one eval set (a retry supersedes) and a partial trace of an OTLP file written into a copy;
    there both must show the superseded run and the partial attempt, so a statement that lost them fails."""
    from analytics.runs import load as runs_load
    from tests.conftest import copy_store

    def frames(db: Path) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
        with rdb.reader(db) as con:
            benches = [b for (b,) in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1")]
            return {b: (runs_load.run_health(con, benchmark=b), _former_run_health(con, b)) for b in [*benches, "none"]}

    for new, old in frames(store_db).values():
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    db = copy_store(store_db, tmp_path)
    with rdb.writer(db) as con:
        bench, first, second = rdb.query_rows(
            con,
            "SELECT benchmark, min(run_id), max(run_id) FROM runs GROUP BY benchmark HAVING count(*) > 1 ORDER BY 1 LIMIT 1",
        )[0]
        for run_id, created in ((first, "2026-01-01"), (second, "2026-01-02")):
            con.execute(
                "UPDATE runs SET extra = json_object('inspect_eval_set_id', 's1', 'inspect_task_id', 't1', "
                "'inspect_created', ?) WHERE run_id = ?",
                [created, run_id],
            )
        file_id = rdb.query_rows(con, "SELECT file_id FROM attempts WHERE run_id = ? LIMIT 1", [second])[0][0]
        con.execute("UPDATE ingest_log SET format = 'otlp' WHERE file_id = ?", [file_id])
        con.execute(
            "UPDATE attempts SET extra = json_object('trace_partial', true) WHERE attempt_id = "
            "(SELECT min(attempt_id) FROM attempts WHERE run_id = ? AND file_id = ?)",
            [second, file_id],
        )
    changed = frames(db)
    for new, old in changed.values():
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    row = changed[bench][0].set_index("run_id")
    assert row.loc[first, "superseded_by"] == second and row.loc[second, "n_partial"] == 1

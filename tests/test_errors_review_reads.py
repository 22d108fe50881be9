"""The Errors and Review pages' reads kept to an attempt-id range (issue 33: the failed attempts behind a bar, each
reviewer's current reviews) give what the former reads over every attempt and label gave, on the demo and on a small
generated store, with and without reviews: the former SQL is kept here as the reference."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

import store as rdb
from analytics import errors as er
from analytics import review as rv
from store import RunFilter

FORMER_ERROR_ATTEMPTS = """
WITH labels AS (
    SELECT e.attempt_id, e.code, e.source
    FROM error_labels e
    JOIN attempts a USING (attempt_id)
    WHERE a.run_id = $run_id AND a.passed = false
      AND ($sources IS NULL OR list_contains($sources, e.source))
),
per_attempt AS (
    SELECT attempt_id, list(DISTINCT code ORDER BY code) AS codes, list(DISTINCT source ORDER BY source) AS sources
    FROM labels
    GROUP BY attempt_id
)
SELECT a.run_id, a.task_id, a.sample, t.level, t.category, array_to_string(p.codes, ', ') AS codes,
       array_to_string(p.sources, ', ') AS sources, a.status, a.answer
FROM per_attempt p
JOIN attempts a USING (attempt_id)
JOIN runs r USING (run_id)
LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
WHERE ($code IS NULL OR list_contains(p.codes, $code))
  AND ($code_b IS NULL OR list_contains(p.codes, $code_b))
  AND ($level IS NULL OR t.level = $level)
  AND ($category IS NULL OR t.category = $category)
ORDER BY a.task_id, a.sample
LIMIT $limit
"""

FORMER_CURRENT_REVIEWS = (
    "SELECT v.attempt_id, a.run_id, a.task_id, a.sample, v.reviewer, v.verdict = 'correct' AS is_correct, "
    "coalesce(v.codes, []) AS codes, v.note, v.created_at "
    "FROM v_reviews v JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) WHERE $run_filter "
    "ORDER BY v.attempt_id, v.reviewer"
)


def _copy(db: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy.duckdb"
    for suffix in ("", ".read"):  # a copy: reviews are written
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", f"{out}{suffix}")
    return out


# Four runs of each benchmark (the first in id order) are read with every code and source; every run is read
# with none (the demo's 75 runs with every one took 15 s of the suite's time)
SOME_RUNS = (
    "SELECT run_id FROM (SELECT run_id, row_number() OVER (PARTITION BY benchmark ORDER BY run_id) AS i FROM runs) "
    "WHERE i <= 4 ORDER BY run_id"
)


def test_error_attempts_equal_the_former_query(store_db: Path) -> None:
    with rdb.reader(store_db) as con:
        runs = [r[0] for r in rdb.query_rows(con, "SELECT run_id FROM runs ORDER BY run_id")]
        some = {r[0] for r in rdb.query_rows(con, SOME_RUNS)}
        codes = [r[0] for r in rdb.query_rows(con, "SELECT DISTINCT code FROM error_labels ORDER BY 1")][:4]
        pairs = [(None, None), *((c, None) for c in codes), (codes[0], codes[-1])]
        choices: list[tuple[str, ...] | None] = [None, ("label",), ("rule", "judge")]
        n_rows = 0
        for run in [*runs, "no such run"]:
            every = run in some or run == "no such run"
            for code, code_b in pairs if every else pairs[:1]:
                for sources in choices if every else choices[:1]:
                    new = er.error_attempts(con, run_id=run, code=code, code_b=code_b, sources=sources)
                    params = {"run_id": run, "code": code, "code_b": code_b, "level": None, "category": None,
                              "sources": er.chosen_sources(sources), "limit": 500}  # fmt: skip
                    old = rdb.query_df(con, FORMER_ERROR_ATTEMPTS, params)
                    pd.testing.assert_frame_equal(new, old, check_exact=True)
                    n_rows += len(new)
        assert n_rows > 0


def test_error_attempts_of_a_slice_and_a_small_limit_equal_the_former_query(store_db: Path) -> None:
    """The rows shown are picked (slice, codes, order, limit) before their status and answer are read: the same rows
    as the former query for a level or category slice and for a limit smaller than the run's failed attempts. The
    runs of ``SOME_RUNS`` are read with every slice of their benchmark; every other run with a small limit, another
    benchmark's slice and one of its own, in turn (the demo's runs each with every one took 10-13 s)."""
    with rdb.reader(store_db) as con:
        runs = rdb.query_rows(con, "SELECT run_id, benchmark FROM runs ORDER BY run_id")
        some = {r[0] for r in rdb.query_rows(con, SOME_RUNS)}
        slices = rdb.query_rows(con, "SELECT DISTINCT benchmark, level, category FROM tasks ORDER BY ALL")
        n_rows = 0
        n_shown: dict[str, int] = {}  # per benchmark, the runs read with one of its slices so far
        for run, benchmark in runs:
            # the slices of the run's benchmark, and one of another benchmark's (no row of the run in it)
            own = [(lv, c) for b, lv, c in slices if b == benchmark]
            other = [(f"category={c}", None, c, 500) for b, _, c in slices if b != benchmark and c is not None][:1]
            cases = (
                [("all", None, None, 3)]
                + [(f"level={lv}", lv, None, 500) for lv in sorted({str(lv) for lv, _ in own if lv is not None})]
                + [(f"category={c}", None, c, 500) for c in sorted({str(c) for _, c in own if c is not None})]
                + other
            )
            if run not in some and len(cases) > 3:  # one of its own slices, the next for the benchmark's next run
                i = n_shown[benchmark] = n_shown.get(benchmark, -1) + 1
                own_cases = cases[1 : len(cases) - len(other)]
                cases = [cases[0], own_cases[i % len(own_cases)], *other]
            for slice_name, level, category, limit in cases:
                new = er.error_attempts(con, run_id=run, slice_name=slice_name, limit=limit)
                params = {"run_id": run, "code": None, "code_b": None, "level": level, "category": category,
                          "sources": er.chosen_sources(None), "limit": limit}  # fmt: skip
                old = rdb.query_df(con, FORMER_ERROR_ATTEMPTS, params)
                pd.testing.assert_frame_equal(new, old, check_exact=True)
                n_rows += len(new)
        assert n_rows > 0


def _check_current_reviews(db: Path) -> int:
    with rdb.reader(db) as con:
        benchmarks = [r[0] for r in rdb.query_rows(con, "SELECT DISTINCT benchmark FROM runs ORDER BY 1")]
        n = 0
        for flt in [RunFilter(), *(RunFilter(benchmark=b) for b in benchmarks)]:
            new = rv.current_reviews(con, flt)
            sql = rdb.with_run_filter(FORMER_CURRENT_REVIEWS)
            old = rdb.query_df(con, sql, flt.params())
            pd.testing.assert_frame_equal(new, old, check_exact=True)
            n += len(new)
    return n


def test_current_reviews_equal_the_former_query_with_and_without_reviews(
    store_db: Path,
    tmp_path: Path,
) -> None:
    from jobs.reviews import record_review

    db = _copy(store_db, tmp_path)
    assert _check_current_reviews(db) == 0 or "demo" in str(store_db)
    with rdb.reader(db) as con:
        ids = [
            int(r[0]) for r in rdb.query_rows(con, "SELECT attempt_id FROM attempts ORDER BY hash(attempt_id) LIMIT 4")
        ]
    for i, attempt_id in enumerate(ids):
        record_review(db, attempt_id=attempt_id, reviewer=f"r{i % 2}", verdict="incorrect" if i else "correct")
    assert _check_current_reviews(db) >= len(ids)

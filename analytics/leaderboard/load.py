"""The leaderboard's reads: per (run, task) outcomes of the runs a filter selects, and the benchmark's scoring and
pass threshold. The only module of ``analytics.leaderboard`` that queries (the runs themselves: ``analytics.runs``).
"""

from __future__ import annotations

from typing import NamedTuple, TypedDict, Unpack

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analytics import scorers
from analytics.runs import load_runs
from analytics.sqlfiles import load_sql
from store import ALL_RUNS, QueryError, RunFilter, query_df, query_number_columns

# The runs asked for and the benchmark's coded tasks the tasks table lists (with their level and category), each in
# id order, and their codes in the kept (run, task) rows (migrations 012-013): the rows come as integers, each key
# becomes a Python string once (at 10M attempts: 13 runs and 66,667 tasks instead of 867k x 2 strings, no text
# joined or sorted). A task's level and category are kept on its code (migration 015), so the tasks are read from
# one table, not the tasks table joined to their codes (0.1 -> 0.04 CPU s at 10M). A task no run has rows of has no
# code and is not read (no row has its place); a coded task the tasks table does not list is not read either (its
# rows have no place: the text keys are read). {task_key}: the task ids, or NULL when the caller needs none (the
# board: 66,667 strings fewer). One statement: each costs a lake its catalog reads. A run without rows has no code.
# Last (kind 2), the benchmark's scoring (``benchmark_scoring``'s), which the board ranks by: not a statement more.
_KEYS = """
SELECT kind, key, code, level, category FROM (
    SELECT 0 AS kind, k.run_id AS key, k.run_id AS sort_key, rc.run_code AS code, NULL AS level, NULL AS category
    FROM (SELECT DISTINCT unnest($run_ids) AS run_id) k LEFT JOIN tmf_run_codes rc ON rc.run_id = k.run_id
    UNION ALL
    SELECT 1, {task_key}, task_id, task_code, level, category
    FROM tmf_task_codes
    WHERE benchmark = $benchmark AND is_listed
    UNION ALL
    SELECT 2, scoring, NULL, NULL, NULL, NULL FROM benchmarks WHERE benchmark = $benchmark
)
ORDER BY kind, sort_key
"""
# task_outcome_rows.sql's columns from the runs' kept rows (run_task_board, migration 013: run_task_stats's values
# under the codes); {runs}: the runs' codes as a constant list of parameters, which a lake's scan skips other runs'
# files and row groups by. No order: the rows are put in (run, task) order by their places (a store's already are).
_ROWS = """
SELECT run_code, task_code,
       CASE WHEN $exclude_errored THEN n_kept ELSE n_scored END                       AS n,
       CASE WHEN $exclude_errored THEN n_kept_passed ELSE n_scored_passed END         AS c,
       CASE WHEN $exclude_errored THEN score_mean_kept ELSE score_mean END            AS score,
       CASE WHEN $exclude_errored THEN tool_calls_mean_kept ELSE tool_calls_mean_scored END AS steps,
       CASE WHEN $exclude_errored THEN cost_usd_mean_kept ELSE cost_usd_mean_scored END AS cost_usd
FROM run_task_board
WHERE run_code IN ({runs}) AND CASE WHEN $exclude_errored THEN n_kept ELSE n_scored END > 0
"""


def _coded_outcomes(con: duckdb.DuckDBPyConnection, params: dict[str, object], benchmark: str | None) -> pd.DataFrame:
    """``task_outcome_rows.sql``'s frame in (run, task) order (the same columns and dtypes) read as integer codes and their keys; a
    row whose task is not in the benchmark's ``tasks`` table has no code: then the text keys are read instead."""
    return _coded_read(con, params, benchmark)[0]


def _places(codes: np.ndarray, of: np.ndarray) -> np.ndarray:
    """The place in ``codes`` (keys' codes, -1 for none) of each of ``of``'s codes (-1: a code ``codes`` lacks), by a
    table indexed by code (codes are small integers: their store's runs or tasks)."""
    known = codes >= 0
    top = max(int(codes.max()) if known.any() else -1, int(of.max()) if len(of) else -1)
    table = np.full(top + 1, -1, dtype=np.int64)
    table[codes[known]] = np.flatnonzero(known)
    return table[of] if len(of) else np.empty(0, dtype=np.int64)


class CodedRows(NamedTuple):
    """The kept rows of the runs asked for, as read (``_read_coded``): per row its run's and task's place among the
    runs' and the benchmark's coded tasks' ids in their order (``run_ix``, ``task_ix``) and its columns; the keys;
    the benchmark's scoring (``benchmark_scoring``'s, read with the keys)."""

    run_ids: np.ndarray
    task_ids: np.ndarray
    run_ix: np.ndarray
    task_ix: np.ndarray
    columns: dict[str, np.ndarray]
    described: dict[str, KindCodes]
    scoring: str | None


def _read_coded(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], benchmark: str | None, *, task_ids: bool = True
) -> CodedRows | None:
    """The runs' kept rows on integer codes (``run_task_board``), read straight into numpy arrays (no text joined:
    at 10M attempts the joins of 867k rows' run and task ids to their places were most of the read), each code
    mapped to its key's place, in the order read; ``task_outcome_rows.sql``'s n, c, score, steps and cost_usd as
    its frame has them. None when a row's task is not in the benchmark's ``tasks`` table (it has no place).
    ``task_ids`` false: the tasks' ids are not read (``CodedRows.task_ids`` holds None per task)."""
    sql = _KEYS.format(task_key="task_id" if task_ids else "NULL")
    keys = _arrow(con, sql, {"run_ids": params["run_ids"], "benchmark": benchmark})
    kind = keys.column("kind").to_numpy()
    is_task = kind == 1
    ids = keys.column("key").to_numpy(zero_copy_only=False)  # the keys' text (None for a task when not asked)
    codes = keys.column("code").fill_null(-1).to_numpy().astype(np.int64)
    runs, tasks = kind == 0, is_task  # each kind's rows in id order: a key's place is its row among its kind's
    run_codes = sorted({int(c) for c in codes[runs] if c >= 0})
    marks = ", ".join(f"$r{i}" for i in range(len(run_codes))) or "NULL"
    values = {"exclude_errored": params["exclude_errored"], **{f"r{i}": c for i, c in enumerate(run_codes)}}
    rows = query_number_columns(con, _ROWS.format(runs=marks), values)
    run_ix = _places(codes[runs], np.asarray(rows["run_code"], dtype=np.int64))
    task_ix = _places(codes[tasks], np.asarray(rows["task_code"], dtype=np.int64))
    if (task_ix < 0).any() or (run_ix < 0).any():  # a task not in the tasks table: no place
        return None
    columns = {
        "n": rows["n"],
        "c": rows["c"].astype(np.float64),  # HUGEINT in the text read: pandas' float
        **{col: rows[col] for col in ("score", "steps", "cost_usd")},
    }
    first_task = int(runs.sum())  # the tasks follow the runs (ORDER BY kind), the scoring follows them
    kinds = {col: _kind_codes(keys.column(col).slice(first_task, int(tasks.sum()))) for col in ("level", "category")}
    scoring = ids[kind == 2]
    return CodedRows(
        ids[runs], ids[tasks], run_ix, task_ix, columns, kinds, None if not len(scoring) else str(scoring[0])
    )


class KindCodes(NamedTuple):
    """The benchmark's tasks' level (or category) as codes: ``names``, the distinct values as text, sorted, and
    per task (in the keys' order) its value's place among them (-1: none). The slices' own codes (``compute``'s
    ``_slice_codes`` of the values), read from Arrow's dictionary of the column instead of one Python string per
    task (66,667 at 10M attempts) hashed again."""

    names: list[str]
    codes: np.ndarray

    def values(self) -> np.ndarray:
        """Each task's value as text (None for none): the column as an object array."""
        named = np.array([*self.names, None], dtype=object)
        return named[self.codes]  # -1: the None at the end


def _kind_codes(column: pa.ChunkedArray) -> KindCodes:
    """``KindCodes`` of a text column (one value per task)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    found = [str(v) for v in encoded.dictionary.to_pylist()]
    names = sorted(set(found))
    place = np.array([names.index(v) for v in found], dtype=np.int64)
    at = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return KindCodes(names, np.where(at >= 0, place[np.maximum(at, 0)] if len(place) else -1, -1))


def _arrow(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> pa.Table:
    """One parameterised statement's result as an Arrow table (``query_df``'s errors): text columns stay Arrow
    strings, not one Python object per value."""
    try:
        result = con.execute(sql, params).arrow()
    except duckdb.Error as exc:
        raise QueryError(str(exc), sql, params) from exc
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


def _sorted_by(key: np.ndarray) -> np.ndarray | None:
    """The stable order that sorts ``key``, None when it is sorted already (strictly increasing)."""
    return None if bool((key[1:] > key[:-1]).all()) else np.argsort(key, kind="stable")


def _coded_read(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], benchmark: str | None
) -> tuple[pd.DataFrame, np.ndarray | None, dict[str, np.ndarray]]:
    """``_coded_outcomes``, each row's task code (its task's place among the benchmark's coded task ids in their order;
    None when the text keys were read) and the benchmark's tasks' ``level`` and ``category`` in that order (empty
    when the text keys were read): ``_read_coded``'s rows put in (run, task) order, the frame built once from the
    arrays. A row whose task is not in the benchmark's ``tasks`` table has no place: then the text keys are read."""
    read = _read_coded(con, params, benchmark)
    if read is None:
        return query_df(con, f"{load_sql('task_outcome_rows')}\nORDER BY run_id, task_id", params), None, {}
    order = _sorted_by(read.run_ix * max(len(read.task_ids), 1) + read.task_ix)

    def ordered(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    run_ix, task_ix = ordered(read.run_ix), ordered(read.task_ix)
    columns: dict[str, object] = {
        "run_id": read.run_ids[run_ix] if len(run_ix) else np.empty(0, dtype=object),
        "task_id": read.task_ids[task_ix] if len(task_ix) else np.empty(0, dtype=object),
        **{col: ordered(values) for col, values in read.columns.items()},
    }
    # copy=False: the arrays become the frame's columns as they are (consolidating the float columns into one block
    # copied them all: 0.04-0.1 CPU s at 867k rows)
    return pd.DataFrame(columns, copy=False), task_ix, {col: kind.values() for col, kind in read.described.items()}


class BoardRows(NamedTuple):
    """The Leaderboard's rows of its runs without their text keys (``board_rows``), in the order read.

    Attributes:
        run_pos: per row, its run's row in the runs frame.
        task_codes: per row, its task's place among the benchmark's coded task ids in their order.
        columns: n, c, score, steps and cost_usd per row (``OUTCOME_COLUMNS``), as ``task_outcomes`` has them.
        task_kinds: the benchmark's tasks' ``level`` and ``category`` as codes (``KindCodes``), indexed by task code.
        order: the rows in the runs frame's order and, within a run, the task ids' (None: they are in it).
        scoring: the benchmark's scoring (``benchmark_scoring``'s), read with the keys.
    """

    run_pos: np.ndarray
    task_codes: np.ndarray
    columns: dict[str, np.ndarray]
    task_kinds: dict[str, KindCodes]
    order: np.ndarray | None
    scoring: str | None


def board_rows(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter, *, runs: pd.DataFrame, exclude_errored: bool = False
) -> BoardRows | None:
    """The headline score's rows of ``runs`` (``runs.load_runs`` of ``run_filter``) for ``compute.board_of_rows``:
    ``coded_task_outcomes``' values without the run and task ids of every row and left in the order read (the
    board reads each run's rows by their places in ``order``: at 10M attempts, 867k rows' two object columns,
    their hashing into the runs frame and two copies of every column in another order were 0.1 CPU s). None when
    the rows must be read by their text keys (a task missing from the ``tasks`` table)."""
    run_ids = runs["run_id"].astype(str).tolist()
    params = {"run_ids": run_ids, "exclude_errored": bool(exclude_errored)}
    read = _read_coded(con, params, run_filter.benchmark, task_ids=False)
    if read is None:
        return None
    frame_pos = pd.Index(run_ids).get_indexer(read.run_ids)  # each key's row in the runs frame (the keys: its ids)
    run_pos = frame_pos[read.run_ix] if len(read.run_ix) else np.empty(0, dtype=np.int64)
    order = _sorted_by(run_pos * max(len(read.task_ids), 1) + read.task_ix)
    return BoardRows(run_pos, read.task_ix, read.columns, read.described, order, read.scoring)


class OutcomeOptions(TypedDict, total=False):
    """The keywords of ``task_outcomes`` and ``coded_task_outcomes`` (see ``task_outcomes``)."""

    runs: pd.DataFrame | None
    exclude_errored: bool
    scorer: str | None
    threshold: float | None


def task_outcomes(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS, **options: Unpack[OutcomeOptions]
) -> pd.DataFrame:
    """One row per (run, task), ordered by run and task: samples, successes, mean score, tool calls, cost, and
    the task's level and category. ``scorer`` reads that scorer's values (``analytics.scorers``; ``threshold``
    is its pass mark, None for no pass rate) instead of the headline score.

    The aggregation happens in DuckDB, so only runs x tasks rows reach pandas; the task's level and category are
    read once per task and attached here (cheaper than one text value per row from the database). ``runs`` is
    the result of ``runs.load_runs`` for the same filter, when the caller has it already. ``exclude_errored``
    leaves errored attempts (status ``crashed``) out, as Inspect's accuracy does; by default they count as
    failures.
    """
    return coded_task_outcomes(con, run_filter, **options)[0]


def coded_task_outcomes(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    runs: pd.DataFrame | None = None,
    exclude_errored: bool = False,
    scorer: str | None = None,
    threshold: float | None = None,
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """``task_outcomes`` and each row's task code: the place of its task id among the benchmark's coded task ids in
    their order (so the codes sort as the ids do), or None when the rows were read by their text keys (a scorer's
    values, a task missing from the ``tasks`` table). With codes, a task's level and category are attached by
    its code instead of hashing every row's task id (0.2 s at 867k rows)."""
    if runs is None:
        runs = load_runs(con, run_filter)
    params = {"run_ids": runs["run_id"].astype(str).tolist(), "exclude_errored": bool(exclude_errored)}
    codes: np.ndarray | None = None
    if scorer is not None:
        ids = params["run_ids"]
        out = scorers.scorer_outcomes(
            con, run_ids=ids, scorer=scorer, threshold=threshold, exclude_errored=bool(exclude_errored)
        )
    else:
        out, codes, described = _coded_read(con, params, run_filter.benchmark)
    if codes is not None:  # in task-id order, as the codes count; the frame's columns kept as they are (no copy)
        more = {col: described[col][codes] for col in ("level", "category")}
        return pd.DataFrame({**{col: out[col].to_numpy() for col in out.columns}, **more}, copy=False), codes
    tasks = query_df(con, "SELECT task_id, level, category FROM tasks WHERE benchmark = ?", [run_filter.benchmark])
    at = pd.Index(tasks["task_id"]).get_indexer(out["task_id"])
    for col in ("level", "category"):
        values = tasks[col].to_numpy(dtype=object)
        out[col] = np.where(at >= 0, values[np.maximum(at, 0)] if len(values) else None, None)
    return out, None


def benchmark_threshold(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> float:
    """The benchmark's pass threshold (0.5 when unknown)."""
    rows = query_df(con, "SELECT pass_threshold FROM benchmarks WHERE benchmark = ?", [benchmark])
    return 0.5 if rows.empty else float(rows["pass_threshold"].iloc[0])


def benchmark_scoring(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> str | None:
    """The benchmark's scoring (``binary``, ``graded``, ``continuous``), None when unknown."""
    rows = query_df(con, "SELECT scoring FROM benchmarks WHERE benchmark = ?", [benchmark])
    return None if rows.empty else str(rows["scoring"].iloc[0])


def ranked_score(
    con: duckdb.DuckDBPyConnection, *, benchmark: str, scorer: str | None
) -> tuple[str | None, str | None, float | None]:
    """The score a leaderboard ranks: ``(scorer, scoring, threshold)``. Without a scorer: the headline score and
    the benchmark's scoring (no threshold). With one: its checked name (``scorers.check_scorer``), its scale and
    its pass mark (1.0 for a 0/1 scorer, the benchmark's threshold for a continuous one on a continuous
    benchmark, else 0.5; None for a scorer on its own scale)."""
    scoring = benchmark_scoring(con, benchmark=benchmark)
    threshold: float | None = None
    if scorer is not None:
        scorer = scorers.check_scorer(con, benchmark=benchmark, scorer=scorer)
        scoring = scorers.scorer_scale(con, benchmark=benchmark, scorer=scorer)
        is_continuous = benchmark_scoring(con, benchmark=benchmark) == "continuous"  # else its 1.0 is for 0/1 values
        cut = benchmark_threshold(con, benchmark=benchmark) if is_continuous else 0.5
        threshold = {"binary": 1.0, "continuous": cut}.get(scoring)
    return scorer, scoring, threshold

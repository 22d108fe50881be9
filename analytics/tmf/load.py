"""Loading: the only functions of the TMF that touch the database (per run x task rows, stored IRT abilities)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd

from analytics import compare
from analytics.runs.compute import RUN_STATE_SQL, with_completeness
from analytics.tmf.codes import (
    first_rows_of,
    run_values,
)
from analytics.tmf.model import (
    TmfError,
    slice_names,
    slice_tasks,
)
from store import ALL_RUNS, QueryError, RunFilter, query_df, query_number_columns, query_rows, with_run_filter
from store.retries import IS_SUPERSEDED_SQL


@dataclass(frozen=True)
class TmfInputs:
    """What the TMF analysis reads: per (run, task) rows and the stored IRT abilities (may be empty).

    ``runs``: the run details (``RUN_COLUMNS`` and ``is_baseline``) once per run, in the order of the rows'
    ``run_code``, when the rows hold only the run id and that code (as ``load`` gives them: 867k rows at 10M
    attempts for 13 runs); None when every row holds its run's details (a frame built by hand).
    """

    benchmark: str
    tasks: pd.DataFrame
    abilities: pd.DataFrame
    runs: pd.DataFrame | None = None
    has_irt_fit: bool | None = None  # ``has_irt_fit`` of the benchmark, read with the runs by ``load`` (None: not read)
    superseded: tuple[str, ...] = ()  # runs left out because a retry superseded them (``store.retries``), by ``load``
    # incomplete runs (the leaderboard's ``is_complete``: ``runs.with_completeness``), each as "run id (why)": left
    # out by ``load`` unless it was asked to include them (``included_incomplete``)
    incomplete: tuple[str, ...] = ()
    included_incomplete: bool = False

    def with_details(self) -> pd.DataFrame:
        """The rows with their run's details in every row (``attach_details``'s frame and column order, plus the
        code columns): ``tasks`` itself when it holds them."""
        if self.runs is None:
            return self.tasks
        at = self.tasks["run_code"].to_numpy()
        out: dict[str, object] = {"run_id": self.tasks["run_id"]}
        for col in self.runs.columns.drop("run_id"):
            out[col] = self.runs[col].take(at).reset_index(drop=True)
        for col in self.tasks.columns.drop("run_id"):
            out[col] = self.tasks[col]
        return pd.DataFrame(out)

    @cached_property
    def task_table(self) -> pd.DataFrame:
        """One row per task present in ``tasks`` (task_id, level, category, human_minutes): what the human
        baseline reads, without going through every (run, task) row again for each slice and period."""
        if "task_code" not in self.tasks:
            first = ~self.tasks["task_id"].duplicated().to_numpy(dtype=bool)
            return self.tasks.loc[first, ["task_id", "level", "category", "human_minutes"]]
        # each task's first row, as ``~duplicated()`` keeps it, from its code, in row order; each column's rows
        # taken alone (``.loc[rows, columns]`` copied the 867k rows of every column asked for at 10M attempts)
        at = np.sort(first_rows_of(self.tasks, "task_id"))
        return pd.DataFrame(
            {col: self.tasks[col].take(at) for col in ["task_id", "level", "category", "human_minutes"]}
        )

    @cached_property
    def _values(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per slice kind asked for so far, ``pd.factorize`` of its column (codes, values): made once."""
        return {}

    def _coded(self, kind: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``pd.factorize(tasks[kind])`` when the column is text (as the database gives it), else None."""
        if kind not in ("level", "category") or self.tasks[kind].dtype != object:
            return None
        if kind not in self._values:
            codes, values = pd.factorize(self.tasks[kind].to_numpy())
            self._values[kind] = (codes, np.asarray(values, dtype=object))
        return self._values[kind]

    def slice(self, slice_name: str | None) -> pd.DataFrame:
        """``slice_tasks(self.tasks, slice_name)``: the same rows, found from the slice column's codes (one
        comparison per value instead of one per row)."""
        kind, _, value = (slice_name or "").partition("=")
        coded = self._coded(kind) if value else None
        if coded is None:
            return slice_tasks(self.tasks, slice_name)
        codes, values = coded
        hit = np.append(np.array([bool(v == value) for v in values], dtype=bool), False)  # code -1: no value
        return self.tasks[hit[codes]]

    def slice_names(self, kind: str) -> list[str]:
        """``slice_names(self.tasks, kind)``, from the column's codes."""
        coded = self._coded(kind)
        if coded is None:
            return slice_names(self.with_details(), kind)
        codes, values = coded
        run_kind = run_values(self.tasks, "kind", self.runs)
        agent = np.asarray(run_kind != "human", dtype=bool) & (codes >= 0)
        present = np.flatnonzero(np.bincount(codes[agent], minlength=len(values)))
        return [f"{kind}={v}" for v in sorted({str(v) for v in values[present]})]


RUN_COLUMNS = [
    "run_id",
    "agent",
    "agent_version",
    "family",
    "kind",
    "eval_date",
    "price_input_per_mtok",
    "price_output_per_mtok",
]


TASK_COLUMNS = ["task_id", "level", "category", "human_minutes"]


ROW_COLUMNS = ["n", "c", "score", "cost_usd", "input_tokens", "output_tokens", "latency_s"]  # per (run, task)


def row_columns_for(performance: str, cost_source: str, is_repriced: bool) -> tuple[str, ...]:
    """The ``ROW_COLUMNS`` an analysis of these options reads (``model.run_points``, ``row_costs``, the bootstrap):
    the samples, successes, logged cost and latency always; the mean score for any performance but Pass@1; the
    tokens for a cost from tokens or repriced. The page's default (Pass@1, logged cost) reads four of the seven."""
    wanted = {"n", "c", "cost_usd", "latency_s"}
    if performance != "pass@1":
        wanted.add("score")
    if cost_source == "tokens" or is_repriced:
        wanted.update(("input_tokens", "output_tokens"))
    return tuple(c for c in ROW_COLUMNS if c in wanted)


def load(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    with_abilities: bool = True,
    on_task_count: Callable[[int], object] | None = None,
    row_columns: tuple[str, ...] | None = None,
    include_incomplete: bool = False,
) -> TmfInputs:
    """Per (run, task) rows of the filter's benchmark (human runs always included, whatever agents it names) and its
    newest IRT abilities (without ``with_abilities``: none read, an empty frame, for an analysis that is not of
    IRT abilities and so never reads them).

    ``on_task_count``: called with the number of the benchmark's tasks that have rows in the store (its coded
    tasks), after the tasks' statement and before the runs and the rows are read, when there is one (the page
    starts the bootstrap's draw with it: ``bootstrap.prefetch_weights``).

    ``row_columns``: the ``ROW_COLUMNS`` to read (``row_columns_for`` the options to be analysed; default: all). The
    rows' frame has only those of them, in ``ROW_COLUMNS``' order; every other column is the same.

    Rows are ordered by the run's evaluation date (undated last), agent and run id, then task id.
    A run a retry superseded (``store.retries``: the leaderboard's rule) is left out, named in ``superseded``. An
    incomplete run (the leaderboard's rule, ``runs.with_completeness``: an unfinished log status, or fewer attempts
    held than the log counts, counted from the rows read) is left out unless ``include_incomplete``, named in
    ``incomplete`` either way.

    Raises:
        TmfError: the filter names no benchmark (an analysis is of one benchmark).
    """
    benchmark = run_filter.benchmark
    if benchmark is None:
        raise TmfError("a Tech-Market-Fit analysis is of one benchmark: the run filter names none")
    # the tasks first (their codes alone, migration 016): their number starts the draw that waits for it, before the
    # runs' statement, which then counts no task of its own (0.02 CPU s of it at 10M attempts: BENCHMARKS.md "TMF
    # first render at ten million, tenth pass")
    tasks, task_codes = _tasks_and_codes(con, benchmark)
    if on_task_count is not None and len(task_codes["task_code"]):  # no coded task: nothing to analyse
        on_task_count(len(task_codes["task_code"]))
    params = dataclasses.replace(run_filter, with_humans=True).params()
    runs = query_df(
        con,
        with_run_filter(
            f"SELECT {', '.join('r.' + c for c in RUN_COLUMNS)}, {compare.IS_BASELINE_SQL} AS is_baseline,"
            f" rc.run_code, ({_HAS_IRT_FIT_SQL.replace('?', '$benchmark')}) AS has_irt_fit"
            f", {IS_SUPERSEDED_SQL} AS is_superseded, {RUN_STATE_SQL}"
            f" FROM runs r LEFT JOIN tmf_run_codes rc ON rc.run_id = r.run_id {_RUNS_WHERE} ORDER BY {_RUN_ORDER}"
        ),
        params,
    )
    has_irt, is_superseded = runs.pop("has_irt_fit"), runs.pop("is_superseded")
    superseded = tuple(str(r) for r in runs["run_id"][is_superseded.to_numpy(dtype=bool)])
    if superseded:  # a retried run is the retry's (the leaderboard's rule): left out, as if never run
        runs = runs[~is_superseded.to_numpy(dtype=bool)].reset_index(drop=True)
    run_codes = runs.pop("run_code")
    state = pd.DataFrame({c: runs.pop(c) for c in ("log_status", "completed", "total")})
    outcomes = _coded_rows(con, run_codes, task_codes, ROW_COLUMNS if row_columns is None else row_columns)
    incomplete, keep = _incomplete(runs, state, outcomes)
    if keep is not None and not include_incomplete:  # a run cut short is on other tasks: no point by default
        runs, outcomes = _without_runs(runs, outcomes, keep)
    outcomes["task_id"] = _task_ids(outcomes, tasks)
    abilities = irt_abilities(con, benchmark=benchmark) if with_abilities else pd.DataFrame(columns=ABILITY_COLUMNS)
    rows = details_by_code(outcomes, runs, tasks, run_details=False)
    has_irt_fit = bool(has_irt.iloc[0]) if len(has_irt) else None
    return TmfInputs(
        benchmark, rows, abilities, runs, has_irt_fit, superseded, incomplete, include_incomplete and bool(incomplete)
    )


def _incomplete(
    runs: pd.DataFrame, state: pd.DataFrame, outcomes: dict[str, np.ndarray | None]
) -> tuple[tuple[str, ...], np.ndarray | None]:
    """The incomplete runs, as "run id (log status, k of n samples)", and the mask of the runs to keep without them
    (None: every run is complete). ``runs.with_completeness`` decides (the leaderboard's rule), with the attempts
    each run holds summed from its rows (``n``, always read): no statement of its own."""
    ids = runs["run_id"].astype(str).tolist()
    held: dict[str, int] = {}
    if state["total"].notna().any():  # the attempts are read only for a log that counts its samples
        run_at = np.asarray(outcomes["run_at"], dtype=np.int64)
        n = outcomes.get("n")
        weights = None if n is None else np.asarray(n, dtype=float)
        by_place = np.bincount(run_at, weights=weights, minlength=len(runs)) if len(run_at) else np.zeros(len(runs))
        held = {r: int(h) for r, h in zip(ids, by_place, strict=True)}
    rated = with_completeness(state.assign(run_id=ids), held)
    complete = rated["is_complete"].to_numpy(dtype=bool)
    if complete.all():
        return (), None
    from analytics.leaderboard.report import incomplete_label  # the leaderboard's words, only when one is needed

    named = tuple(f"{r} ({incomplete_label(row)})" for r, row in zip(ids, state.to_dict("records"), strict=True))
    return tuple(name for name, ok in zip(named, complete, strict=True) if not ok), complete


def _without_runs(
    runs: pd.DataFrame, outcomes: dict[str, np.ndarray | None], keep: np.ndarray
) -> tuple[pd.DataFrame, dict[str, np.ndarray | None]]:
    """``runs`` and their rows (``_coded_rows``'s, by ``run_at``) without the runs ``keep`` is false for."""
    run_at = np.asarray(outcomes["run_at"], dtype=np.int64)
    kept_rows = keep[run_at]
    place = np.cumsum(keep) - 1
    out = {k: None if v is None else np.asarray(v)[kept_rows] for k, v in outcomes.items()}
    out["run_at"] = place[run_at[kept_rows]]
    return runs[keep].reset_index(drop=True), out


ABILITY_COLUMNS = ["subject", "agent", "agent_version", "ability", "ability_lo", "ability_hi", "fit_key"]


def _query_columns(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> dict[str, np.ndarray]:
    """The columns of one parameterised statement as arrays, as ``query_df`` gives them (NULL: NaN in a number
    column, None in a text one), without a DataFrame in between: the rows' frame is built once, by
    ``details_by_code`` (a frame of 867k rows costs a copy of every column at 10M attempts).

    Raises:
        QueryError: the statement failed (with its SQL and parameters).
    """
    try:
        arrays = con.execute(sql, params).fetchnumpy()
    except duckdb.Error as exc:
        raise QueryError(str(exc), sql, params) from exc
    out = {}
    for name, values in arrays.items():
        if isinstance(values, np.ma.MaskedArray):
            if values.dtype.kind in "iufb":
                values = np.ma.filled(values.astype(float), np.nan)
            else:  # ``np.ma.filled(..., None)`` would fill the array's own fill value ("?"), not None
                missing = np.ma.getmaskarray(values)
                values = np.ma.getdata(values).astype(object)
                values[missing] = None
        out[name] = np.asarray(values)
    return out


_RUNS_WHERE = "WHERE r.benchmark = $benchmark AND $run_filter"


# c as count_if gave it (a HUGEINT, which numpy got as a float): a DOUBLE, the same floats (counts far below 2**53)
_ROW_SQL = {c: "c::DOUBLE AS c" if c == "c" else c for c in ROW_COLUMNS}


_RUN_ORDER = "r.eval_date NULLS LAST, r.agent, r.run_id"


def _tasks_and_codes(con: duckdb.DuckDBPyConnection, benchmark: str) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The benchmark's listed tasks that have a code (``TASK_COLUMNS``, by task id) and its task codes
    (``tmf_task_codes``), one row per coded task: its place among those tasks (``task_at``, -1 for a task the
    benchmark does not list, whose id is ``unlisted_task_id``) and among every coded task id (``task_rank``). One
    statement of the codes alone, in task id order: each code keeps its task's level, category, listing (migration
    015) and human minutes (016), the ``tasks`` table's, so no task is joined (the codes joined to the listed tasks
    cost 0.076-0.095 CPU s against 0.040-0.046 at 10M attempts: BENCHMARKS.md "TMF first render at ten million, tenth
    pass"). A listed task without a code has no (run, task) row, so nothing takes its details: it is not read."""
    both = _query_columns(
        con,
        f"""
        SELECT {", ".join(TASK_COLUMNS)}, is_listed IS TRUE AS is_listed, task_code
        FROM tmf_task_codes
        WHERE benchmark = $benchmark
        ORDER BY task_id""",
        {"benchmark": benchmark},
    )
    listed = np.asarray(both.pop("is_listed"), dtype=bool)
    code = both.pop("task_code")
    tasks = pd.DataFrame({col: values[listed] for col, values in both.items()})
    task_at = np.where(listed, np.cumsum(listed) - 1, -1)
    codes = {
        "task_code": np.asarray(code, dtype=np.int64),
        "task_at": task_at,
        "unlisted_task_id": np.where(task_at < 0, both["task_id"], np.array(None, dtype=object)),
        "task_rank": np.arange(len(code), dtype=np.int64),
    }
    return tasks, codes


def _coded_rows(
    con: duckdb.DuckDBPyConnection,
    run_codes: pd.Series,
    task_codes: dict[str, np.ndarray],
    columns: Sequence[str] = tuple(ROW_COLUMNS),
) -> dict[str, np.ndarray | None]:
    """The per (run, task) rows of the runs read (``run_codes``: each one's ``tmf_run_codes`` code, in the runs'
    order, NaN for a run without rows) from ``run_task_tmf`` (migration 012, kept at ingest: ``run_task_stats``'s
    columns under integer codes), as ``tmf_run_tasks.sql`` gives them, with each row's run as its place in the runs
    read (``run_at``) and its task as its place among the benchmark's task ids (``task_at``, -1 for a task the
    benchmark does not list, whose id is ``unlisted_task_id``), rows in the runs' order then by task id: what
    ``attach_details`` gave, read as integers and numbers of the runs' row groups only, without joining any row on
    the text of its run or task id.

    One statement, the rows of the runs' codes (``task_codes``: ``_task_codes`` of the benchmark, read before); the
    rows are put in order by their (run, task) places only when they do not come in it already (``_row_order``).
    ``columns``: the ``ROW_COLUMNS`` read (in their order). ``unlisted_task_id`` is None when every row's task is
    listed (no column of 867k Nones to build and reorder at 10M attempts).
    """
    unknown = [c for c in columns if c not in _ROW_SQL]
    if unknown:
        raise TmfError(f"row columns {unknown}: expected some of {', '.join(ROW_COLUMNS)}")
    selected = [_ROW_SQL[c] for c in ROW_COLUMNS if c in columns]
    codes = run_codes.to_numpy(dtype=float)
    present = np.flatnonzero(~np.isnan(codes))
    rows = query_number_columns(
        con,
        f"""
        SELECT {", ".join(["run_code", "task_code", *selected])}
        FROM run_task_tmf
        WHERE list_contains($codes::INTEGER[], run_code)""",
        {"codes": [int(v) for v in codes[present]]},
    )
    run_code, task_code = (np.asarray(rows.pop(k), dtype=np.int64) for k in ("run_code", "task_code"))
    size = int(max(codes[present].max(initial=-1), run_code.max(initial=-1))) + 1
    run_place = np.full(size, -1, dtype=np.int64)
    run_place[codes[present].astype(np.int64)] = present
    t_code = np.asarray(task_codes["task_code"], dtype=np.int64)
    size = int(max(t_code.max(initial=-1), task_code.max(initial=-1))) + 1
    task_place, task_rank = np.full(size, -1, dtype=np.int64), np.full(size, -1, dtype=np.int64)
    task_place[t_code] = np.asarray(task_codes["task_at"], dtype=np.int64)
    task_rank[t_code] = np.asarray(task_codes["task_rank"], dtype=np.int64)
    run_at, rank = run_place[run_code], task_rank[task_code]
    if (rank < 0).any() or (run_at < 0).any():  # a code the statements do not know: the store is not consistent
        raise TmfError("run_task_tmf holds a task code that tmf_task_codes lacks for this benchmark")
    order = _row_order(run_at, rank, len(t_code) + 1)
    task_at = task_place[task_code]
    out: dict[str, np.ndarray | None] = {"run_at": run_at, "task_at": task_at, "unlisted_task_id": None}
    if (task_at < 0).any():  # the text of an unlisted task's id, only where there is one
        unlisted = np.full(size, None, dtype=object)
        unlisted[t_code] = task_codes["unlisted_task_id"]
        out["unlisted_task_id"] = unlisted[task_code]
    out.update(rows)
    return out if order is None else _all_reordered(out, order)


class Stretches(NamedTuple):
    """A permutation that is a reordering of whole stretches of rows: output stretch ``i`` is the input's rows
    ``starts[i]:stops[i]`` (``stops[i] - starts[i]`` rows), the stretches following one another in the output."""

    starts: np.ndarray
    stops: np.ndarray


def _row_order(run_at: np.ndarray, rank: np.ndarray, n_ranks: int) -> np.ndarray | Stretches | None:
    """The permutation that puts rows in order of (``run_at``, ``rank``), None when they are in it already. The
    store keeps each run's rows together in task order, runs in the order of their codes rather than of the runs
    read (by date): then the permutation is one stretch per run (``Stretches``), which ``_reordered`` copies a
    stretch at a time instead of gathering every row (0.054 of 0.067 CPU s of the reorder at 10M attempts, 867k
    rows of 6 columns: BENCHMARKS.md "TMF first render at ten million, ninth pass"); otherwise a stable sort's
    order (the rows as another writer or a scan in parallel may give them)."""
    key = run_at * n_ranks + rank
    rising = key[1:] > key[:-1]
    if bool(rising.all()):
        return None
    # the sorted stretches of one run each, as they come (a run's rows that follow another's in key order are a
    # stretch of their own: runs 0, 2, 1 are three stretches, not "0, 2" and "1")
    starts = np.flatnonzero(np.concatenate(([True], ~rising | (run_at[1:] != run_at[:-1]))))
    if len(starts) > max(_MAX_STRETCHES, len(key) // 1024):  # short stretches: a copy each would cost more
        return np.argsort(key, kind="stable")
    stops = np.append(starts[1:], len(key))
    by_key = np.argsort(key[starts], kind="stable")
    starts, stops = starts[by_key], stops[by_key]
    # whole stretches in order only when each one's last key is below the next one's first
    if bool((key[stops[:-1] - 1] < key[starts[1:]]).all()):
        return Stretches(starts, stops)
    return np.argsort(key, kind="stable")


_MAX_STRETCHES = 256  # stretches copied one at a time at most (more when the rows are many: 1 a 1,024 rows)


def _reordered(values: np.ndarray, order: np.ndarray | Stretches) -> np.ndarray:
    """``values`` in the order ``_row_order`` gave: ``values[order]`` (a ``Stretches``' copied a stretch at a
    time into one new array: the same values)."""
    if not isinstance(order, Stretches):
        return values[order]
    out = np.empty_like(values)
    at = 0
    for start, stop in zip(order.starts.tolist(), order.stops.tolist(), strict=True):
        out[at : at + stop - start] = values[start:stop]
        at += stop - start
    return out


def _all_reordered(
    columns: dict[str, np.ndarray | None], order: np.ndarray | Stretches
) -> dict[str, np.ndarray | None]:
    """``_reordered`` of every column (None stays None), every other one by a second thread (``_REORDERER``): each
    column's copy is the same whichever thread makes it. At 10M attempts the rows' 6 columns of 867k rows (42 MB of new
    pages) took 0.07 s of the page's thread after the bootstrap's draw had left the other core idle (BENCHMARKS.md
    "TMF first render at ten million, eleventh pass")."""
    names = [name for name, v in columns.items() if v is not None]
    theirs = names[1::2]

    def reorder(which: list[str]) -> dict[str, np.ndarray]:
        return {name: _reordered(np.asarray(columns[name]), order) for name in which}

    other = _REORDERER.submit(reorder, theirs) if len(names) > 1 else None
    mine = reorder([name for name in names if name not in theirs] if other is not None else names)
    done = mine | (other.result() if other is not None else {})
    return {name: done.get(name) for name in columns}


_REORDERER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tmf-reorder-rows")


def _task_ids(outcomes: dict[str, np.ndarray | None], tasks: pd.DataFrame) -> np.ndarray:
    """Each row's task id (text): its listed task's in ``tasks`` (by ``task_at``), else its ``unlisted_task_id``
    (None when every row's task is listed)."""
    task_at = np.asarray(outcomes["task_at"], dtype=np.int64)
    unlisted = outcomes.pop("unlisted_task_id")
    if not len(tasks):
        return np.full(len(task_at), None, dtype=object) if unlisted is None else np.asarray(unlisted, dtype=object)
    ids = tasks["task_id"].to_numpy(dtype=object).take(np.maximum(task_at, 0))
    if unlisted is not None:
        missing = task_at < 0
        ids[missing] = unlisted[missing]
    return ids


def attach_details(outcomes: pd.DataFrame, runs: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Per (run, task) outcomes with their run's (``RUN_COLUMNS``) and task's (``TASK_COLUMNS``) details, rows in
    the order of ``runs`` then as given (a task missing from ``tasks`` gets empty details)."""
    run_at = pd.Index(runs["run_id"]).get_indexer(outcomes["run_id"])
    order = np.argsort(run_at, kind="stable")
    order = order[run_at[order] >= 0]
    rows = outcomes.iloc[order].reset_index(drop=True)
    run_at = run_at[order]
    task_at = pd.Index(tasks["task_id"]).get_indexer(rows["task_id"])
    out = {"run_id": rows["run_id"]}
    for col in RUN_COLUMNS[1:] + [c for c in ("is_baseline",) if c in runs]:
        out[col] = _taken(runs[col], run_at)
    out["task_id"] = rows["task_id"]
    for col in TASK_COLUMNS[1:]:
        values = tasks[col] if len(tasks) else pd.Series([None], dtype=tasks[col].dtype)
        out[col] = values.take(np.maximum(task_at, 0)).reset_index(drop=True).where(task_at >= 0, None)
    for col in outcomes.columns.drop(["run_id", "task_id"]):
        out[col] = rows[col]
    return pd.DataFrame(out)


def details_by_code(
    outcomes: pd.DataFrame | dict[str, np.ndarray],
    runs: pd.DataFrame,
    tasks: pd.DataFrame,
    *,
    run_details: bool = True,
) -> pd.DataFrame:
    """``attach_details`` of rows that name their run and task by position (``run_at`` in ``runs``, ``task_at`` in
    ``tasks``, -1 for none), already in the runs' order: the same frame, plus the integer columns ``run_code`` (the
    run's position) and ``task_code`` (the task's, when every row's task is listed) that the analysis uses instead of
    hashing the ids of every row again. Without ``run_details`` the rows hold the run id and ``run_code`` only
    (``TmfInputs.runs`` holds the details once per run)."""
    run_at = np.asarray(outcomes["run_at"], dtype=np.int64)
    task_at = np.asarray(outcomes["task_at"], dtype=np.int64)
    out: dict[str, object] = {}
    for col in RUN_COLUMNS + [c for c in ("is_baseline",) if c in runs] if run_details else ["run_id"]:
        out[col] = _taken(runs[col], run_at)
    out["task_id"] = outcomes["task_id"]
    listed = task_at >= 0
    every_listed = bool(listed.all())
    for col in TASK_COLUMNS[1:]:
        values = tasks[col] if len(tasks) else pd.Series([None], dtype=tasks[col].dtype)
        taken = _taken(values, np.maximum(task_at, 0))
        out[col] = taken if every_listed else taken.where(listed, None)
    for col in outcomes:
        if col not in ("run_at", "task_at", "task_id"):
            out[col] = outcomes[col]
    out["run_code"] = run_at
    if every_listed:
        out["task_code"] = task_at
    return _unconsolidated_frame(out, len(run_at))


def _taken(values: pd.Series, at: np.ndarray) -> pd.Series:
    """``values.take(at).reset_index(drop=True)`` without the copy of the taken values that ``reset_index`` makes:
    the new Series gets the default index in place."""
    taken = values.take(at)
    taken.index = pd.RangeIndex(len(taken))
    return taken


def _unconsolidated_frame(columns: dict[str, object], n_rows: int) -> pd.DataFrame:
    """``pd.DataFrame(columns)`` (the same columns, order, dtypes and values) with each column in its own block,
    holding the arrays given instead of a copy of each: ``copy=False`` neither copies nor stacks every column of a
    type into one 2-D copy (BENCHMARKS.md "TMF at ten million attempts, third pass"), where a column set at a time
    copied each of the 867k rows' 16 columns at 10M attempts ("TMF first render at ten million, fifth pass").
    The arrays are the caller's own (read or taken for this frame), which nothing changes in place."""
    if n_rows == 0:
        return pd.DataFrame(columns)
    return pd.DataFrame(columns, index=pd.RangeIndex(n_rows), copy=False)


def irt_abilities(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> pd.DataFrame:
    """Abilities of the newest IRT fit of ``benchmark`` (subject = agent + ' ' + version), or an empty frame."""
    return query_df(
        con,
        f"""
        WITH newest AS ({_NEWEST_FIT_SQL})
        SELECT subject, agent, agent_version, ability, ability_lo, ability_hi, fit_key
        FROM irt_abilities JOIN newest USING (fit_key)""",
        [benchmark],
    )


def has_irt_fit(con: duckdb.DuckDBPyConnection, *, benchmark: str) -> bool:
    """True when a stored IRT fit gives abilities for ``benchmark`` (``irt_abilities`` is not empty), asked without
    reading the abilities."""
    rows = query_rows(con, _HAS_IRT_FIT_SQL, [benchmark])
    return bool(rows[0][0])


# the newest fit of the benchmark (the largest key among fits made at the same instant). An aggregate whose FILTER
# picks the benchmark, not a WHERE nor ORDER BY ... LIMIT 1: a lake keeps this small table inlined in its catalog, where
# a filter pushed into the scan and a top-N's second scan cost 0.04-0.05 CPU s a statement at 10M attempts (the runs'
# statement of the first view: 0.074 -> 0.030 for its IRT answer; BENCHMARKS.md "TMF first render at ten million,
# ninth pass"). No fit of the benchmark: NULL, which joins no ability.
_NEWEST_FIT_SQL = "SELECT max_by(fit_key, (created_at, fit_key)) FILTER (WHERE benchmark = ?) AS fit_key FROM irt_fits"

_HAS_IRT_FIT_SQL = f"""
    WITH newest AS ({_NEWEST_FIT_SQL})
    SELECT EXISTS (SELECT 1 FROM irt_abilities JOIN newest USING (fit_key))"""

"""Aggregates the pages read, kept by the writer in the transaction that changes the attempts or their error
labels (issue 33; migration 008 says what each column is):

* ``run_task_stats``: one row per (run, task), its attempts' counts and means;
* ``run_task_codes``: failed attempts per (run, task, code) and set of label sources that gave the code;
* ``run_code_pairs``: pairs of codes on one failed attempt, per run and the two codes' source sets;
* ``run_judge_counts`` (migration 009): per run, its attempts, those with a judge's verdict and those judged correct;
* ``run_label_codes`` (migration 009): per run, label source and code, the attempts carrying the code;
* ``run_slice_stats``, ``run_slice_codes`` (migration 009): the Errors table's counts per run and slice (level,
  category), summed from the run's ``run_task_stats`` and ``run_task_codes`` rows;
* ``run_task_first`` (migration 011, store/task_first.py): per (run, task), what the Version diff reads;
* ``run_task_tmf`` (migration 012, store/tmf_rows.py): per (run, task), the Tech-Market-Fit page's row on codes;
* ``run_task_board`` (migration 013, store/tmf_rows.py): per (run, task), the Leaderboard's row on the same codes.
* ``run_health_sums`` (migration 014, store/tmf_rows.py): per run, the sums of its counts that run health reads.
* ``tmf_task_codes``' level, category and is_listed (migration 015, store/tmf_rows.py): per coded task, the tasks
  table's values, given with the code (emptied and given again by a rebuild, with the tables on the codes).

Every change refreshes the (run, task) pairs it touched from the attempts and labels themselves (and the runs of
those pairs for ``run_code_pairs``), so a row always equals what its attempts give: an ingested file (called by
store/ingest_writer.py: ``insert_file`` when its runs are all new, the common case, else ``refresh_file``), replaced attempts and late scores
(store/attempt_update.py), judge labels and rule findings (store/derived.py: ``refresh_attempts``,
``refresh_benchmark``), a deleted run (store/delete.py).

Part of the store: all write SQL of the project lives under ``store/``.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa

from store import task_first, tmf_rows
from store.query import insert_over_attempts, load_sql

TABLES = ("run_task_stats", "run_task_codes", "run_code_pairs")
# Migration 009: a row set per run, refreshed whole for the runs touched; the slices' tables are sums of the run's
# run_task_stats / run_task_codes rows (refreshed first), the others read the runs' attempts within their id range.
RUN_TABLES = ("run_judge_counts", "run_label_codes", "run_slice_stats", "run_slice_codes")
_FROM_ATTEMPTS = ("run_judge_counts", "run_label_codes")


# what ``_rl_agg_attempts`` is in the aggregates' SELECTs (store/sql/run_*.sql): the attempts of the pairs in
# ``_rl_agg_keys`` (run_task_stats, run_task_codes), every attempt of their runs (run_code_pairs), or the attempts
# of one ingested file (all three: the file's runs are new, so their attempts are the file's).
_OF_PAIRS = "SELECT a.* FROM attempts a SEMI JOIN _rl_agg_keys k ON k.run_id = a.run_id AND k.task_id = a.task_id"
_OF_RUNS = "SELECT a.* FROM attempts a SEMI JOIN (SELECT DISTINCT run_id FROM _rl_agg_keys) k ON k.run_id = a.run_id"
_OF_FILE = "SELECT * FROM attempts WHERE file_id = $file_id AND attempt_id BETWEEN $lo AND $hi"


_STORED_LABELS = "SELECT attempt_id, code, source FROM error_labels"
# the per-task tables as the slices' SQL (run_slice_*.sql) reads them when a CTE stands in for them: migration 008's
# leading columns, named (the rest of the SELECT's columns keep no name)
_PER_TASK_NAMED = {
    "run_task_stats": "run_task_stats(run_id, task_id, n_attempts, n_passed, n_failed)",
    "run_task_codes": "run_task_codes(run_id, task_id, code, sources_mask, n_failed)",
}
# the Runlens judge's verdicts of a file's new attempts: none yet (the judge runs on stored attempts)
_NO_VERDICTS = "SELECT NULL::BIGINT AS attempt_id, NULL::JSON AS verdict, NULL::BOOLEAN AS is_failure WHERE false"


def _insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    attempts_sql: str,
    params: dict[str, object] | None = None,
    labels_sql: str = _STORED_LABELS,
) -> None:
    """``INSERT INTO table`` the rows its SELECT (store/sql/TABLE.sql) gives over the attempts ``attempts_sql``
    selects and the labels ``labels_sql`` selects (``store.query.insert_over_attempts``)."""
    insert_over_attempts(con, table, attempts_sql, labels_sql, params)


def _insert_run_tables(con: duckdb.DuckDBPyConnection, lo: int | None, hi: int | None) -> None:
    """Migration 009's rows of the runs in ``_rl_agg_keys`` (none of which may have any yet): the judge's counts and
    the label codes from the runs' attempts (ids ``lo`` to ``hi``; none when ``lo`` is None), then the slices' sums
    from the runs' ``run_task_stats`` / ``run_task_codes`` rows, which must be current."""
    if lo is not None:
        bounds = {"lo": int(lo), "hi": int(hi if hi is not None else lo)}
        for table in _FROM_ATTEMPTS:  # an allow-list of table names
            con.execute(f"INSERT INTO {table} {load_sql(table)}", bounds)
    for table in RUN_TABLES:
        if table not in _FROM_ATTEMPTS:  # the runs' slices, from their per-task rows
            con.execute(f"INSERT INTO {table} {load_sql(table)}")


def _new_runs_tables(
    con: duckdb.DuckDBPyConnection, keys_sql: str, params: dict[str, object], lo: int, hi: int
) -> None:
    """``_insert_run_tables`` for the runs an ingested file creates (their attempts: ids ``lo`` to ``hi``)."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _rl_agg_keys AS SELECT DISTINCT run_id, task_id FROM ({keys_sql})", params
    )
    try:
        _insert_run_tables(con, lo, hi)
    finally:
        con.execute("DROP TABLE IF EXISTS _rl_agg_keys")


def _refresh_keys(
    con: duckdb.DuckDBPyConnection,
    keys_sql: str,
    params: Sequence[object] | dict[str, object],
    *,
    with_stats: bool = True,
) -> None:
    """Recompute the rows of the (run_id, task_id) pairs ``keys_sql`` selects (``run_code_pairs``: of their runs),
    inside the caller's transaction: the rows go, and what still has attempts gets its rows again from them.
    ``with_stats`` false: only the labels' tables (the attempts themselves did not change)."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE _rl_agg_keys AS SELECT DISTINCT run_id, task_id FROM ({keys_sql})", params
    )
    try:
        in_pairs = "(run_id, task_id) IN (SELECT run_id, task_id FROM _rl_agg_keys)"
        if with_stats:
            con.execute(f"DELETE FROM run_task_stats WHERE {in_pairs}")
            _insert_rows(con, "run_task_stats", _OF_PAIRS)
        con.execute(f"DELETE FROM run_task_codes WHERE {in_pairs}")
        con.execute("DELETE FROM run_code_pairs WHERE run_id IN (SELECT run_id FROM _rl_agg_keys)")
        for table in RUN_TABLES:  # an allow-list of table names
            con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM _rl_agg_keys)")
        # the range of attempt ids of the keys' runs, as constants: labels (which hold no run) outside it are
        # skipped by the scan's statistics instead of being joined with the attempts
        lo, hi = con.execute(
            "SELECT min(attempt_id), max(attempt_id) FROM attempts "
            "WHERE run_id IN (SELECT DISTINCT run_id FROM _rl_agg_keys)"
        ).fetchall()[0]
        if lo is not None:
            bounds: dict[str, object] = {"lo": int(lo), "hi": int(hi)}
            _insert_rows(con, "run_task_codes", _OF_PAIRS, bounds)
            _insert_rows(con, "run_code_pairs", _OF_RUNS, bounds)
        _insert_run_tables(con, lo, hi)
        task_first.refresh_keys(con, lo, hi)
        if with_stats:
            tmf_rows.refresh_runs(con, "SELECT run_id FROM _rl_agg_keys")
    finally:
        con.execute("DROP TABLE IF EXISTS _rl_agg_keys")


def insert_file(
    con: duckdb.DuckDBPyConnection, file_id: int, attempt_ids: tuple[int, int], *, with_labels: bool = True
) -> None:
    """The aggregate rows of an ingested file every attempt of which belongs to a run the file itself creates (an
    upload, a harness's run log), inserted straight from the file's attempts: no row of a new run can exist yet
    (a run's rows go with it, ``drop_run``) and every attempt of its runs is the file's, so there is nothing to
    delete and no keys to collect (each statement costs a lake its catalog reads). ``attempt_ids``: the first and
    last id of the file's attempts (contiguous, ``store.ingest_writer``), a range the scans skip by;
    ``with_labels`` false: the file brought no error labels, so the labels' tables get no rows from it."""
    lo, hi = attempt_ids
    if hi < lo:
        return
    params: dict[str, object] = {"file_id": int(file_id), "lo": int(lo), "hi": int(hi)}
    _insert_rows(con, "run_task_stats", _OF_FILE, params)
    if with_labels:
        _insert_rows(con, "run_task_codes", _OF_FILE, params)
        _insert_rows(con, "run_code_pairs", _OF_FILE, params)
    _new_runs_tables(con, _OF_FILE, params, int(lo), int(hi))
    task_first.insert(con, _OF_FILE, f"{_STORED_LABELS} WHERE attempt_id BETWEEN $lo AND $hi", params)
    tmf_rows.refresh_runs(con, _OF_FILE, params, new=True)


def insert_file_rows(
    con: duckdb.DuckDBPyConnection, attempts: pa.Table, labels: pa.Table, id_base: int, *, with_labels: bool = True
) -> None:
    """``insert_file`` from the file's own Arrow tables, as the writer inserted them (``attempt_ix`` + ``id_base``
    is an attempt's id; the file's labels have source ``label``): the same rows, computed without reading the
    attempts and labels back from the store (on a lake each such scan pays for its catalog and file reads). For a
    file written in one part; one read in parts has its attempts in several tables (``insert_file``).

    The per-task rows (``run_task_stats``, ``run_task_codes``) are computed once, into temporary tables of the
    store's column types (in memory, not in the lake), then inserted; every table derived from them (the slices'
    sums, the rows on codes of store/tmf_rows.py) reads those temporary tables instead of computing them again or
    reading the rows just written back from the lake."""
    if attempts.num_rows == 0:
        return
    con.register("_rl_agg_new_attempts", attempts)
    con.register("_rl_agg_new_labels", labels)
    try:
        base: dict[str, object] = {"base": int(id_base)}
        params = {**base, "lo": int(id_base), "hi": int(id_base) + attempts.num_rows - 1}
        new_attempts = "SELECT *, attempt_ix + $base AS attempt_id FROM _rl_agg_new_attempts"
        new_labels = "SELECT attempt_ix + $base AS attempt_id, code, 'label' AS source FROM _rl_agg_new_labels"
        per_task = tuple(_PER_TASK_NAMED) if with_labels else ("run_task_stats",)
        for table in per_task:  # an allow-list of table names
            _computed(con, table, new_attempts, new_labels, params if "$lo" in load_sql(table) else base)
        if with_labels:
            _insert_rows(con, "run_code_pairs", new_attempts, params, new_labels)
        # migration 009's tables in one statement each over the same tables, with no temporary table: the CTEs
        # stand for the store's tables in the SQL files (a CTE shadows a table of its name), so nothing is read
        # back from the store but the new runs' definitions; a new run's attempts have no Runlens verdicts yet
        stand_ins = {
            "_rl_agg_keys": "SELECT DISTINCT run_id, task_id FROM _rl_agg_new_attempts",
            "_rl_agg_attempts": new_attempts,
            "_rl_agg_labels": new_labels,
            "attempts": new_attempts,
            "error_labels": new_labels,
            "judge_verdicts": _NO_VERDICTS,
            **{table: f"SELECT * FROM {_COMPUTED}{table}" for table in per_task},
        }
        ctes = ", ".join(f"{name} AS ({sql})" for name, sql in stand_ins.items())
        for table in RUN_TABLES:  # an allow-list of table names
            if table in ("run_label_codes", "run_slice_codes") and not with_labels:
                continue  # no label: neither table gets a row from the file
            sql = f"INSERT INTO {table} WITH {ctes} SELECT * FROM ({load_sql(table)})"
            con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql})
        task_first.insert(con, new_attempts, new_labels, base)
        tmf_rows.refresh_runs(
            con, "SELECT run_id FROM _rl_agg_new_attempts", new=True, stats=f"{_COMPUTED}run_task_stats"
        )
        for table in per_task:  # (a failed statement: the transaction's rollback drops them)
            con.execute(f"DROP TABLE {_COMPUTED}{table}")
    finally:
        con.unregister("_rl_agg_new_attempts")
        con.unregister("_rl_agg_new_labels")


_COMPUTED = "_rl_new_"  # the temporary tables of ``_computed`` (in memory; never the lake's)


def _computed(
    con: duckdb.DuckDBPyConnection, table: str, attempts_sql: str, labels_sql: str, params: dict[str, object]
) -> None:
    """The rows of ``table`` its SELECT gives over ``attempts_sql`` and ``labels_sql``, computed once into the
    temporary table ``_COMPUTED + table`` (the store's column types: each value cast as the insert into the store
    casts it, so what is derived from it equals what the stored rows give), then inserted into ``table``."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_COMPUTED}{table} AS SELECT * FROM {table} LIMIT 0")
    insert_over_attempts(con, f"{_COMPUTED}{table}", attempts_sql, labels_sql, params, sql_of=table)
    con.execute(f"INSERT INTO {table} SELECT * FROM {_COMPUTED}{table}")


def refresh_file(con: duckdb.DuckDBPyConnection, file_id: int, *, revised_runs: Sequence[str] = ()) -> None:
    """After an ingested file's rows are written, when it adds attempts to stored runs or re-scores them (else
    ``insert_file``): the pairs of its attempts, and every pair of the runs it re-scored (their earlier attempts
    got a new headline score). Without re-scored runs the second branch is left out: ``list_contains`` on an empty
    list still scans every stored attempt's run (skipped by no statistics)."""
    keys = "SELECT run_id, task_id FROM attempts WHERE file_id = $file_id"
    if not revised_runs:
        _refresh_keys(con, keys, {"file_id": int(file_id)})
        return
    _refresh_keys(
        con,
        f"{keys} UNION ALL SELECT run_id, task_id FROM attempts WHERE list_contains($runs, run_id)",
        {"file_id": int(file_id), "runs": [str(r) for r in revised_runs]},
    )


def attempt_keys(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> list[tuple[str, str]]:
    """The (run_id, task_id) pairs of stored attempts (read before they are deleted, to refresh after)."""
    rows = con.execute(
        "SELECT DISTINCT run_id, task_id FROM attempts WHERE attempt_id IN (SELECT unnest(?::BIGINT[]))",
        [[int(i) for i in attempt_ids]],
    ).fetchall()
    return [(str(r), str(t)) for r, t in rows]


def refresh_pairs(con: duckdb.DuckDBPyConnection, pairs: Sequence[tuple[str, str]], *, with_stats: bool = True) -> None:
    """After attempts of these (run_id, task_id) pairs changed or went (``with_stats`` false: only their labels)."""
    if not pairs:
        return
    _refresh_keys(
        con,
        "SELECT unnest($runs::VARCHAR[]) AS run_id, unnest($tasks::VARCHAR[]) AS task_id",
        {"runs": [p[0] for p in pairs], "tasks": [p[1] for p in pairs]},
        with_stats=with_stats,
    )


def refresh_attempts(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> None:
    """After the error labels of stored attempts changed (judge verdicts, rule findings): the labels' tables."""
    refresh_pairs(con, attempt_keys(con, attempt_ids), with_stats=False)


def refresh_benchmark(con: duckdb.DuckDBPyConnection, benchmark: str) -> None:
    """After labels of a whole benchmark changed (its rule findings recomputed): the labels' tables."""
    _refresh_keys(
        con,
        "SELECT a.run_id, a.task_id FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = $benchmark",
        {"benchmark": benchmark},
        with_stats=False,
    )


def drop_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A deleted run's rows (inside the deletion's transaction)."""
    for table in (*TABLES, *RUN_TABLES):  # an allow-list of table names
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
    task_first.drop_run(con, run_id)
    tmf_rows.drop_run(con, run_id)


# Every kept table, in the order ``compared`` can give it (the slices' tables after the per-task ones they sum).
KEPT = (*TABLES, *RUN_TABLES, task_first.TABLE, *tmf_rows.CODED, tmf_rows.KINDS)


def compared(con: duckdb.DuckDBPyConnection, table: str) -> tuple[str, str, dict[str, object]]:
    """A kept table's stored rows and the same rows as their sources give them now, two SELECTs of equal columns,
    with the parameters of the second: for the tables computed from attempts and labels, the table's own SELECT
    (store/sql/TABLE.sql) over every run and the whole range of attempt ids (the slices' tables sum per-task rows
    computed the same way, never the stored ones, so a wrong stored row shows in its own table only); for
    ``run_task_tmf`` and ``run_task_board``, their rows by run and task id against the ``run_task_stats`` rows they
    copy; for ``tmf_task_codes``, each coded task's kept level, category and listing against the ``tasks`` table's.
    For ``doctor``."""
    if table not in KEPT:
        raise ValueError(f"not a kept table: {table!r}")
    if table == "run_task_tmf":
        return tmf_rows.stored_sql, tmf_rows.expected_sql, {}
    if table == "run_task_board":
        return tmf_rows.board_stored_sql, tmf_rows.board_expected_sql, {}
    if table == "run_health_sums":
        return tmf_rows.health_stored_sql, tmf_rows.health_expected_sql, {}
    if table == tmf_rows.KINDS:
        return tmf_rows.kinds_stored_sql, tmf_rows.kinds_expected_sql, {}
    lo, hi = con.execute("SELECT min(attempt_id), max(attempt_id) FROM attempts").fetchall()[0]
    params: dict[str, object] = {"lo": int(lo if lo is not None else 0), "hi": int(hi if hi is not None else -1)}
    every = "SELECT * FROM attempts"
    labels = _STORED_LABELS
    stand_ins = {
        "_rl_agg_keys": "SELECT DISTINCT run_id, task_id FROM attempts",
        "_rl_agg_attempts": every,
        "_rl_agg_labels": labels,
    }
    if table in ("run_slice_stats", "run_slice_codes"):
        stand_ins.update({named: load_sql(own) for own, named in _PER_TASK_NAMED.items()})
    ctes = ", ".join(f"{name} AS ({sql})" for name, sql in stand_ins.items())
    sql = f"WITH {ctes} SELECT * FROM ({load_sql(table)})"
    return f"SELECT * FROM {table}", sql, {k: v for k, v in params.items() if f"${k}" in sql}


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    """Every kept table emptied and computed again from all attempts and labels (inside the caller's transaction):
    ``doctor --rebuild-aggregates``, the repair when doctor finds rows that differ from their attempts."""
    for table in KEPT:  # an allow-list of table names
        con.execute(f"DELETE FROM {table}")
    _refresh_keys(con, "SELECT run_id, task_id FROM attempts", {})

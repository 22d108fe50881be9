"""The one writer: a validated Bundle goes into DuckDB in one transaction, by bulk Arrow inserts."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pyarrow as pa

from analytics.db import load_sql
from ingest.records import Bundle, Known

_DEFINITION_SQL = {
    "benchmark": "SELECT benchmark, version, scoring, pass_threshold, description, tool_graph::VARCHAR, "
                 "extra::VARCHAR FROM benchmarks",
    "task": "SELECT benchmark, task_id, level, category, capabilities, human_minutes, query, reference_answer, "
            "reference_trajectory, extra::VARCHAR FROM tasks",
    "run": "SELECT run_id, benchmark, agent, family, agent_version, kind, eval_date, judge, price_input_per_mtok, "
           "price_output_per_mtok, status, extra::VARCHAR FROM runs",
}
_DEFINITION_COLS = {
    "benchmark": ["benchmark", "version", "scoring", "pass_threshold", "description", "tool_graph", "extra"],
    "task": ["benchmark", "task_id", "level", "category", "capabilities", "human_minutes", "query",
             "reference_answer", "reference_trajectory", "extra"],
    "run": ["run_id", "benchmark", "agent", "family", "agent_version", "kind", "eval_date", "judge",
            "price_input_per_mtok", "price_output_per_mtok", "status", "extra"],
}


def load_known(con: duckdb.DuckDBPyConnection) -> Known:
    """Everything a new file may refer to: benchmarks, tasks and runs already in the database."""
    known = Known()
    for kind, sql in _DEFINITION_SQL.items():
        cols = _DEFINITION_COLS[kind]
        for values in con.execute(sql).fetchall():
            row = dict(zip(cols, values, strict=True))
            if kind == "benchmark":
                key = row["benchmark"]
                known.benchmarks[key] = (row["scoring"], float(row["pass_threshold"]))
            elif kind == "task":
                key = f"{row['benchmark']}/{row['task_id']}"
                known.tasks.add((row["benchmark"], row["task_id"]))
            else:
                key = row["run_id"]
                known.runs[key] = (row["benchmark"], row["price_input_per_mtok"], row["price_output_per_mtok"])
            known.definitions[(kind, key)] = row

    def attempts_of(run_id: str) -> dict[tuple[str, int], int]:
        rows = con.execute("SELECT task_id, sample, attempt_id FROM attempts WHERE run_id = ?", [run_id]).fetchall()
        return {(task_id, int(sample)): int(attempt_id) for task_id, sample, attempt_id in rows}

    known.attempt_loader = attempts_of
    return known


def find_ingested(con: duckdb.DuckDBPyConnection, content_hash: str) -> str | None:
    """Path under which identical content was already ingested, if it was."""
    rows = con.execute(
        "SELECT path FROM ingest_log WHERE content_hash = ? AND outcome = 'ingested' LIMIT 1", [content_hash]
    ).fetchall()
    return str(rows[0][0]) if rows else None


def _insert(con: duckdb.DuckDBPyConnection, table: str, cols: dict[str, list[Any]],
            fixed: dict[str, Any] | None = None) -> None:
    if not next(iter(cols.values()), []):
        return
    arrow = pa.table({name: pa.array(values) for name, values in cols.items()})
    con.register("_rl_batch", arrow)
    try:
        names = list(cols)
        extra_names = list(fixed or {})
        select = ", ".join([f'"{n}"' for n in names] + ["?"] * len(extra_names))
        con.execute(
            f"INSERT INTO {table} ({', '.join(names + extra_names)}) SELECT {select} FROM _rl_batch",
            list((fixed or {}).values()),
        )
    finally:
        con.unregister("_rl_batch")


def _next_id(con: duckdb.DuckDBPyConnection, table: str, column: str) -> int:
    return int(con.execute(f"SELECT coalesce(max({column}), 0) + 1 FROM {table}").fetchall()[0][0])


def write_bundle(con: duckdb.DuckDBPyConnection, bundle: Bundle, *, path: str, content_hash: str, fmt: str,
                 is_demo: bool, started_at: dt.datetime, seconds: float) -> int:
    """Write a validated bundle and its ingest_log row in one transaction; return the file_id."""
    con.execute("BEGIN TRANSACTION")
    try:
        file_id = _next_id(con, "ingest_log", "file_id")
        base = _next_id(con, "attempts", "attempt_id")
        _insert(con, "benchmarks", bundle.benchmarks, {"is_demo": is_demo})
        _insert(con, "tasks", bundle.tasks)
        _insert(con, "runs", bundle.runs, {"file_id": file_id, "is_demo": is_demo})
        attempts = dict(bundle.attempts)
        attempts["attempt_id"] = list(range(base, base + bundle.n_attempts))
        _insert(con, "attempts", attempts, {"file_id": file_id})
        _insert(con, "steps", _with_ids(bundle.steps, base))
        if bundle.texts:
            texts = pa.table({"text_hash": list(bundle.texts), "text": list(bundle.texts.values())})
            con.register("_rl_texts", texts)
            con.execute("INSERT INTO texts SELECT DISTINCT n.text_hash, n.text FROM _rl_texts n "
                        "ANTI JOIN texts t ON t.text_hash = n.text_hash")
            con.unregister("_rl_texts")
        labels = _with_ids(bundle.labels, base)
        _insert(con, "error_labels", labels, {"source": "label"})
        _insert(con, "attempt_metrics", _with_ids(bundle.metrics, base), {"source": "log"})
        ratings = dict(bundle.ratings)
        ix = ratings.pop("attempt_ix")
        ratings["attempt_id"] = [aid if i is None else base + i for i, aid in zip(ix, ratings["attempt_id"], strict=True)]
        _insert(con, "ratings", ratings)
        con.execute(
            "INSERT INTO ingest_log (file_id, path, content_hash, format, n_runs, n_tasks, n_attempts, n_steps,"
            " started_at, seconds, outcome, is_demo) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ingested', ?)",
            [file_id, path, content_hash, fmt, len(bundle.runs["run_id"]), len(bundle.tasks["task_id"]),
             bundle.n_attempts, bundle.n_steps, started_at, seconds, is_demo],
        )
        digest = con.execute(load_sql("file_digest"), {"file_id": file_id}).fetchall()[0][2]
        con.execute("UPDATE ingest_log SET rows_digest = ? WHERE file_id = ?", [digest, file_id])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return file_id


def _with_ids(cols: dict[str, list[Any]], base: int) -> dict[str, list[Any]]:
    out = {k: v for k, v in cols.items() if k != "attempt_ix"}
    out["attempt_id"] = [base + i for i in cols["attempt_ix"]]
    return out

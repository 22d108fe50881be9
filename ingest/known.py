"""What a new file may refer to: the definitions and file hashes already in the database (read before validating)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ingest.records import BENCHMARK_FIELDS, RUN_FIELDS, TASK_FIELDS, Known

if TYPE_CHECKING:
    import duckdb

# the columns of each definition table a file may refer to: the record's fields, then its kept unknown fields
_DEFINITION_COLS = {
    "benchmark": [*BENCHMARK_FIELDS, "extra"],
    "task": [*TASK_FIELDS, "extra"],
    "run": [*RUN_FIELDS, "extra"],
}
_JSON_COLS = {"tool_graph", "extra"}  # read back as JSON text, as a file would carry them
_DEFINITION_SQL = {
    kind: "SELECT " + ", ".join(f"{c}::VARCHAR" if c in _JSON_COLS else c for c in cols) + f" FROM {table}"
    for (kind, cols), table in zip(_DEFINITION_COLS.items(), ("benchmarks", "tasks", "runs"), strict=True)
}


def load_known(con: duckdb.DuckDBPyConnection) -> Known:
    """Everything a new file may refer to: benchmarks, tasks and runs already in the database, and the content
    hashes of the files ingested so far. Tasks are read a benchmark at a time when first needed: reading all of
    them took 4 of the 6 s of a 100-attempt upload into a store of 10M attempts (266,774 tasks)."""
    known = Known()
    for kind, sql in _DEFINITION_SQL.items():
        if kind == "task":
            continue  # read a benchmark at a time, when a file names one of its tasks (Known.ensure_tasks)
        cols = _DEFINITION_COLS[kind]
        for values in con.execute(sql).fetchall():
            known.add(kind, dict(zip(cols, values, strict=True)))

    def tasks_of(benchmark: str | None) -> list[dict[str, object]]:
        # asked at call time on the same connection, like attempts_of below: a file committed since is seen
        cols = _DEFINITION_COLS["task"]
        if benchmark is None:
            rows = con.execute(_DEFINITION_SQL["task"]).fetchall()
        else:
            rows = con.execute(_DEFINITION_SQL["task"] + " WHERE benchmark = ?", [benchmark]).fetchall()
        return [dict(zip(cols, values, strict=True)) for values in rows]

    known.task_loader = tasks_of
    known.hashes = dict(
        con.execute(
            "SELECT content_hash, any_value(path) FROM ingest_log WHERE outcome = 'ingested' GROUP BY content_hash"
        ).fetchall()
    )

    def attempts_of(run_id: str) -> dict[tuple[str, int], int]:
        # a run the database does not hold (yet) has no attempts: a point look-up in the small runs table instead of
        # a scan of attempts, so an upload of a new run costs the same whatever the store's size (BENCHMARKS.md,
        # "Local lake"); asked at call time, since ``known`` outlives the files a batch commits one after another
        if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone() == (0,):
            return {}
        rows = con.execute("SELECT task_id, sample, attempt_id FROM attempts WHERE run_id = ?", [run_id]).fetchall()
        return {(task_id, int(sample)): int(attempt_id) for task_id, sample, attempt_id in rows}

    known.attempt_loader = attempts_of
    return known

"""What a new file may refer to: the definitions and file hashes already in the database (read before validating)."""

from __future__ import annotations

import duckdb

from ingest.records import Known

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
    "task": [
        "benchmark",
        "task_id",
        "level",
        "category",
        "capabilities",
        "human_minutes",
        "query",
        "reference_answer",
        "reference_trajectory",
        "extra",
    ],
    "run": [
        "run_id",
        "benchmark",
        "agent",
        "family",
        "agent_version",
        "kind",
        "eval_date",
        "judge",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "status",
        "extra",
    ],
}


def load_known(con: duckdb.DuckDBPyConnection) -> Known:
    """Everything a new file may refer to: benchmarks, tasks and runs already in the database, and the content
    hashes of the files ingested so far."""
    known = Known()
    for kind, sql in _DEFINITION_SQL.items():
        cols = _DEFINITION_COLS[kind]
        for values in con.execute(sql).fetchall():
            known.add(kind, dict(zip(cols, values, strict=True)))
    known.hashes = dict(
        con.execute(
            "SELECT content_hash, any_value(path) FROM ingest_log WHERE outcome = 'ingested' GROUP BY content_hash"
        ).fetchall()
    )

    def attempts_of(run_id: str) -> dict[tuple[str, int], int]:
        rows = con.execute("SELECT task_id, sample, attempt_id FROM attempts WHERE run_id = ?", [run_id]).fetchall()
        return {(task_id, int(sample)): int(attempt_id) for task_id, sample, attempt_id in rows}

    known.attempt_loader = attempts_of
    return known

"""The SQL page's schema browser and example gallery (trusted SQL of our own, on a normal reader connection); the
result chart is in figures.py."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

import store as rdb

QUERIES_DIR = rdb.PROJECT_ROOT / "queries"


DESCRIPTIONS = {
    "meta": "Key/value facts about the database (schema version, migrations applied).",
    "benchmarks": "One row per benchmark: scoring (binary/graded/continuous), pass threshold, tool graph.",
    "tasks": "One row per task of a benchmark: level, category, capabilities, reference answer and trajectory.",
    "runs": "One row per evaluation run: agent, family, version, kind (llm/agent/framework/human), eval date, prices.",
    "attempts": "One row per (run, task, sample): score in [0,1], passed, tokens, cost, latency, status, step counts.",
    "steps": "One row per trajectory step of an attempt (tool calls, thoughts, final answer); use v_steps.",
    "texts": "Long tool results stored once by content hash (v_steps resolves them).",
    "error_labels": "Error codes (TE, PE, DE, CE, HAL, LC, TOOL, ...) per attempt with their source.",
    "attempt_metrics": "Extra per-attempt metrics (name, value), e.g. embedding or judge metrics.",
    "ratings": "Ratings of attempts by humans or LLM judges, per dimension.",
    "ingest_log": "One row per ingested file: path, format, counts, outcome.",
    "audit_log": "Destructive actions taken in the app (deletions, recomputations).",
    "judge_verdicts": "Cached LLM-judge verdicts per attempt, prompt version and model.",
    "irt_fits": "IRT fits, keyed by a hash of the response matrix and settings.",
    "irt_abilities": "IRT ability of each agent version in a fit, with its interval.",
    "irt_items": "IRT difficulty and discrimination of each task in a fit.",
    "embeddings": "Sentence-embedding cache: one vector per (text hash, model).",
    "run_judge_counts": "Per run, kept by the writer: attempts, those with a judge's verdict, those judged correct.",
    "run_label_codes": "Per run, label source and code, kept by the writer: the attempts carrying the code.",
    "run_task_first": "Per run and task, kept by the writer: what the Version diff reads (first sample, means, codes).",
    "v_attempts": "Attempts joined with their run and task: benchmark, agent, level, category, score, cost...",
    "v_steps": "Trajectory steps with long tool results resolved to text.",
    "v_errors": "Error labels joined with attempt context (benchmark, agent, task, level, passed).",
    "v_runs": "One row per run with its attempt counts, pass rate, mean score, tokens, cost and latency.",
    "v_tool_calls": "Tool-call steps with their attempt's benchmark, run, agent, task and outcome.",
    "v_attempt_capabilities": "Attempts unnested by task capability (one row per attempt x capability).",
}


def schema_objects(con: duckdb.DuckDBPyConnection, *, count_views: bool = False) -> pd.DataFrame:
    """Tables and views of the database: name, kind, description, row count, column count.

    A table's rows are counted (``count(*)`` of a table reads its row counts, not its rows); a view's only with
    ``count_views``: counting a view runs it over every row it joins (v_tool_calls joins every step), a cost that
    grows with the store, so its ``n_rows`` is missing (NA) unless asked for."""
    objs = rdb.query_df(
        con,
        # columns are counted from duckdb_columns(): a DuckLake view's column_count is NULL
        """
        WITH objs AS (
            SELECT table_name AS name, 'table' AS kind, comment FROM duckdb_tables()
            WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
            UNION ALL
            SELECT view_name, 'view', comment FROM duckdb_views()
            WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        ), cols AS (
            SELECT table_name AS name, count(*) AS n_columns FROM duckdb_columns()
            WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
            GROUP BY table_name
        )
        SELECT objs.name, objs.kind, coalesce(cols.n_columns, 0) AS n_columns, objs.comment
        FROM objs LEFT JOIN cols USING (name)
        ORDER BY objs.kind DESC, objs.name""",
    )
    counted = [str(n) for n, k in zip(objs["name"], objs["kind"], strict=True) if k == "table" or count_views]
    found: dict[str, int] = {}
    if counted:
        # One statement for every count (a statement per table paid the store's per-statement cost 25 times).
        # Identifiers come from the catalog itself, quoted, never from user input.
        quoted = ['"' + n.replace('"', '""') + '"' for n in counted]
        sql = " UNION ALL ".join(f"SELECT {i} AS i, count(*) AS n FROM {q}" for i, q in enumerate(quoted))
        found = {counted[int(i)]: int(n) for i, n in rdb.query_rows(con, sql)}
    objs["n_rows"] = pd.array([found.get(str(n)) for n in objs["name"]], dtype="Int64")
    # our one-liners first; a COMMENT ON a table added later still shows up
    objs["description"] = [
        DESCRIPTIONS.get(str(n)) or (str(c) if isinstance(c, str) else "")
        for n, c in zip(objs["name"], objs["comment"], strict=True)
    ]
    return objs[["name", "kind", "n_rows", "n_columns", "description"]]


def schema_columns(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Columns of every table and view: object, column, type, position."""
    return rdb.query_df(
        con,
        """
        SELECT table_name AS name, column_name AS "column", data_type AS type, column_index AS position
        FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        ORDER BY name, position""",
    )


@dataclass(frozen=True)
class Example:
    """One example query of the gallery (a file in queries/)."""

    name: str
    title: str
    description: str
    sql: str


def examples(folder: Path = QUERIES_DIR) -> list[Example]:
    """Every ``queries/*.sql``: ``-- title:`` and ``-- description:`` header lines, then the SQL."""
    out = []
    for path in sorted(folder.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        meta = dict(re.findall(r"^--\s*(title|description):\s*(.+)$", text, flags=re.MULTILINE))
        out.append(
            Example(
                name=path.stem,
                title=meta.get("title", path.stem),
                description=meta.get("description", ""),
                sql=text.strip(),
            )
        )
    return out


def schema_text(objects: pd.DataFrame, columns: pd.DataFrame) -> str:
    """A compact text description of the schema (for the natural-language prompt)."""
    lines = []
    for row in objects.itertuples():
        cols = columns[columns["name"] == row.name]
        col_text = ", ".join(f"{c} {t}" for c, t in zip(cols["column"], cols["type"], strict=True))
        lines.append(f"{row.kind} {row.name}({col_text})  -- {row.description}")
    return "\n".join(lines)

"""doctor's reads: the schema version, the rows per table, the rows that break a parent, a key or a domain, and
each ingested file's recorded counts and digest against what the store holds (and its content on disk).

The checks are SQL text counting offending rows (identifiers only from the lists below, never from input); this
module is the only one of ``analytics.doctor`` that runs them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb

import store as rdb
from analytics.doctor.compute import FileFacts, StoreFacts
from store import aggregates

TABLES = (
    "benchmarks",
    "tasks",
    "runs",
    "attempts",
    "steps",
    "texts",
    "error_labels",
    "attempt_metrics",
    "ratings",
    "scores",
    "ingest_log",
    "judge_verdicts",
    "irt_fits",
    "embeddings",
)

# name -> SQL counting orphan rows (rows whose parent is missing)
ORPHANS = {
    "runs without benchmark": "SELECT count(*) FROM runs r ANTI JOIN benchmarks b USING (benchmark)",
    "tasks without benchmark": "SELECT count(*) FROM tasks t ANTI JOIN benchmarks b USING (benchmark)",
    "attempts without run": "SELECT count(*) FROM attempts a ANTI JOIN runs r USING (run_id)",
    "attempts without task": "SELECT count(*) FROM attempts a JOIN runs r USING (run_id) "
    "ANTI JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id",
    "steps without attempt": "SELECT count(*) FROM steps s ANTI JOIN attempts a USING (attempt_id)",
    "steps with a missing text": "SELECT count(*) FROM steps s WHERE s.result_hash IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM texts t WHERE t.text_hash = s.result_hash)",
    "error labels without attempt": "SELECT count(*) FROM error_labels e ANTI JOIN attempts a USING (attempt_id)",
    "metrics without attempt": "SELECT count(*) FROM attempt_metrics m ANTI JOIN attempts a USING (attempt_id)",
    "ratings without attempt": "SELECT count(*) FROM ratings g ANTI JOIN attempts a USING (attempt_id)",
    "scores without attempt": "SELECT count(*) FROM scores s ANTI JOIN attempts a USING (attempt_id)",
    "score revisions without run": "SELECT count(*) FROM score_revisions v ANTI JOIN runs r USING (run_id)",
    "attempts with two current scores of one scorer": "SELECT count(*) FROM (SELECT attempt_id, scorer FROM scores "
    "WHERE is_current GROUP BY ALL HAVING count(*) > 1)",
    "duplicate attempts": "SELECT count(*) FROM (SELECT run_id, task_id, sample FROM attempts GROUP BY ALL "
    "HAVING count(*) > 1)",
    "duplicate attempt ids": "SELECT count(*) FROM (SELECT attempt_id FROM attempts GROUP BY 1 HAVING count(*) > 1)",
}

# The schema's keys and value domains, checked on every store: a team store (DuckLake) cannot declare PRIMARY KEY
# or CHECK constraints (store/migrate.py lake_ddl), so the writer keeps them and this verifies they held.
KEYS = {
    "meta": ("key",),
    "benchmarks": ("benchmark",),
    "tasks": ("benchmark", "task_id"),
    "runs": ("run_id",),
    "attempts": ("attempt_id",),
    "ingest_log": ("file_id",),
    "irt_fits": ("fit_key",),
    "reviews": ("review_id",),
}
DOMAINS = {
    ("benchmarks", "scoring"): ("binary", "graded", "continuous"),
    ("runs", "kind"): ("llm", "agent", "framework", "human"),
    ("attempts", "status"): ("completed", "tool_failure", "timeout", "crashed", "refused"),
    ("error_labels", "source"): ("label", "rule", "judge"),
    ("ratings", "rater_kind"): ("human", "llm"),
    ("ingest_log", "outcome"): ("ingested", "duplicate", "failed", "deleted"),
    ("reviews", "verdict"): ("correct", "incorrect"),
    ("reviews", "source"): ("human",),
}


def constraint_checks() -> dict[str, str]:
    """name -> SQL counting the rows that break a key (duplicates or NULLs) or a domain, or an ingested file
    stored twice (the content-hash check of an upload)."""
    checks = {}
    for table, key in KEYS.items():
        cols = ", ".join(key)
        nulls = " OR ".join(f"{c} IS NULL" for c in key)
        checks[f"duplicate {table} keys ({cols})"] = (
            f"SELECT count(*) FROM (SELECT {cols} FROM {table} GROUP BY ALL HAVING count(*) > 1)"
        )
        checks[f"{table} rows without a key ({cols})"] = f"SELECT count(*) FROM {table} WHERE {nulls}"
    for (table, column), allowed in DOMAINS.items():
        listed = ", ".join(f"'{v}'" for v in allowed)
        checks[f"{table}.{column} outside {{{', '.join(allowed)}}}"] = (
            f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL AND {column} NOT IN ({listed})"
        )
    checks["files ingested twice (same content hash)"] = (
        "SELECT count(*) FROM (SELECT content_hash FROM ingest_log WHERE outcome = 'ingested' GROUP BY 1 "
        "HAVING count(*) > 1)"
    )
    return checks


def load(con: duckdb.DuckDBPyConnection, *, rehash_sources: bool = True) -> StoreFacts:
    """Read everything doctor checks from an open (read-write or read-only) database.

    Args:
        con: the database.
        rehash_sources: also hash native source files still on disk, to see whether they changed since ingest.
    """
    version, latest = rdb.schema_version(con), rdb.latest_version()
    if version != latest and version == 0:
        return StoreFacts(version, latest, {}, {}, {}, [])
    return StoreFacts(
        schema_version=version,
        latest_version=latest,
        counts={table: _count(con, f"SELECT count(*) FROM {table}") for table in TABLES},
        orphans={name: _count(con, sql) for name, sql in ORPHANS.items()},
        constraints={name: _count(con, sql) for name, sql in constraint_checks().items()},
        files=ingested_files(con, rehash_sources=rehash_sources),
        aggregates={table: aggregate_differences(con, table) for table in aggregates.KEPT},
    )


def aggregate_differences(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """The rows of a table the writer keeps (store/aggregates.py) that differ from what the attempts and labels give
    now (``aggregates.compared``): stored rows with no equal recomputed row, plus recomputed rows with no equal
    stored one. Means are equal within 1e-9 of their size (a mean summed in another order may differ in its last
    bits); every other column exactly, NULL equal to NULL. The table's name is one of the store's own."""
    stored_sql, rec_sql, params = aggregates.compared(con, table)
    columns = rdb.query_rows(con, f"DESCRIBE {stored_sql}")
    names = [f'"{name}"' for name, *_ in columns]
    floats = {f'"{name}"' for name, kind, *_ in columns if kind in ("DOUBLE", "FLOAT")}
    same = " AND ".join(
        f"(x.{c} IS NOT DISTINCT FROM y.{c} OR abs(x.{c} - y.{c}) <= 1e-9 * greatest(1, abs(x.{c})))"
        if c in floats
        else f"x.{c} IS NOT DISTINCT FROM y.{c}"
        for c in names
    )
    sql = (
        f"WITH s AS ({stored_sql}), r AS (SELECT * FROM ({rec_sql}) AS r({', '.join(names)})), "
        "only_s AS (SELECT * FROM s EXCEPT ALL SELECT * FROM r), only_r AS (SELECT * FROM r EXCEPT ALL SELECT * FROM s) "
        f"SELECT (SELECT count(*) FROM only_s x WHERE NOT EXISTS (SELECT 1 FROM only_r y WHERE {same})) "
        f"+ (SELECT count(*) FROM only_r x WHERE NOT EXISTS (SELECT 1 FROM only_s y WHERE {same}))"
    )
    return int(rdb.query_rows(con, sql, params)[0][0])


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return int(rdb.query_rows(con, sql)[0][0])


def ingested_files(con: duckdb.DuckDBPyConnection, *, rehash_sources: bool) -> list[FileFacts]:
    """Every ingested file's recorded counts and digest beside the ones its rows give now."""
    files = rdb.query_rows(
        con,
        "SELECT file_id, path, content_hash, n_attempts, n_steps, rows_digest, format "
        "FROM ingest_log WHERE outcome = 'ingested' ORDER BY file_id",
    )
    counts_sql, digest_sql = rdb.load_sql("file_counts"), rdb.load_sql("file_digest")
    out = []
    for file_id, path, content_hash, n_attempts, n_steps, digest, fmt in files:
        got_attempts, got_steps = rdb.query_rows(con, counts_sql, {"file_id": file_id})[0]
        got_digest = rdb.query_rows(con, digest_sql, {"file_id": file_id})[0][0]
        is_changed = rehash_sources and fmt == "native" and Path(path).is_file() and _native_hash(path) != content_hash
        out.append(FileFacts(path, n_attempts, n_steps, digest, got_attempts, got_steps, got_digest, bool(is_changed)))
    return out


def _native_hash(path: str) -> str:
    """The content hash ingest records for a native file (bytes, format name, no options)."""
    digest = hashlib.sha256(Path(path).read_bytes())
    digest.update(b"\0native\0" + json.dumps({}, sort_keys=True).encode())
    return digest.hexdigest()

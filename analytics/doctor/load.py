"""doctor: verify a database -- schema version, orphan rows, counts per table, every file's rows.

``python -m analytics doctor [--db PATH] [--json] [--republish]`` exits 0 when every check passes and 1
otherwise. It reads the primary database (waiting for a running writer to finish), not the snapshot, so
it checks what ingest actually committed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb

import store as rdb

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


@dataclass
class DoctorReport:
    """Everything doctor found; ``ok`` is False when any problem was found."""

    path: str
    schema_version: int
    latest_version: int
    counts: dict[str, int] = field(default_factory=dict)
    orphans: dict[str, int] = field(default_factory=dict)
    constraints: dict[str, int] = field(default_factory=dict)  # rows breaking a key or a domain (0: held)
    files_checked: int = 0
    file_problems: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check(con: duckdb.DuckDBPyConnection, path: str, *, rehash_sources: bool = True) -> DoctorReport:
    """Run every check on an open (read-write or read-only) database."""
    rep = DoctorReport(path=path, schema_version=rdb.schema_version(con), latest_version=rdb.latest_version())
    if rep.schema_version != rep.latest_version:
        rep.problems.append(
            f"schema version {rep.schema_version}, expected {rep.latest_version} (open it with a "
            "writer, e.g. `python -m ingest`, to migrate)"
        )
        if rep.schema_version == 0:
            return rep
    for table in TABLES:
        rep.counts[table] = int(rdb.query_rows(con, f"SELECT count(*) FROM {table}")[0][0])
    for name, sql in ORPHANS.items():
        n = int(rdb.query_rows(con, sql)[0][0])
        rep.orphans[name] = n
        if n:
            rep.problems.append(f"{n} {name}")
    for name, sql in constraint_checks().items():
        n = int(rdb.query_rows(con, sql)[0][0])
        rep.constraints[name] = n
        if n:
            rep.problems.append(f"{n} {name}")
    _check_files(con, rep, rehash_sources=rehash_sources)
    rep.problems.extend(rep.file_problems)
    return rep


def _check_files(con: duckdb.DuckDBPyConnection, rep: DoctorReport, *, rehash_sources: bool) -> None:
    files = rdb.query_rows(
        con,
        "SELECT file_id, path, content_hash, n_attempts, n_steps, rows_digest, format "
        "FROM ingest_log WHERE outcome = 'ingested' ORDER BY file_id",
    )
    counts_sql, digest_sql = rdb.load_sql("file_counts"), rdb.load_sql("file_digest")
    for file_id, path, content_hash, n_attempts, n_steps, digest, fmt in files:
        rep.files_checked += 1
        got_attempts, got_steps = rdb.query_rows(con, counts_sql, {"file_id": file_id})[0]
        got_digest = rdb.query_rows(con, digest_sql, {"file_id": file_id})[0][0]
        if (got_attempts, got_steps) != (n_attempts, n_steps):
            rep.file_problems.append(
                f"{path}: recorded {n_attempts} attempts / {n_steps} steps, found {got_attempts} / {got_steps}"
            )
        elif digest is not None and got_digest != digest:
            rep.file_problems.append(f"{path}: its attempt rows changed since ingest (digest mismatch)")
        if rehash_sources and fmt == "native" and Path(path).is_file() and _native_hash(path) != content_hash:
            rep.warnings.append(
                f"{path}: the file on disk changed since it was ingested (content hash); "
                "re-ingest it to load the new content"
            )


def _native_hash(path: str) -> str:
    """The content hash ingest records for a native file (bytes, format name, no options)."""
    digest = hashlib.sha256(Path(path).read_bytes())
    digest.update(b"\0native\0" + json.dumps({}, sort_keys=True).encode())
    return digest.hexdigest()


def to_json(rep: DoctorReport) -> dict[str, Any]:
    """The report of ``python -m analytics doctor --json``."""
    return {**asdict(rep), "ok": rep.ok}


def text_report(path: str, rep: DoctorReport) -> str:
    """Schema version, row counts, files checked, warnings, then OK or the problems."""
    lines = [f"{path}: schema version {rep.schema_version} (latest {rep.latest_version})"]
    lines += [f"  {table:<16} {n:>12,}" for table, n in rep.counts.items()]
    lines.append(f"  files checked    {rep.files_checked:>12,}")
    held = sum(1 for n in rep.constraints.values() if not n)
    lines.append(f"  keys and domains {held:>12,} of {len(rep.constraints)} hold")
    lines += [f"warning: {w}" for w in rep.warnings]
    lines.append("OK" if rep.ok else "PROBLEMS:\n  " + "\n  ".join(rep.problems))
    return "\n".join(lines)

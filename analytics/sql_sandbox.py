"""sql: run one ad-hoc read-only SQL statement in the sandbox and print CSV.

The SQL explorer page and ``python -m analytics sql "SELECT ..."`` share this executor. Defence in depth:

1. **Statement allow-list, decided by DuckDB's own parser.** ``duckdb.extract_statements`` splits and
   types the text (exactly one statement; SELECT, EXPLAIN of a SELECT, or a short list of read-only
   PRAGMAs); ``json_serialize_sql`` then yields the parse tree of a SELECT, and every table function
   in it must be on an allow-list (no ``read_csv``, ``read_text``, ``glob``, ``query``, ...) and no
   table reference may be a file path or URL (DuckDB's replacement scans).
2. **Engine settings.** Each run opens a fresh in-memory DuckDB with ``autoinstall/autoload`` of
   extensions off, a ``memory_limit``, one thread and no temp-file spilling; it ATTACHes the published
   snapshot ``<db>.read`` READ_ONLY, then sets ``enable_external_access = false`` and
   ``lock_configuration = true`` so no statement can reach a file, the network or an extension, or
   loosen a setting; there is no temp directory, and the local file system is switched off once the
   snapshot is attached (``read_blob`` of the snapshot fails too).
3. **Time and size bounds.** A watchdog thread calls ``con.interrupt()`` when the statement runs past
   its timeout; results are streamed in Arrow batches and at most ``max_rows`` rows are kept in
   memory for display (the rest are only counted); downloads stream into a byte-capped buffer.
4. **Process isolation.** ``run_query`` / ``export_result`` check only the statement's length in the calling
   process; the parsing of step 1 and the run happen in a worker process (``python -m analytics.sql_sandbox``)
   with an address-space limit, killed after the timeout: parsing is superlinear in the text (a 2 MB
   ``SELECT 1,1,...`` took 66 s and 4.4 GB), and a single huge scalar call (``repeat('x', 3e9)``) never
   checks for an interrupt; either would otherwise freeze or exhaust the app's own process.

The primary database file is never opened, so nothing the user types can change it.
"""

from __future__ import annotations

import io
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

import store as rdb
from analytics import csvsafe

QUERIES_DIR = rdb.PROJECT_ROOT / "queries"
CATALOG_ALIAS = "runlens"

# Table functions a read-only query may use: generators and DuckDB's own catalog functions. Everything
# else (read_csv, read_text, read_json, read_parquet, glob, query, query_table, iceberg_scan, ...) is out.
ALLOWED_TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "json_each",
        "json_tree",
        "duckdb_tables",
        "duckdb_views",
        "duckdb_columns",
        "duckdb_schemas",
        "duckdb_types",
        "duckdb_functions",
        "duckdb_constraints",
        "duckdb_indexes",
        "duckdb_keywords",
        "pragma_table_info",
        "pragma_show",
        "pragma_version",
        "pragma_database_size",
    }
)
# Scalar functions that would tell a user the server's paths or settings (current_setting('temp_directory'),
# the home directory behind secret_directory); duckdb_databases() and duckdb_settings() are left off the
# table-function list above for the same reason.
DENIED_FUNCTIONS = frozenset({"current_setting"})
DISCLOSING_TABLE_FUNCTIONS = frozenset(
    {"duckdb_databases", "duckdb_settings", "duckdb_extensions", "duckdb_temporary_files", "duckdb_secrets"}
)
# PRAGMAs that only describe the database (anything that assigns or changes state is refused).
ALLOWED_PRAGMAS = frozenset(
    {"table_info", "show_tables", "show_tables_expanded", "show", "database_size", "version", "platform", "functions"}
)
# Why a statement type is refused, in words a user understands.
REFUSALS = {
    "INSERT": "INSERT changes the database",
    "UPDATE": "UPDATE changes the database",
    "DELETE": "DELETE changes the database",
    "CREATE": "CREATE changes the database",
    "DROP": "DROP changes the database",
    "ALTER": "ALTER changes the database",
    "COPY": "COPY reads or writes files",
    "EXPORT": "EXPORT DATABASE writes files",
    "ATTACH": "ATTACH opens other databases",
    "DETACH": "DETACH changes the attached databases",
    "LOAD": "INSTALL/LOAD add extensions",
    "SET": "SET/RESET/USE and assigning PRAGMAs change settings or the session",
    "VARIABLE_SET": "SET VARIABLE changes the session",
    "TRANSACTION": "transactions are not needed to read",
    "PREPARE": "PREPARE/EXECUTE are not supported",
    "EXECUTE": "PREPARE/EXECUTE are not supported",
    "CALL": "CALL/CHECKPOINT run procedures",
    "VACUUM": "VACUUM changes the database",
    "ANALYZE": "ANALYZE changes the database",
    "MULTI": "this statement expands into several statements",
    "UPDATE_EXTENSIONS": "extensions cannot be updated here",
    "COPY_DATABASE": "COPY FROM DATABASE copies a database into files",
    "DEALLOCATE": "PREPARE/EXECUTE/DEALLOCATE are not supported",
    "UNKNOWN": "this kind of statement is not supported here",
}
# DuckDB types a few statements by what they become, not by what they say (COPY FROM DATABASE is typed
# PRAGMA, DEALLOCATE is typed DROP): the leading keyword gives the reason a user recognises.
KEYWORD_REFUSALS = {"COPY": "COPY_DATABASE", "DEALLOCATE": "DEALLOCATE"}

# Friendly one-line descriptions for the schema browser (tables and views of data/schema.sql).
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
    "v_attempts": "Attempts joined with their run and task: benchmark, agent, level, category, score, cost...",
    "v_steps": "Trajectory steps with long tool results resolved to text.",
    "v_errors": "Error labels joined with attempt context (benchmark, agent, task, level, passed).",
    "v_runs": "One row per run with its attempt counts, pass rate, mean score, tokens, cost and latency.",
    "v_tool_calls": "Tool-call steps with their attempt's benchmark, run, agent, task and outcome.",
    "v_attempt_capabilities": "Attempts unnested by task capability (one row per attempt x capability).",
}


class SqlRefused(rdb.RunlensError):
    """The statement is not allowed in the sandbox (decided before anything runs)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"refused: {reason}")
        self.reason = reason


class SqlFailed(rdb.RunlensError):
    """DuckDB rejected or aborted the statement; ``line`` is where DuckDB says the problem is."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind  # error, timeout, memory, too_large, permission
        match = re.search(r"LINE (\d+):", message)
        self.line: int | None = int(match.group(1)) if match else None


@dataclass(frozen=True)
class SandboxLimits:
    """Bounds of one sandboxed run."""

    timeout_s: float = 10.0
    memory_limit: str = "512MB"
    threads: int = 1
    max_rows: int = 10_000  # rows held in memory for display
    max_export_bytes: int = 200_000_000
    batch_rows: int = 2048
    process_memory_bytes: int = 3 * 1024**3  # address space of the worker process (isolated runs)
    startup_grace_s: float = 15.0  # worker start-up allowance on top of timeout_s
    # Parsing alone is superlinear in the text (a 2 MB SELECT 1,1,... took 66 s and 4.4 GB): the size is
    # checked in the calling process before anything else, and the parsing itself runs in the worker.
    max_statement_chars: int = 100_000
    # Bytes of the displayed rows a result may hold (Arrow buffers); 10,000 rows of wide text could be GBs.
    max_result_bytes: int = 32_000_000


@dataclass(frozen=True)
class SqlResult:
    """What one run returned: the first ``max_rows`` rows and how many there were in all."""

    sql: str
    df: pd.DataFrame
    n_rows: int
    is_truncated: bool
    is_count_exact: bool
    elapsed_s: float
    column_types: tuple[tuple[str, str], ...] = field(default_factory=tuple)


# ---------------------------------------------------------------------------------------------
# 1. Classifying the statement
# ---------------------------------------------------------------------------------------------


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a JSON parse tree (iteratively: a deeply nested tree must not hit Python's recursion limit)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def check_size(sql: str, *, limits: SandboxLimits | None = None) -> None:
    """Refuse a statement longer than ``limits.max_statement_chars`` (cheap: it runs before any parsing).

    Raises:
        SqlRefused: the text is too long.
    """
    cap = (limits or SandboxLimits()).max_statement_chars
    if len(sql) > cap:
        raise SqlRefused(
            f"the statement is {len(sql):,} characters long; the limit is {cap:,} "
            "(aggregate in SQL or use a shorter IN list instead of pasting data)"
        )


def _statement_kind(stmt: Any) -> str:
    """The statement's type name; DuckDB has types its Python enum does not know (UPDATE EXTENSIONS is 29)."""
    try:
        name = str(stmt.type.name)
    except ValueError:
        return "UNKNOWN"
    # DuckDB 1.5 names such types "???" instead of raising
    return name if re.fullmatch(r"[A-Z_]+", name) else "UNKNOWN"


def _refusal(kind: str, text: str) -> str:
    """Why a statement of ``kind`` is refused, from its leading keyword when DuckDB retypes it."""
    match = re.match(r"\s*(\w+)", text)
    first = match.group(1).upper() if match else ""
    if first in KEYWORD_REFUSALS and first != kind:
        kind = KEYWORD_REFUSALS[first]
    return REFUSALS.get(kind, f"{kind} statements are not allowed")


def _check_tree(con: duckdb.DuckDBPyConnection, sql: str, *, denied: frozenset[str] = frozenset()) -> None:
    """Refuse a SELECT whose parse tree reads files, URLs or runs SQL held in a string (or calls ``denied``)."""
    try:
        raw = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0]
    except duckdb.Error as exc:
        raise SqlFailed(str(exc)) from exc
    tree = json.loads(raw)
    if tree.get("error"):
        raise SqlRefused(f"only plain queries can run here ({tree.get('error_message', 'not a SELECT')})")
    for node in _walk(tree.get("statements", [])):
        kind = node.get("type")
        if kind == "FUNCTION" and str(node.get("function_name", "")).lower() in DENIED_FUNCTIONS:
            raise SqlRefused(f"{node['function_name']}() is not allowed (it shows the server's settings and paths)")
        if kind == "TABLE_FUNCTION":
            name = str((node.get("function") or {}).get("function_name", "")).lower()
            if name in DISCLOSING_TABLE_FUNCTIONS or name in denied:
                raise SqlRefused(f"{name}() is not allowed (it shows the server's file paths and settings)")
            if name not in ALLOWED_TABLE_FUNCTIONS:
                raise SqlRefused(
                    f"table function {name}() is not allowed (it can read files, URLs or run "
                    "other SQL); query the tables and views instead"
                )
        elif kind == "BASE_TABLE":
            name = str(node.get("table_name", ""))
            if re.search(r"[/\\:.*?]", name):
                raise SqlRefused(f"{name!r} looks like a file path or URL; reading files is not allowed")


def check_statement(
    sql: str,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    is_deep: bool = True,
    limits: SandboxLimits | None = None,
    denied: frozenset[str] = frozenset(),
) -> tuple[str, str]:
    """Classify ``sql`` with DuckDB's parser; return ``(statement, type)`` or raise ``SqlRefused``.

    Args:
        sql: the user's text (one statement, an optional trailing semicolon and comments are fine).
        con: a connection for ``json_serialize_sql`` (a private in-memory one when omitted).
        is_deep: also inspect the parse tree of a SELECT (table functions, file paths); False checks
            only the statement count and type, which needs no connection.
        limits: where ``max_statement_chars`` comes from (the defaults when omitted).
        denied: further table functions to refuse as disclosing server paths (see ``_stream``).

    Parsing costs time and memory superlinear in the text: call this inside the sandbox worker (as
    ``run_query`` does), not in a server process, for text a user typed.

    Raises:
        SqlRefused: too long, empty, several statements, a disallowed statement type or table function.
        SqlFailed: a syntax error (with DuckDB's line and caret).
    """
    check_size(sql, limits=limits)
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlFailed(str(exc)) from exc
    if not statements:
        raise SqlRefused("there is no statement to run")
    if len(statements) > 1:
        # DuckDB 1.5 expands some statements before we see them (COPY FROM DATABASE becomes a transaction of
        # two copies): a refused kind among them is the reason the user should read, not the count.
        for part in statements:
            part_kind = _statement_kind(part)
            if part_kind not in ("TRANSACTION", "SELECT"):
                reason = _refusal(part_kind, sql.strip())
                raise SqlRefused(f"{reason}; the SQL explorer is read-only (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE)")
        raise SqlRefused(f"one statement per run ({len(statements)} found); run them one at a time")
    stmt = statements[0]
    kind = _statement_kind(stmt)
    text = stmt.query.strip().rstrip(";").strip()
    if kind == "PRAGMA" and not re.match(r"PRAGMA\b", text, re.IGNORECASE):
        raise SqlRefused(f"{_refusal(kind, text)}; the SQL explorer is read-only")
    if kind == "PRAGMA":
        match = re.match(r"PRAGMA\s+(\w+)\s*(\(|$)", text, re.IGNORECASE)
        if not match or match.group(1).lower() not in ALLOWED_PRAGMAS:
            raise SqlRefused(
                "this PRAGMA changes settings or state; only " + ", ".join(sorted(ALLOWED_PRAGMAS)) + " are allowed"
            )
        return text, kind
    if kind == "EXPLAIN":
        # EXPLAIN [ANALYZE] [(option, ...)] <statement>: the options are DuckDB's (FORMAT JSON, ...)
        inner = re.sub(r"^\s*EXPLAIN\s+(ANALY[SZ]E\s+)?(\([^()]*\)\s*)?", "", text, flags=re.IGNORECASE)
        try:
            inner_stmts = duckdb.extract_statements(inner) if inner != text else []
        except duckdb.Error:
            inner_stmts = []
        if len(inner_stmts) != 1 or _statement_kind(inner_stmts[0]) != "SELECT":
            raise SqlRefused("EXPLAIN is allowed for SELECT statements only")
        if is_deep:
            _check_tree_with(con, inner, denied=denied)
        return text, kind
    if kind != "SELECT":
        reason = _refusal(kind, text)
        raise SqlRefused(f"{reason}; the SQL explorer is read-only (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE)")
    if is_deep:
        _check_tree_with(con, text, denied=denied)
    return text, kind


def _check_tree_with(con: duckdb.DuckDBPyConnection | None, sql: str, *, denied: frozenset[str]) -> None:
    if con is not None:
        _check_tree(con, sql, denied=denied)
        return
    private = duckdb.connect(":memory:", config={"enable_external_access": False})
    try:
        _check_tree(private, sql, denied=denied)
    finally:
        private.close()


# ---------------------------------------------------------------------------------------------
# 2. The sandboxed connection
# ---------------------------------------------------------------------------------------------


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def open_sandbox(db: str | Path | None = None, *, limits: SandboxLimits | None = None) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB with the snapshot attached read-only and the configuration locked."""
    limits = limits or SandboxLimits()
    snap = rdb.ensure_snapshot(db)
    con = duckdb.connect(
        ":memory:",
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            "memory_limit": limits.memory_limit,
            "threads": limits.threads,
            "max_temp_directory_size": "0B",
            # no temp directory at all: DuckDB keeps its temp directory writable after external access is
            # switched off, so a COPY ... TO '.tmp/x' would otherwise still write a file
            "temp_directory": "",
        },
    )
    try:
        if rdb.is_parquet_folder(snap):
            # An exported Parquet folder: views over its files, which stay readable through
            # allowed_directories once external access is off (every other path is refused).
            from store import parquet

            marker = parquet.attach_views(con, snap)
            location = str(marker.get("location") or snap.resolve()).rstrip("/") + "/"
            con.execute("SET allowed_directories = [?]", [location])
        else:
            # The snapshot is attached before external access is switched off (it is itself a file).
            con.execute(f"ATTACH {_sql_literal(str(snap))} AS {CATALOG_ALIAS} (READ_ONLY)")
            con.execute(f"USE {CATALOG_ALIAS}")
        con.execute("SET enable_external_access = false")
        if not rdb.is_parquet_folder(snap):
            # An attached file stays on allowed_paths, so read_blob('<snapshot>') would still read it: switch
            # off the local file system itself (the attached database keeps its open handle). The Parquet
            # folder's views read their files lazily, so there allowed_directories is the engine's bound.
            con.execute("SET disabled_filesystems = 'LocalFileSystem'")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


class _Watchdog:
    """Interrupts a connection's running query once ``timeout_s`` has passed."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self._con = con
        self._done = threading.Event()
        self.fired = False
        self.deadline = time.monotonic() + timeout_s
        self._thread = threading.Thread(target=self._run, args=(timeout_s,), daemon=True, name="sql-watchdog")

    def _run(self, timeout_s: float) -> None:
        if not self._done.wait(timeout_s):
            self.fired = True
            self._con.interrupt()

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    @property
    def is_expired(self) -> bool:
        return self.fired or time.monotonic() > self.deadline


def _engine_error(exc: BaseException, dog: _Watchdog | None, limits: SandboxLimits) -> SqlFailed:
    text = str(exc)
    if (dog is not None and dog.fired) or "INTERRUPT" in text:
        return SqlFailed(f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout")
    if isinstance(exc, duckdb.OutOfMemoryException) or "Out of Memory" in text:
        return SqlFailed(
            f"the statement needed more than the sandbox's {limits.memory_limit} of memory "
            f"and was stopped: {text.splitlines()[0]}",
            kind="memory",
        )
    if isinstance(exc, duckdb.PermissionException) or "Permission Error" in text:
        return SqlFailed(f"refused by the engine (no file, network or extension access): {text}", kind="permission")
    if "read-only" in text:
        return SqlFailed(f"refused by the engine (the database is read-only): {text}", kind="permission")
    return SqlFailed(text)


@dataclass
class _Run:
    """What ``_stream`` learnt about a run (filled in as it goes, so a timeout keeps what was seen)."""

    statement: str = ""
    schema: pa.Schema | None = None
    duck_types: tuple[tuple[str, str], ...] = ()
    elapsed_s: float = 0.0


def _relation(con: duckdb.DuckDBPyConnection, statement: str) -> duckdb.DuckDBPyRelation:
    """A lazy relation for the statement (it streams, unlike ``execute``).

    ``con.sql`` drops the ``LINE n: ... ^`` position from binder errors; binding again through
    ``execute`` fails the same way before anything runs, and its message carries the position.
    """
    try:
        return con.sql(statement)
    except (duckdb.BinderException, duckdb.CatalogException) as exc:
        try:
            con.execute(statement)
        except (duckdb.BinderException, duckdb.CatalogException) as located:
            raise located from None
        raise exc


def _stream(
    sql: str,
    *,
    db: str | Path | None,
    limits: SandboxLimits,
    consume: Callable[[pa.RecordBatch], bool],
    run: _Run | None = None,
) -> _Run:
    """Check and run ``sql``, passing Arrow batches to ``consume`` until it returns False.

    Raises:
        SqlRefused: the statement is not allowed (nothing ran).
        SqlFailed: DuckDB's error, the timeout, the memory limit or the byte cap.
    """
    run = run if run is not None else _Run()
    check_statement(sql, is_deep=False, limits=limits)  # refuse writes, settings, ... before opening anything
    con = open_sandbox(db, limits=limits)
    try:
        # an exported Parquet folder's views are read_parquet('<folder>/...'): their SQL names a server path
        denied = frozenset({"duckdb_views"}) if rdb.is_parquet_folder(rdb.resolve_db_path(db)) else frozenset()
        run.statement, _ = check_statement(sql, con=con, limits=limits, denied=denied)
        start = time.perf_counter()
        dog: _Watchdog | None = None
        try:
            with _Watchdog(con, limits.timeout_s) as dog:
                rel = _relation(con, run.statement)
                run.duck_types = tuple((c, str(t)) for c, t in zip(rel.columns, rel.types, strict=True))
                reader = rel.to_arrow_reader(limits.batch_rows)
                run.schema = reader.schema
                for batch in reader:
                    if dog.is_expired:  # between batches the interrupt may not surface as an error
                        raise SqlFailed(
                            f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout"
                        )
                    if not consume(batch):
                        break
        except (duckdb.Error, pa.ArrowException, OSError) as exc:
            raise _engine_error(exc, dog, limits) from exc
        finally:
            run.elapsed_s = time.perf_counter() - start
        return run
    finally:
        con.close()


def _within_bytes(batch: pa.RecordBatch, budget: int) -> pa.RecordBatch:
    """The longest head of ``batch`` whose buffers take at most ``budget`` bytes (binary search on rows)."""
    if batch.nbytes <= budget:
        return batch
    lo, hi = 0, batch.num_rows  # invariant: head(lo) fits, head(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if batch.slice(0, mid).nbytes <= budget else (lo, mid)
    return batch.slice(0, lo)


def _run_in_process(sql: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None) -> SqlResult:
    """Run one statement in the sandbox; keep at most ``limits.max_rows`` rows, count the rest.

    When the timeout hits after the displayed rows were collected, the result is returned with
    ``is_count_exact = False`` instead of failing: the user still sees the first page.
    """
    limits = limits or SandboxLimits()
    kept: list[pa.RecordBatch] = []
    counts = {"kept": 0, "seen": 0, "bytes": 0, "is_full": False}

    def consume(batch: pa.RecordBatch) -> bool:
        counts["seen"] += batch.num_rows
        room = limits.max_rows - counts["kept"]
        if room > 0 and not counts["is_full"]:
            part = _within_bytes(batch.slice(0, room), limits.max_result_bytes - counts["bytes"])
            counts["is_full"] = part.num_rows < min(room, batch.num_rows)
            kept.append(part)
            counts["kept"] += part.num_rows
            counts["bytes"] += part.get_total_buffer_size()
        return True

    run = _Run()
    is_exact = True
    try:
        _stream(sql, db=db, limits=limits, consume=consume, run=run)
    except SqlFailed as exc:
        if exc.kind != "timeout" or (counts["kept"] < limits.max_rows and not counts["is_full"]):
            raise
        is_exact = False
    table = pa.Table.from_batches(kept, schema=run.schema) if run.schema is not None else pa.table({})
    return SqlResult(
        sql=run.statement,
        df=_to_pandas(table),
        n_rows=counts["seen"],
        is_truncated=counts["seen"] > counts["kept"],
        is_count_exact=is_exact,
        elapsed_s=run.elapsed_s,
        column_types=run.duck_types,
    )


@dataclass(frozen=True)
class SqlOutcome:
    """A run's result, or why there is none (``error_kind``: refused, error, timeout, memory, permission)."""

    result: SqlResult | None
    error_kind: str | None = None
    error: str | None = None
    line: int | None = None


def try_query(sql: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None) -> SqlOutcome:
    """``run_query`` that returns refusals and engine errors instead of raising (for caching in pages)."""
    try:
        return SqlOutcome(run_query(sql, db=db, limits=limits))
    except SqlRefused as exc:
        return SqlOutcome(None, "refused", exc.reason)
    except SqlFailed as exc:
        return SqlOutcome(None, exc.kind, exc.message, exc.line)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow to pandas; exotic types (intervals, unions) fall back to their text form."""
    try:
        return table.to_pandas()
    except (pa.ArrowException, TypeError, ValueError):
        cols = {
            name: [None if v is None else str(v) for v in table.column(name).to_pylist()] for name in table.column_names
        }
        return pd.DataFrame(cols)


def _export_in_process(
    sql: str, fmt: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None
) -> bytes:
    """The FULL result of ``sql`` as CSV or Parquet bytes, streamed under the sandbox and a byte cap."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', not {fmt!r}")
    limits = limits or SandboxLimits()
    buf = io.BytesIO()
    writers: list[Any] = []

    def open_writer(schema: pa.Schema) -> Any:
        return pacsv.CSVWriter(buf, schema) if fmt == "csv" else pq.ParquetWriter(buf, schema)

    def consume(batch: pa.RecordBatch) -> bool:
        batch = _exportable(batch, is_csv=fmt == "csv")
        if fmt == "csv":  # formula prefixes neutralised for spreadsheets; Parquet keeps raw values
            batch = csvsafe.csv_safe_batch(batch)
        if not writers:
            writers.append(open_writer(batch.schema))
        writers[0].write_batch(batch)
        if buf.tell() > limits.max_export_bytes:
            raise SqlFailed(
                f"the result is larger than {limits.max_export_bytes / 1e6:.0f} MB; add a LIMIT or aggregate",
                kind="too_large",
            )
        return True

    run = _stream(sql, db=db, limits=limits, consume=consume)
    if not writers:  # no rows: still write the header / an empty file with the columns
        empty = pa.RecordBatch.from_pylist([], schema=run.schema or pa.schema([]))
        empty = _exportable(empty, is_csv=fmt == "csv")
        writers.append(open_writer((csvsafe.csv_safe_batch(empty) if fmt == "csv" else empty).schema))
    writers[0].close()
    return buf.getvalue()


def _needs_text(data_type: pa.DataType, *, is_csv: bool) -> bool:
    """Types a writer cannot store: Parquet lacks null, union, interval; CSV also nested, binary, extension."""
    if pa.types.is_null(data_type) or pa.types.is_union(data_type) or pa.types.is_interval(data_type):
        return True
    if is_csv:
        return (
            pa.types.is_nested(data_type)
            or pa.types.is_binary(data_type)
            or pa.types.is_large_binary(data_type)
            or isinstance(data_type, pa.BaseExtensionType)
        )
    return False


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=str)
    return str(value)


def _exportable(batch: pa.RecordBatch, *, is_csv: bool) -> pa.RecordBatch:
    """Columns a writer cannot store become text (nested values as JSON, bytes as hex)."""
    arrays, fields = [], []
    for f, col in zip(batch.schema, batch.columns, strict=True):
        if _needs_text(f.type, is_csv=is_csv):
            col = pa.array([_as_text(v) for v in col.to_pylist()], type=pa.string())
            f = pa.field(f.name, pa.string())
        arrays.append(col)
        fields.append(f)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def result_csv(result: SqlResult) -> str:
    """CSV text of the rows a result holds (formula prefixes neutralised, see ``analytics.csvsafe``)."""
    return csvsafe.csv_text(result.df)


# ---------------------------------------------------------------------------------------------
# 2b. Process isolation: a worker process that can be killed
# ---------------------------------------------------------------------------------------------
# A few statements spend a long time inside ONE scalar call (repeat('x', 3e9), lpad, a huge list), where
# DuckDB never checks for an interrupt and its memory_limit does not see the allocation. Run in the
# app's own process they would freeze or kill the server. So public calls run the statement in a
# worker process with an address-space limit and kill it when timeout_s (plus start-up) has passed.


def run_query(
    sql: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None, is_isolated: bool = True
) -> SqlResult:
    """Run one statement in the sandbox; keep at most ``limits.max_rows`` rows, count the rest.

    When the timeout hits after the displayed rows were collected, the result is returned with
    ``is_count_exact = False`` instead of failing: the user still sees the first page.

    Args:
        sql: one statement.
        db: database path (default: ``RUNLENS_DB`` or ``data/runlens.duckdb``); its snapshot is read.
        limits: time, memory and size bounds.
        is_isolated: run in a killable worker process (default); False runs in this process.

    Raises:
        SqlRefused: the statement is too long (checked here) or not allowed (decided in the worker by
            DuckDB's parser, before the statement runs).
        SqlFailed: DuckDB's error (with ``line``), or a bound was hit (``kind`` timeout / memory).
    """
    limits = limits or SandboxLimits()
    check_size(sql, limits=limits)  # the only check in this process: parsing happens in the worker
    if not is_isolated:
        return _run_in_process(sql, db=db, limits=limits)
    result = _in_worker({"mode": "run", "sql": sql}, db=db, limits=limits)
    assert isinstance(result, SqlResult)
    return result


def export_result(
    sql: str, fmt: str, *, db: str | Path | None = None, limits: SandboxLimits | None = None, is_isolated: bool = True
) -> bytes:
    """The FULL result of ``sql`` as CSV or Parquet bytes, streamed under the sandbox and a byte cap."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"fmt must be 'csv' or 'parquet', not {fmt!r}")
    limits = limits or SandboxLimits()
    check_size(sql, limits=limits)
    if not is_isolated:
        return _export_in_process(sql, fmt, db=db, limits=limits)
    data = _in_worker({"mode": fmt, "sql": sql}, db=db, limits=limits)
    assert isinstance(data, bytes)
    return data


def _in_worker(request: dict[str, Any], *, db: str | Path | None, limits: SandboxLimits) -> Any:
    """Run ``request`` in ``python -m analytics.sql_sandbox``; return its value or raise its error."""
    import dataclasses
    import os
    import pickle
    import subprocess

    payload = {**request, "db": str(rdb.resolve_db_path(db)), "limits": dataclasses.asdict(limits)}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(rdb.PROJECT_ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "analytics.sql_sandbox"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=rdb.PROJECT_ROOT,
        env=env,
    )
    try:
        out, err = proc.communicate(json.dumps(payload).encode(), timeout=limits.timeout_s + limits.startup_grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise SqlFailed(
            f"the statement ran longer than {limits.timeout_s:g} s and was stopped", kind="timeout"
        ) from None
    if proc.returncode != 0 or not out:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise SqlFailed(
            f"the statement exhausted the sandbox worker's memory and was stopped ({tail[0][:200]})", kind="memory"
        )
    # The worker is our own code (same interpreter, same tree): its pickle is trusted.
    kind, value = pickle.loads(out)  # noqa: S301
    if kind == "refused":
        raise SqlRefused(value)
    if kind == "failed":
        raise SqlFailed(value[0], kind=value[1])
    return value


def _worker_main() -> int:
    """Entry of the worker process: one JSON request on stdin, one pickled ``(kind, value)`` on stdout."""
    import pickle
    import resource

    request = json.loads(sys.stdin.buffer.read())
    limits = SandboxLimits(**request["limits"])
    cap = limits.process_memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    cpu_s = int(limits.timeout_s + limits.startup_grace_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    outcome: tuple[str, Any]
    try:
        if request["mode"] == "run":
            outcome = ("ok", _run_in_process(request["sql"], db=request["db"], limits=limits))
        else:
            outcome = ("ok", _export_in_process(request["sql"], request["mode"], db=request["db"], limits=limits))
    except SqlRefused as exc:
        outcome = ("refused", exc.reason)
    except SqlFailed as exc:
        outcome = ("failed", (exc.message, exc.kind))
    except MemoryError:
        outcome = ("failed", ("the statement exhausted the sandbox worker's memory and was stopped", "memory"))
    except Exception as exc:  # noqa: BLE001 - the worker's boundary: report the project's error, never a traceback
        outcome = ("failed", (f"the sandbox could not run this statement ({type(exc).__name__})", "error"))
    sys.stdout.buffer.write(pickle.dumps(outcome))
    sys.stdout.flush()
    return 0


# ---------------------------------------------------------------------------------------------
# 3. Schema browser and example gallery (trusted SQL of our own, on a normal reader connection)
# ---------------------------------------------------------------------------------------------


def schema_objects(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Tables and views of the database: name, kind, description, row count, column count."""
    objs = rdb.query_df(
        con,
        """
        SELECT table_name AS name, 'table' AS kind, column_count AS n_columns, comment FROM duckdb_tables()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        UNION ALL
        SELECT view_name, 'view', column_count, comment FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        ORDER BY kind DESC, name""",
    )
    counts = []
    for name in objs["name"]:
        # Identifiers come from the catalog itself, quoted, never from user input.
        quoted = '"' + str(name).replace('"', '""') + '"'
        counts.append(int(rdb.query_rows(con, f"SELECT count(*) FROM {quoted}")[0][0]))
    objs["n_rows"] = counts
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


# ---------------------------------------------------------------------------------------------
# 4. "Chart this" and "Ask in English"
# ---------------------------------------------------------------------------------------------

CHART_KINDS = ("bar", "line", "scatter")


def fig_result(
    df: pd.DataFrame, *, x: str, y: str, color: str | None = None, kind: str = "bar", title: str | None = None
) -> Any:
    """A Plotly chart of a query result (``x``, ``y`` and an optional ``color`` column).

    Raises:
        ValueError: naming a column the result does not have, or an unknown chart kind.
    """
    import plotly.express as px

    for col in (x, y, color):
        if col is not None and col not in df.columns:
            raise ValueError(f"column {col!r} is not in the result (columns: {', '.join(map(str, df.columns))})")
    if kind not in CHART_KINDS:
        raise ValueError(f"kind must be one of {CHART_KINDS}, not {kind!r}")
    builder = {"bar": px.bar, "line": px.line, "scatter": px.scatter}[kind]
    kwargs: dict[str, Any] = {"x": x, "y": y, "color": color, "title": title}
    if kind == "bar":
        kwargs["barmode"] = "group"
    fig = builder(df, **kwargs)
    fig.update_layout(margin={"t": 40 if title else 10, "b": 10, "l": 10, "r": 10})
    return fig


NL_SYSTEM = """You write one DuckDB SQL query that answers the user's question about AI-agent evaluation runs.
Rules: exactly one read-only SELECT (WITH is fine); no file, URL or table-function access; prefer the friendly
views (v_attempts, v_runs, v_steps, v_tool_calls, v_errors, v_attempt_capabilities); give columns readable
names; round percentages to 1 decimal. Reply with the SQL only, in one ```sql fenced block.

Schema:
{schema}

Example queries:
{examples}"""


def nl_messages(question: str, *, schema: str, gallery: list[Example], max_examples: int = 6) -> list[dict[str, str]]:
    """Chat messages asking the model for SQL answering ``question``."""
    shots = "\n\n".join(f"-- {e.title}\n{e.sql}" for e in gallery[:max_examples])
    return [
        {"role": "system", "content": NL_SYSTEM.format(schema=schema, examples=shots)},
        {"role": "user", "content": question.strip()},
    ]


def extract_sql(text: str) -> str:
    """The SQL inside the model's reply (the first fenced block, else the whole text)."""
    match = re.search(r"```(?:sql|SQL)?\s*\n?(.*?)```", text, flags=re.DOTALL)
    return (match.group(1) if match else text).strip()


def ask_sql(question: str, *, schema: str, gallery: list[Example], client: Any = None, cfg: Any = None) -> str:
    """Ask the configured OpenAI-compatible model for SQL (returned for review; it is NOT run here).

    Raises:
        analytics.llm.LLMError: no endpoint configured, or the call failed.
    """
    from analytics import llm

    cfg = cfg or llm.require_config()
    client = client or llm.make_client(cfg)
    reply = llm.chat(client, cfg, nl_messages(question, schema=schema, gallery=gallery), max_tokens=800)
    return extract_sql(reply.text)


# ---------------------------------------------------------------------------------------------
# 5. Command line: python -m analytics sql [--db PATH] "SELECT ..."
# ---------------------------------------------------------------------------------------------

EXIT_REFUSED = 3
EXIT_FAILED = 1
EXIT_BOUNDED = 4


def result_json(result: SqlResult) -> dict[str, Any]:
    return {
        "columns": [c for c, _ in result.column_types],
        "types": [t for _, t in result.column_types],
        "rows": json.loads(result.df.to_json(orient="values", date_format="iso", default_handler=str)),
        "n_rows": result.n_rows,
        "is_truncated": result.is_truncated,
        "is_count_exact": result.is_count_exact,
        "elapsed_s": round(result.elapsed_s, 4),
    }


if __name__ == "__main__":
    # Run the worker from the imported module, so pickled results name analytics.sql_sandbox classes.
    from analytics import sql_sandbox as _module

    sys.exit(_module._worker_main())

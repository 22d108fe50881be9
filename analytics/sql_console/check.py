"""Step 1 of the sandbox: the statement allow-list, decided by DuckDB's own parser (statement kinds, table functions, pragmas, file paths), with the reason for every refusal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import duckdb

from analytics.sql_console.limits import SandboxLimits, SqlFailed, SqlRefused

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


# the home directory behind secret_directory); duckdb_databases() and duckdb_settings() are left off the
# table-function list above for the same reason.
DENIED_FUNCTIONS = frozenset({"current_setting"})


DISCLOSING_TABLE_FUNCTIONS = frozenset(
    {"duckdb_databases", "duckdb_settings", "duckdb_extensions", "duckdb_temporary_files", "duckdb_secrets"}
)


# DuckDB's built-in views read without parentheses (``FROM duckdb_databases``, ``FROM pg_settings``), in any
# schema (``system.main.``, ``pg_catalog.``): those that show database files, settings (the home directory,
# the temp directory) or the engine's log are refused by name, whatever their qualifier or quoting.
DISCLOSING_VIEWS = frozenset(
    {
        "duckdb_databases",
        "pragma_database_list",
        "pg_settings",
        "duckdb_settings",
        "duckdb_extensions",
        "duckdb_secrets",
        "duckdb_temporary_files",
        "duckdb_logs",
        "duckdb_log_contexts",
        "duckdb_memory",
        "duckdb_external_file_cache",
    }
)
# Views that show other views' SQL: on an exported Parquet folder that SQL names the folder (see ``_stream``).
VIEW_SQL_VIEWS = frozenset(
    {"duckdb_views", "views", "pg_views", "sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"}
)


# PRAGMAs that only describe the database (anything that assigns or changes state is refused).
ALLOWED_PRAGMAS = frozenset(
    {"table_info", "show_tables", "show_tables_expanded", "show", "database_size", "version", "platform", "functions"}
)


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


# PRAGMA, DEALLOCATE is typed DROP): the leading keyword gives the reason a user recognises.
KEYWORD_REFUSALS = {"COPY": "COPY_DATABASE", "DEALLOCATE": "DEALLOCATE"}


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
            if name.lower() in DISCLOSING_VIEWS or name.lower() in denied:
                raise SqlRefused(f"{name} is not allowed (it shows the server's file paths and settings)")
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

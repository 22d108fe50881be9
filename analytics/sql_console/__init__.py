"""sql_console: run one ad-hoc read-only SQL statement in the sandbox (the SQL page and ``python -m analytics sql``).

The SQL explorer page and ``python -m analytics sql "SELECT ..."`` share this executor. Defence in depth:

1. **Statement allow-list, decided by DuckDB's own parser.** ``duckdb.extract_statements`` splits and
   types the text (exactly one statement; SELECT, EXPLAIN of a SELECT, or a short list of read-only
   PRAGMAs); ``json_serialize_sql`` then yields the parse tree of a SELECT, and every table function
   in it must be on an allow-list (no ``read_csv``, ``read_text``, ``glob``, ``query``, ...) and no
   table reference may be a file path or URL (DuckDB's replacement scans).
2. **Engine settings.** Each run asks the store for a sandbox (``Store.sandbox``, store/backends/): a fresh
   DuckDB with ``autoinstall/autoload`` of extensions off, a ``memory_limit``, one thread and no temp-file
   spilling; a file store ATTACHes its published snapshot ``<db>.read`` READ_ONLY (a lake or a Parquet folder
   keeps only its own data folder readable), then sets ``enable_external_access = false`` and
   ``lock_configuration = true`` so no statement can reach a file, the network or an extension, or
   loosen a setting; there is no temp directory, and the local file system is switched off once the
   snapshot is attached (``read_blob`` of the snapshot fails too).
3. **Time and size bounds.** A watchdog thread calls ``con.interrupt()`` when the statement runs past
   its timeout; results are streamed in Arrow batches and at most ``max_rows`` rows are kept in
   memory for display (the rest are only counted); downloads stream into a byte-capped buffer.
4. **Process isolation.** ``run_query`` / ``export_result`` check only the statement's length in the calling
   process; the parsing of step 1 and the run happen in a worker process (``python -m analytics.sql_console.worker``)
   with an address-space limit, killed after the timeout: parsing is superlinear in the text (a 2 MB
   ``SELECT 1,1,...`` took 66 s and 4.4 GB), and a single huge scalar call (``repeat('x', 3e9)``) never
   checks for an interrupt; either would otherwise freeze or exhaust the app's own process.

The primary database file is never opened, so nothing the user types can change it.

Modules: ``limits`` (limits, results, errors), ``check`` (step 1), ``run`` (steps 2 and 3, in the worker),
``worker`` (step 4: ``run_query``, ``export_result``, ``try_query``), ``schema`` (schema browser, examples),
``figures`` (the result chart) and ``nl2sql`` (natural language to SQL). Their public names are re-exported here.
"""

from __future__ import annotations

from analytics.sql_console.check import (
    ALLOWED_PRAGMAS,
    ALLOWED_TABLE_FUNCTIONS,
    DENIED_FUNCTIONS,
    DISCLOSING_TABLE_FUNCTIONS,
    KEYWORD_REFUSALS,
    REFUSALS,
    check_size,
    check_statement,
)
from analytics.sql_console.figures import CHART_KINDS, fig_result
from analytics.sql_console.limits import (
    EXIT_BOUNDED,
    EXIT_FAILED,
    EXIT_REFUSED,
    SandboxLimits,
    SqlFailed,
    SqlOutcome,
    SqlRefused,
    SqlResult,
)
from analytics.sql_console.nl2sql import (
    NL_SYSTEM,
    ask_sql,
    extract_sql,
    nl_messages,
)
from analytics.sql_console.run import (
    open_sandbox,
    result_csv,
    result_json,
)
from analytics.sql_console.schema import (
    DESCRIPTIONS,
    QUERIES_DIR,
    Example,
    examples,
    schema_columns,
    schema_objects,
    schema_text,
)
from analytics.sql_console.worker import (
    export_result,
    export_to,
    run_query,
    try_query,
)

__all__ = [
    "SqlRefused",
    "SqlFailed",
    "SandboxLimits",
    "SqlResult",
    "SqlOutcome",
    "EXIT_REFUSED",
    "EXIT_FAILED",
    "EXIT_BOUNDED",
    "ALLOWED_TABLE_FUNCTIONS",
    "DENIED_FUNCTIONS",
    "DISCLOSING_TABLE_FUNCTIONS",
    "ALLOWED_PRAGMAS",
    "REFUSALS",
    "KEYWORD_REFUSALS",
    "check_size",
    "check_statement",
    "open_sandbox",
    "result_csv",
    "result_json",
    "try_query",
    "run_query",
    "export_result",
    "export_to",
    "QUERIES_DIR",
    "DESCRIPTIONS",
    "schema_objects",
    "schema_columns",
    "Example",
    "examples",
    "schema_text",
    "CHART_KINDS",
    "fig_result",
    "NL_SYSTEM",
    "nl_messages",
    "extract_sql",
    "ask_sql",
]

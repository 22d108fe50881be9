"""What a sandboxed statement may use (SandboxLimits), what it gives back (SqlResult, SqlOutcome), how it is refused or fails (SqlRefused, SqlFailed), and the command line's exit codes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

import store as rdb


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


@dataclass(frozen=True)
class SqlOutcome:
    """A run's result, or why there is none (``error_kind``: refused, error, timeout, memory, permission)."""

    result: SqlResult | None
    error_kind: str | None = None
    error: str | None = None
    line: int | None = None


EXIT_REFUSED = 3


EXIT_FAILED = 1


EXIT_BOUNDED = 4

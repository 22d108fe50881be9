"""What a sandboxed statement may use (SandboxLimits), what it gives back (SqlResult, SqlOutcome), how it is refused or fails (SqlRefused, SqlFailed), and the command line's exit codes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

import store as rdb
from ingest.workers import WORKER_MEMORY_BYTES

# What a sandbox worker takes beside DuckDB's memory_limit: the interpreter and its libraries mapped (about 460 MB of
# address space), the kept result as Arrow and pandas (at most 32 MB each) and room to convert it.
WORKER_HEADROOM_BYTES = 640 * 1024**2
_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}
_UNITS |= {"KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "TIB": 1024**4}


def size_bytes(text: str) -> int:
    """DuckDB's size setting (``512MB``, ``1GiB``, ``2 GB``) in bytes.

    Raises:
        ValueError: not a size DuckDB would read.
    """
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).upper() not in _UNITS:
        raise ValueError(f"not a memory size: {text!r} (for example 512MB or 2GB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


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
    memory_limit: str = "384MB"  # DuckDB's own, below the worker's limit on everything (process_memory_bytes)
    threads: int = 1
    max_rows: int = 10_000  # rows held in memory for display
    max_export_bytes: int = 200_000_000
    batch_rows: int = 2048
    # Address space of the worker process (isolated runs): Python, Arrow and DuckDB together (ingest.workers);
    # raised to memory_limit plus WORKER_HEADROOM_BYTES when DuckDB is given more (``python -m analytics sql``).
    process_memory_bytes: int = WORKER_MEMORY_BYTES
    startup_grace_s: float = 15.0  # worker start-up allowance on top of timeout_s
    # Parsing alone is superlinear in the text (a 2 MB SELECT 1,1,... took 66 s and 4.4 GB): the size is
    # checked in the calling process before anything else, and the parsing itself runs in the worker.
    max_statement_chars: int = 100_000
    # Bytes of the displayed rows a result may hold (Arrow buffers); 10,000 rows of wide text could be GBs.
    max_result_bytes: int = 32_000_000

    def worker_memory_bytes(self) -> int:
        """The worker's address-space limit: ``process_memory_bytes``, or DuckDB's limit plus the headroom when
        that is more (so ``--memory-limit 2GB`` is not cut short by the worker's default)."""
        try:
            duck = size_bytes(self.memory_limit)
        except ValueError:
            duck = 0  # DuckDB refuses the setting itself, with its own message
        return max(self.process_memory_bytes, duck + WORKER_HEADROOM_BYTES)


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

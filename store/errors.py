"""The project's own exceptions (pages catch these, never bare Exception)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class RunlensError(Exception):
    """Base class of the project's own errors (pages catch these, not bare Exception)."""


class QueryError(RunlensError):
    """A SQL statement failed; carries the statement and its parameters."""

    def __init__(self, message: str, sql: str, params: Sequence[Any] | dict[str, Any] | None) -> None:
        super().__init__(f"{message}\n-- SQL:\n{sql.strip()}\n-- params: {params!r}")
        self.reason = message
        self.sql = sql
        self.params = params


class StoreVersionError(RunlensError):
    """The database file was written by a DuckDB whose storage format the pinned one cannot read."""


class DatabaseBusyError(RunlensError):
    """Another process held the database lock for longer than we were willing to wait."""


class LakeError(RunlensError):
    """The lake location is malformed, or the lake cannot be reached or created."""

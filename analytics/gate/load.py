"""The gate's own read: the order the candidate's log recorded its tasks (the values compared are the Version
diff's, ``analytics.diff``). The only module of ``analytics.gate`` that queries."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np

from analytics.gate.compute import order_by_first
from store import query_df


def task_order(
    con: duckdb.DuckDBPyConnection, candidate: str, shared: Sequence[str] | np.ndarray
) -> tuple[np.ndarray, str]:
    """Positions of ``shared`` in the order the candidate's log recorded its tasks (its first attempt of each, as
    ingested; ``run_task_first``, migration 011): the order attempts arrive in over time, never chosen by their
    outcome."""
    first = query_df(con, "SELECT task_id, first_attempt AS at FROM run_task_first WHERE run_id = ?", [candidate])
    return order_by_first(dict(zip(first["task_id"].astype(str), first["at"].astype(float), strict=True)), shared)

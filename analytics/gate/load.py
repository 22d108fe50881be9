"""The gate's own read: the order the candidate's log recorded its tasks (the values compared are the Version
diff's, ``analytics.diff``). The only module of ``analytics.gate`` that queries."""

from __future__ import annotations

import duckdb
import numpy as np

from store import query_df


def task_order(con: duckdb.DuckDBPyConnection, candidate: str, shared: list[str]) -> tuple[np.ndarray, str]:
    """Positions of ``shared`` in the order the candidate's log recorded its tasks (its first attempt of each, as
    ingested): the order attempts arrive in over time, never chosen by their outcome."""
    first = query_df(
        con, "SELECT task_id, min(attempt_id) AS at FROM attempts WHERE run_id = ? GROUP BY task_id", [candidate]
    )
    at = dict(zip(first["task_id"].astype(str), first["at"].astype(float), strict=True))
    order = sorted(range(len(shared)), key=lambda i: (at.get(shared[i], np.inf), shared[i]))
    return np.array(order, dtype=int), "log order"

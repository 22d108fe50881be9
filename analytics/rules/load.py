"""rules, loaded: one attempt's stored labels, its steps and its benchmark's tool graph (the only module of the
feature that queries); the rule findings are computed live from them."""

from __future__ import annotations

import duckdb
import pandas as pd

from analytics.rules.compute import findings_frame
from ingest.rules import find_rule_errors, load_graph
from store import query_df, query_rows


def attempt_findings(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """Findings for one attempt: log labels and judge labels as stored, rule findings live from the graph.

    Rule findings are computed on the spot (tool, args, round and error columns only), so the drilldown shows
    the current graph's verdict even before ``python -m analytics rules`` has run.
    """
    stored = query_df(
        con,
        "SELECT code, source, step, detail FROM error_labels WHERE attempt_id = ? "
        "AND source <> 'rule' ORDER BY step NULLS FIRST, code",
        [int(attempt_id)],
    )
    bench = query_rows(
        con, "SELECT r.benchmark FROM attempts a JOIN runs r USING (run_id) WHERE a.attempt_id = ?", [int(attempt_id)]
    )
    if not bench:
        return stored
    steps = query_df(
        con,
        "SELECT step, round, kind, tool, args::VARCHAR AS args, error FROM steps WHERE attempt_id = ? ORDER BY step",
        [int(attempt_id)],
    )
    return findings_frame(stored, find_rule_errors(steps.to_dict("records"), load_graph(con, bench[0][0])))

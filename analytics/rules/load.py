"""Error findings of one attempt as the drilldown shows them: the log's and the judge's labels as stored, and the
rule findings of ``ingest/rules.py`` computed live from the benchmark's current tool graph."""

from __future__ import annotations

import duckdb
import pandas as pd

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
    live = pd.DataFrame(
        [
            {"code": f.code, "source": "rule", "step": f.step, "detail": f.detail}
            for f in find_rule_errors(steps.to_dict("records"), load_graph(con, bench[0][0]))
        ],
        columns=["code", "source", "step", "detail"],
    )
    out = pd.concat([stored, live], ignore_index=True) if not live.empty else stored
    out["step"] = out["step"].astype("Int64")
    return out.reset_index(drop=True)

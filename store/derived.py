"""The writer's half for derived data: what analytics computes (embeddings, metrics, IRT fits, judge verdicts,
rule findings) is stored here, so every INSERT/UPDATE/DELETE of the project lives under ``store/``.

Each function takes a writer connection (``store.writer``) and the computed rows; analytics modules compute and
call these, they hold no write SQL of their own (tests/test_layers.py checks it).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from store import aggregates
from store.migrate import set_meta as _set_meta
from store.query import query_rows, transaction


def insert_embeddings(con: duckdb.DuckDBPyConnection, vectors: pd.DataFrame) -> None:
    """Cache vectors (columns ``text_hash``, ``model``, ``vector``: a list of floats); ones already cached stay."""
    con.register("_rl_vectors", vectors)
    try:
        con.execute(
            "INSERT INTO embeddings SELECT n.text_hash, n.model, n.vector::FLOAT[] FROM _rl_vectors n "
            "ANTI JOIN embeddings e ON e.text_hash = n.text_hash AND e.model = n.model"
        )
    finally:
        con.unregister("_rl_vectors")


def replace_computed_metrics(
    con: duckdb.DuckDBPyConnection,
    metrics: pd.DataFrame,
    *,
    attempt_ids: Sequence[int],
    model: str,
    names: Sequence[str],
) -> int:
    """Replace the computed metrics ``names`` of ``attempt_ids`` for ``model`` (source 'computed')."""
    con.register("gem_ids", pd.DataFrame({"attempt_id": list(attempt_ids)}))
    try:
        con.execute(
            "DELETE FROM attempt_metrics WHERE source = 'computed' AND model = ? AND list_contains(?, name)"
            " AND attempt_id IN (SELECT attempt_id FROM gem_ids)",
            [model, list(names)],
        )
    finally:
        con.unregister("gem_ids")
    if metrics.empty:
        return 0
    df = metrics.assign(source="computed", model=model)[["attempt_id", "name", "value", "source", "model"]]
    con.register("gem_new", df)
    try:
        con.execute("INSERT INTO attempt_metrics SELECT attempt_id, name, value, source, model FROM gem_new")
    finally:
        con.unregister("gem_new")
    return len(df)


def insert_irt_fit(
    con: duckdb.DuckDBPyConnection, fit: Sequence[Any], abilities: pd.DataFrame, items: pd.DataFrame
) -> None:
    """Write one IRT fit (its ``irt_fits`` row, abilities and items, keyed by the fit key) in one transaction."""
    try:
        with transaction(con):
            con.execute("INSERT INTO irt_fits VALUES (?, ?, ?, ?, ?, ?, ?, ?)", list(fit))
            con.register("_irt_abil", abilities)
            con.execute("INSERT INTO irt_abilities SELECT * FROM _irt_abil")
            con.register("_irt_items", items)
            con.execute("INSERT INTO irt_items SELECT * FROM _irt_items")
    finally:
        for name in ("_irt_abil", "_irt_items"):
            con.unregister(name)


def replace_judge_outcomes(con: duckdb.DuckDBPyConnection, verdicts: Sequence[dict[str, Any]]) -> None:
    """Write judge verdicts and their error labels in one transaction, replacing older ones of the same key.

    Each item: ``attempt_id``, ``prompt_version``, ``model``, ``verdict`` (JSON text or None), ``is_failure``,
    ``failure``, ``raw_output``, ``input_tokens``, ``output_tokens``, ``cost_usd``, ``created_at`` and
    ``labels`` (a list of ``(code, detail)``).
    """
    with transaction(con):
        for v in verdicts:
            key = [v["attempt_id"], v["prompt_version"], v["model"]]
            con.execute("DELETE FROM judge_verdicts WHERE attempt_id = ? AND prompt_version = ? AND model = ?", key)
            con.execute(
                "DELETE FROM error_labels WHERE attempt_id = ? AND source = 'judge' AND prompt_version = ?"
                " AND model = ?",
                key,
            )
            con.execute(
                "INSERT INTO judge_verdicts (attempt_id, prompt_version, model, verdict, is_failure, failure,"
                " raw_output, input_tokens, output_tokens, cost_usd, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [
                    *key,
                    v["verdict"],
                    v["is_failure"],
                    v["failure"],
                    v["raw_output"],
                    v["input_tokens"],
                    v["output_tokens"],
                    v["cost_usd"],
                    v["created_at"],
                ],
            )
            if v["labels"]:
                con.executemany(
                    "INSERT INTO error_labels (attempt_id, code, source, detail, model, prompt_version)"
                    " VALUES (?, ?, 'judge', ?, ?, ?)",
                    [[v["attempt_id"], code, detail, v["model"], v["prompt_version"]] for code, detail in v["labels"]],
                )
        aggregates.refresh_attempts(con, [int(v["attempt_id"]) for v in verdicts])


def insert_rule_findings(
    con: duckdb.DuckDBPyConnection, findings: pd.DataFrame, graph_hash: str, *, refresh: bool = True
) -> None:
    """Append findings as error labels with source 'rule' (inside the caller's transaction); ``refresh``: the
    aggregates of their attempts' (run, task) pairs too (the caller refreshes them otherwise)."""
    if findings.empty:
        return
    con.register("_rl_rules", findings)
    try:
        con.execute(
            "INSERT INTO error_labels (attempt_id, code, source, step, detail, graph_hash) "
            "SELECT attempt_id, code, 'rule', step, detail, ? FROM _rl_rules",
            [graph_hash],
        )
    finally:
        con.unregister("_rl_rules")
    if refresh:
        aggregates.refresh_attempts(con, [int(i) for i in findings["attempt_id"].unique()])


def set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    """Set one ``meta`` key (e.g. the tool-graph hash a benchmark's rule findings were computed with)."""
    _set_meta(con, {key: value})


def replace_rule_findings(
    con: duckdb.DuckDBPyConnection,
    benchmark: str,
    findings: pd.DataFrame,
    graph_hash: str,
    *,
    meta_key: str,
    own_transaction: bool = True,
) -> None:
    """Swap a benchmark's rule labels for ``findings`` in one transaction, with an audit row."""
    with transaction(con, own=own_transaction):
        # counted, then deleted: DuckLake has no DELETE ... RETURNING
        of_benchmark = (
            "FROM error_labels WHERE source = 'rule' AND attempt_id IN (SELECT a.attempt_id "
            "FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = ?)"
        )
        n_old = int(query_rows(con, f"SELECT count(*) {of_benchmark}", [benchmark])[0][0])
        con.execute(f"DELETE {of_benchmark}", [benchmark])
        insert_rule_findings(con, findings, graph_hash, refresh=False)
        aggregates.refresh_benchmark(con, benchmark)  # the benchmark's pairs, once
        set_meta(con, meta_key, graph_hash)
        con.execute(
            "INSERT INTO audit_log VALUES (?, 'rules_recomputed', ?, ?)",
            [
                dt.datetime.now(dt.UTC).replace(tzinfo=None),
                benchmark,
                json.dumps({"graph_hash": graph_hash, "removed": n_old, "added": len(findings)}),
            ],
        )


def insert_cluster_labels(con: duckdb.DuckDBPyConnection, rows: Sequence[Sequence[Any]]) -> None:
    """Cache LLM cluster labels: ``(content_key, model, prompt_version, label, input_tokens, output_tokens,
    created_at)`` per row, in one transaction."""
    with transaction(con):
        con.executemany("INSERT INTO cluster_labels VALUES (?, ?, ?, ?, ?, ?, ?)", [list(r) for r in rows])


def insert_review(
    con: duckdb.DuckDBPyConnection,
    *,
    attempt_id: int,
    reviewer: str,
    verdict: str,
    codes: Sequence[str],
    note: str | None,
    created_at: dt.datetime,
    own: bool = True,
) -> int | None:
    """Append one human review (source 'human') in one transaction (``own=False``: in the caller's); its
    ``review_id``, or None when no attempt has ``attempt_id``."""
    with transaction(con, own=own):
        if not query_rows(con, "SELECT 1 FROM attempts WHERE attempt_id = ?", [attempt_id]):
            return None
        review_id = int(query_rows(con, "SELECT coalesce(max(review_id), 0) + 1 FROM reviews")[0][0])
        con.execute(
            "INSERT INTO reviews (review_id, attempt_id, reviewer, verdict, codes, note, source, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'human', ?)",
            [review_id, attempt_id, reviewer, verdict, list(codes), note, created_at],
        )
    return review_id

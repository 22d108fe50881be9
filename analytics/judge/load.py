"""judge, loaded: the versioned prompts from analytics/prompts/, the attempts a judge job covers and their
trajectories, and the verdicts stored (the only module of the feature that queries)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

import store as rdb
from analytics.judge.compute import MAX_RESULT_CHARS, MAX_TRAJECTORY_CHARS, Prompt

PROMPT_DIR = Path(__file__).resolve().parent.parent / "prompts"
PROMPT_FILES = {
    "adbench-stage1": "adbench-stage1.v1.txt",
    "xbench-1to5": "xbench-1to5.v1.txt",
    "gem-0-90": "gem-0-90.v1.txt",
}


def load_prompt(name: str) -> Prompt:
    """Read ``analytics/prompts/<name>.v<N>.txt`` (comment lines, then ``=== system ===`` / ``=== user ===``)."""
    if name not in PROMPT_FILES:
        raise rdb.RunlensError(f"unknown judge prompt {name!r}; choose one of {', '.join(PROMPT_FILES)}")
    filename = PROMPT_FILES[name]
    text = (PROMPT_DIR / filename).read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    _, system, user = re.split(r"^=== (?:system|user) ===$", body, flags=re.M)
    version = f"{name}@{filename.split('.')[1]}"
    return Prompt(name=name, version=version, system=system.strip(), user=user.strip())


SELECT_SQL = """
WITH chosen AS (
    SELECT a.attempt_id, a.run_id, a.task_id, a.sample, a.passed, a.answer,
           t.query, t.reference_answer, t.reference_trajectory
    FROM attempts a
    JOIN runs r USING (run_id)
    LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id
    WHERE r.benchmark = $benchmark
      AND ($run_id IS NULL OR a.run_id = $run_id)
      AND (NOT $failed_only OR a.passed = false)
    ORDER BY a.run_id, a.task_id, a.sample
    LIMIT $limit
)
SELECT c.*, v.attempt_id IS NOT NULL AS is_cached
FROM chosen c
LEFT JOIN (SELECT DISTINCT attempt_id FROM judge_verdicts
           WHERE prompt_version = $prompt_version AND model = $model
             AND (NOT $retry_failures OR NOT is_failure)) v USING (attempt_id)
ORDER BY c.run_id, c.task_id, c.sample
"""


def select_attempts(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    run_id: str | None = None,
    is_failed_only: bool = False,
    limit: int | None = None,
    prompt_version: str,
    model: str,
    retry_failures: bool = False,
) -> pd.DataFrame:
    """The attempts a judge job covers (first ``limit`` in a stable order), flagged ``is_cached`` when done."""
    return rdb.query_df(
        con,
        SELECT_SQL,
        {
            "benchmark": benchmark,
            "run_id": run_id,
            "failed_only": is_failed_only,
            "limit": int(limit) if limit else 2**62,
            "prompt_version": prompt_version,
            "model": model,
            "retry_failures": retry_failures,
        },
    )


def trajectories(con: duckdb.DuckDBPyConnection, attempt_ids: Sequence[int]) -> dict[int, str]:
    """Each attempt's steps as compact text lines (long tool results cut), for the prompt."""
    if not attempt_ids:
        return {}
    steps = rdb.query_df(
        con,
        "SELECT attempt_id, step, round, kind, tool, args::VARCHAR AS args, content, result,"
        " error FROM v_steps WHERE list_contains(?, attempt_id) ORDER BY attempt_id, step",
        [list(map(int, attempt_ids))],
    )
    out: dict[int, str] = {}
    for aid, group in steps.groupby("attempt_id", sort=False):
        lines = []
        for s in group.itertuples(index=False):
            head = f"[round {s.round}] {s.kind}" if pd.notna(s.round) else f"[step {s.step}] {s.kind}"
            if isinstance(s.tool, str):
                head += f" {s.tool}({s.args or ''})"
            body = s.result if isinstance(s.result, str) else (s.content if isinstance(s.content, str) else "")
            if isinstance(s.error, str) and s.error:
                body = f"ERROR {s.error} {body}"
            body = body if len(body) <= MAX_RESULT_CHARS else body[:MAX_RESULT_CHARS] + " ...[cut]"
            lines.append(f"{head} -> {body}" if body else head)
        text = "\n".join(lines)
        out[int(aid)] = text if len(text) <= MAX_TRAJECTORY_CHARS else text[:MAX_TRAJECTORY_CHARS] + "\n...[cut]"
    return out


def judge_status(con: duckdb.DuckDBPyConnection, *, benchmark: str | None = None) -> pd.DataFrame:
    """Per (prompt version, model): verdicts, failures, tokens and cost stored for a benchmark."""
    return rdb.query_df(
        con,
        """
        SELECT v.prompt_version, v.model, count(*) FILTER (WHERE NOT v.is_failure) AS n_verdicts,
               count(*) FILTER (WHERE v.is_failure) AS n_failures, sum(v.input_tokens) AS input_tokens,
               sum(v.output_tokens) AS output_tokens, sum(v.cost_usd) AS cost_usd, max(v.created_at) AS last_at
        FROM judge_verdicts v JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id)
        WHERE $benchmark IS NULL OR r.benchmark = $benchmark
        GROUP BY ALL ORDER BY last_at DESC""",
        {"benchmark": benchmark},
    )

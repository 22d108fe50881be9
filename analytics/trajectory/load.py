"""Trajectory reads (the only module of ``analytics.trajectory`` that queries): attempts with their tool names and the
coverage tables built from them, and the drilldown's readers (runs, attempts, one attempt, its steps by page)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from analytics.leaderboard import comparison_membership
from analytics.sqlfiles import load_sql
from analytics.trajectory.compute import (
    _as_list,
    _is_missing,
    _outcome_details,
    alignment_rows,
    expected_actions,
    failed_neighbours_in,
    levels_of,
    marks_from_counts,
    summarise_slices,
    with_metrics,
)
from store import ALL_RUNS, RunFilter, insert_snapshot_column, query_df, query_rows, with_run_filter


def attempt_trajectories(con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS) -> pd.DataFrame:
    """One row per attempt of the runs ``run_filter`` selects: ids, level, category, outcome, lengths and trajectory
    metrics (``compute.with_metrics``).

    Only tool names are read (never results), one list per attempt, so this scales to large logs.
    """
    return with_metrics(query_df(con, load_sql("trajectory_attempts"), run_filter.params()))


def coverage_table(con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS) -> pd.DataFrame:
    """Coverage, recall, precision, Pass@1 and length per run and slice ("all", "level=L", "category=C")."""
    return summarise_slices(attempt_trajectories(con, run_filter))


def coverage_by_level(con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS) -> pd.DataFrame:
    """AD-Bench Figure 4 / Figure 3 data: per run and level, coverage, Pass@1 and trajectory length.

    ``is_comparable``: the run is on the level's comparison set (the leaderboard's definition); the correlation
    fits use those rows only, so runs on another task pool do not enter one level's correlation.
    """
    out = levels_of(coverage_table(con, run_filter))
    if run_filter.benchmark and not out.empty:
        member = comparison_membership(con, run_filter, kinds=("level",))
        out = out.merge(member[["run_id", "slice", "is_comparable"]], on=["run_id", "slice"], how="left")
        out["is_comparable"] = out["is_comparable"].astype("boolean").fillna(False).astype(bool)
    else:
        out["is_comparable"] = True
    return out.drop(columns=["slice"]).reset_index(drop=True)


PREVIEW_CHARS = 2000


def runs_of(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS, *, include: str | None = None
) -> pd.DataFrame:
    """Runs the filters select (newest first) with their benchmark, agent, version and date; run ``include`` (a
    linked run) is listed whatever the filters say, with ``is_filtered_out`` true."""
    return query_df(
        con,
        with_run_filter(
            "SELECT * FROM (SELECT r.run_id, r.benchmark, r.agent, r.family, r.agent_version, r.eval_date, "
            "NOT ($run_filter) AS is_filtered_out FROM runs r) WHERE NOT is_filtered_out OR run_id = $include "
            "ORDER BY eval_date DESC NULLS LAST, run_id"
        ),
        {**run_filter.params(), "include": include},
    )


def attempts_of(con: duckdb.DuckDBPyConnection, *, run_id: str, task_id: str | None = None) -> pd.DataFrame:
    """Attempts of a run (optionally of one task): ids, sample, outcome, status and lengths."""
    return query_df(
        con,
        "SELECT attempt_id, task_id, sample, score, passed, status, n_steps, n_tool_calls "
        "FROM attempts WHERE run_id = ? AND (? IS NULL OR task_id = ?) ORDER BY task_id, sample",
        [run_id, task_id, task_id],
    )


def task_marks_of(con: duckdb.DuckDBPyConnection, *, run_id: str) -> dict[str, str]:
    """Per task of a run, in the run's order (task id): ✓ every verdict a pass, ✗ none, ◐ some, · no verdict.

    From the per-(run, task) counts kept at ingest (``run_task_stats``), not the run's attempts: the task picker of a
    run of 200,000 attempts reads one row per task (tests/test_scale_equal.py compares it with the marks of every
    attempt)."""
    counts = query_df(
        con,
        "SELECT task_id, n_passed, n_passed + n_failed AS n_verdicts FROM run_task_stats "
        "WHERE run_id = ? ORDER BY task_id",
        [run_id],
    )
    return marks_from_counts(counts["task_id"], counts["n_passed"], counts["n_verdicts"])


def failed_around(
    con: duckdb.DuckDBPyConnection, *, run_id: str, task_id: str, sample: int
) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The failed attempts (task, sample) just before and just after one attempt in the run's order (task id, then
    sample), the first failed one after when the attempt is not in the run: what ``ui.transcript.failed_neighbours``
    finds in every attempt of the run, from the attempts of at most four tasks: this one and the nearest tasks before
    and after it with a failed attempt (``run_task_stats``' counts kept at ingest), and the run's first such task."""
    prev, after, first = query_rows(
        con,
        "SELECT max(task_id) FILTER (WHERE task_id < $task), min(task_id) FILTER (WHERE task_id > $task), "
        "min(task_id) FROM run_task_stats WHERE run_id = $run AND n_failed > 0",
        {"run": run_id, "task": str(task_id)},
    )[0]
    tasks = [str(task_id), *(t if t is not None else str(task_id) for t in (prev, after, first))]
    rows = query_df(
        con,
        "SELECT task_id, sample, passed FROM attempts WHERE run_id = ? AND task_id IN (?, ?, ?, ?) "
        "ORDER BY task_id, sample",
        [run_id, *tasks],
    )
    return failed_neighbours_in(rows, str(task_id), int(sample))


def runs_with_task(con: duckdb.DuckDBPyConnection, *, benchmark: str, task_id: str) -> pd.DataFrame:
    """Runs of a benchmark that attempted a task, with their Pass@1 on it (the mean of the verdicts given).

    Read from the per-(run, task) counts kept at ingest (migration 008's ``run_task_stats``), not from the attempts:
    the same rows as grouping every attempt of the benchmark with this task (tests/test_drilldown_reads.py)."""
    return query_df(
        con,
        "SELECT r.run_id, r.agent, r.agent_version, r.eval_date, s.n_attempts AS n_samples, "
        "CASE WHEN s.n_passed + s.n_failed > 0 THEN s.n_passed / (s.n_passed + s.n_failed) END AS pass_rate "
        "FROM run_task_stats s JOIN runs r USING (run_id) "
        "WHERE r.benchmark = ? AND s.task_id = ? "
        "ORDER BY r.eval_date DESC NULLS LAST, r.run_id",
        [benchmark, task_id],
    )


_DETAIL_SQL = (
    "SELECT a.*, r.benchmark, r.agent, r.agent_version, r.judge AS run_judge, t.query, "
    "t.level, t.category, t.human_minutes, t.reference_answer, t.reference_trajectory, "
    "t.extra::VARCHAR AS task_extra "
    "FROM attempts a JOIN runs r USING (run_id) "
    "LEFT JOIN tasks t ON t.benchmark = r.benchmark AND t.task_id = a.task_id "
)


def _detail_record(row: dict[str, Any]) -> dict[str, Any]:
    rec = {k: (None if _is_missing(v) else v) for k, v in row.items()}
    judge = rec.get("judge")
    rec["judge"] = json.loads(judge) if isinstance(judge, str) else judge
    rec["reference_trajectory"] = _as_list(rec.get("reference_trajectory"))
    rec.update(_outcome_details(rec.get("extra")))
    rec["expected_actions"] = expected_actions(rec.pop("task_extra", None))
    return rec


def attempt_detail(
    con: duckdb.DuckDBPyConnection, *, run_id: str, task_id: str, sample: int | None = None
) -> dict[str, Any] | None:
    """Everything the drilldown header shows for one attempt (the lowest sample when none is given)."""
    rows = query_df(
        con,
        _DETAIL_SQL + "WHERE a.run_id = ? AND a.task_id = ? AND (? IS NULL OR a.sample = ?) ORDER BY a.sample LIMIT 1",
        [run_id, task_id, sample, sample],
    )
    return None if rows.empty else _detail_record(rows.iloc[0].to_dict())


def task_attempts(con: duckdb.DuckDBPyConnection, *, run_id: str, task_id: str) -> dict[int, dict[str, Any]]:
    """``attempt_detail`` of every sample of one task of a run, by sample ascending, in one statement: the drilldown's
    sample buttons and the attempt it shows (``attempts_of`` and ``attempt_detail`` were two statements)."""
    rows = query_df(con, _DETAIL_SQL + "WHERE a.run_id = ? AND a.task_id = ? ORDER BY a.sample", [run_id, task_id])
    records = (_detail_record(rows.iloc[i].to_dict()) for i in range(len(rows)))  # as attempt_detail makes them
    return {int(rec["sample"]): rec for rec in records}


def judge_verdicts_of(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """Cached LLM-judge verdicts of one attempt (newest first): model, prompt version, verdict JSON, failure."""
    return query_df(
        con,
        "SELECT model, prompt_version, created_at, verdict::VARCHAR AS verdict, is_failure, failure "
        "FROM judge_verdicts WHERE attempt_id = ? ORDER BY created_at DESC",
        [int(attempt_id)],
    )


def steps_page(con: duckdb.DuckDBPyConnection, *, attempt_id: int, offset: int = 0, limit: int = 25) -> pd.DataFrame:
    """One page of an attempt's steps; results cut to ``PREVIEW_CHARS`` (``step_result`` has the whole)."""
    # The page of steps first, then only the long texts it points at, in a second query. Joining texts in the
    # same statement (v_steps, or a correlated subquery) lets DuckDB read the whole texts table: 1.2-2.9 CPU s
    # at 1M attempts. An IN list is not pushed into the scan either (the text column is read for every row,
    # 1.1 s); a semi join with a list is, through its join filter (0.1 s for a few texts).
    inserted = insert_snapshot_column(con)  # a lake: the commit that wrote each step
    page = query_df(
        con,
        "SELECT step, round, kind, tool, args, content, left(result, ?) AS result_preview, "
        "coalesce(result_chars, length(result)) AS result_chars, input_tokens, output_tokens, "
        f"latency_s, error, result_hash, {inserted or 'NULL::BIGINT'} AS _inserted FROM steps WHERE attempt_id = ? "
        "ORDER BY step LIMIT ? OFFSET ?",
        [PREVIEW_CHARS, int(attempt_id), int(limit), int(offset)],
    )
    hashes = sorted({h for h in page["result_hash"] if isinstance(h, str)})
    texts: dict[str, str] = {}
    lookup = (
        "SELECT t.text_hash, left(t.text, ?) FROM texts t SEMI JOIN "
        "(SELECT unnest(?::VARCHAR[]) AS h) q ON t.text_hash = q.h"
    )
    if hashes and inserted:
        # A step's long text is written by the commit that wrote the step, unless an earlier one had stored the same
        # text: those commits' files first (every texts file spans every hash, so a lookup by hash alone opened each:
        # 0.12-0.17 CPU s at 10M attempts against 0.04), the whole table only for a hash not found there. A hash
        # names one text, so the texts found are the same either way.
        commits = sorted({int(s) for s in page["_inserted"].dropna()})
        texts = dict(
            query_rows(
                con, lookup + f" WHERE t.{inserted} IN (SELECT unnest(?::BIGINT[]))", [PREVIEW_CHARS, hashes, commits]
            )
        )
    missing = [h for h in hashes if h not in texts]
    if missing:
        texts.update(query_rows(con, lookup, [PREVIEW_CHARS, missing]))
    if hashes:
        long = page["result_hash"].map(texts)
        page["result_preview"] = page["result_preview"].where(page["result_preview"].notna(), long)
    return page.drop(columns=["result_hash", "_inserted"])


def step_result(con: duckdb.DuckDBPyConnection, *, attempt_id: int, step: int) -> str | None:
    """The full result text of one step."""
    rows = query_rows(
        con, "SELECT result, result_hash FROM steps WHERE attempt_id = ? AND step = ?", [int(attempt_id), int(step)]
    )
    if not rows:
        return None
    result, digest = rows[0]
    if result is None and digest is not None:
        texts = query_rows(con, "SELECT text FROM texts WHERE text_hash = ? LIMIT 1", [digest])
        result = texts[0][0] if texts else None
    return result


def tool_calls_of(con: duckdb.DuckDBPyConnection, *, attempt_id: int) -> pd.DataFrame:
    """The attempt's tool calls in order: step, round, tool and arguments (JSON text)."""
    return query_df(
        con,
        "SELECT step, round, tool, args::VARCHAR AS args FROM steps WHERE attempt_id = ? AND kind = 'tool_call' "
        "AND tool IS NOT NULL ORDER BY step",
        [int(attempt_id)],
    )


def alignment_frame(
    con: duckdb.DuckDBPyConnection, *, attempt_id: int, reference: Sequence[str] | None = None
) -> pd.DataFrame:
    """Reference and agent steps side by side: ``op``, ``ref_index``, ``ref_tool``, ``step``, ``tool``.

    ``step`` is the agent's step number (the ``step`` column); ``is_first_divergence`` marks one row.
    """
    return alignment_rows(tool_calls_of(con, attempt_id=attempt_id), reference)

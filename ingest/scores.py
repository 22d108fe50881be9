"""Scores given after the run: ``python -m ingest scores FILE.csv`` and the receiver's ``POST /v1/scores``.

Each row names one stored attempt, by ``trace_id`` (a traced attempt) or by ``run_id`` + ``task_id`` + ``sample``,
and gives ``score``, ``raw_score`` and/or ``passed``; every other numeric column is a metric of the attempt (added,
or replacing the same name). The score is read with the benchmark's scoring like a score in a log (``raw_score``
1-5 on a graded benchmark, 0/1 on a binary one; ``passed`` from the threshold when not given). The file is checked
whole before anything is written: a problem gives ``file:line: field: reason`` and nothing changes. Then one
transaction through the one writer sets the attempts' headline score (``store.attempt_update.set_scores``), which
the dashboard reads at the next snapshot. Applying the same file twice leaves the same scores.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ingest.errors import ProblemCollector
from store import transaction, writer
from store.attempt_update import LateScore, set_scores

SCORE_COLUMNS = ("score", "raw_score", "passed")
KEY_COLUMNS = ("trace_id", "run_id", "task_id", "sample")
TRUE, FALSE = ("1", "true", "yes", "pass", "passed"), ("0", "false", "no", "fail", "failed")
MAX_ROWS = 1_000_000


@dataclass
class ScoreRow:
    """One row as read: where it is, which attempt it names, what it gives."""

    loc: str
    trace_id: str | None
    key: tuple[str, str, int] | None
    score: float | None = None
    raw_score: float | None = None
    passed: bool | None = None
    metrics: dict[str, float] = field(default_factory=dict)


def read_rows(name: str, text: str, problems: ProblemCollector) -> list[ScoreRow]:
    """The rows of a scores CSV (already decoded); problems go to ``problems`` as ``name:line``."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = [f.strip() for f in reader.fieldnames or []]
    reader.fieldnames = fields
    by_trace = "trace_id" in fields
    by_key = {"run_id", "task_id", "sample"} <= set(fields)
    if not (by_trace or by_key) or not set(SCORE_COLUMNS) & set(fields):
        problems.add(
            f"{name}:1",
            "-",
            f"a scores CSV needs trace_id (or run_id, task_id and sample) and score, raw_score or passed; has "
            f"{', '.join(fields) or 'no header'}",
        )
        return []
    out: list[ScoreRow] = []
    for row in reader:
        loc = f"{name}:{reader.line_num}"
        if len(out) >= MAX_ROWS:
            problems.add(loc, "-", f"more than {MAX_ROWS:,} rows: split the file")
            break
        try:
            out.append(_row(loc, row))
        except ValueError as exc:
            column, _, reason = str(exc).partition(": ")
            problems.add(loc, column, reason)
    return out


def _row(loc: str, row: dict[str, Any]) -> ScoreRow:
    values = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str) and isinstance(v, str)}
    trace_id = values.get("trace_id", "").lower() or None
    key = None
    if trace_id is None:
        if not values.get("run_id") or not values.get("task_id"):
            raise ValueError("trace_id: empty, and run_id and task_id are not both given")
        sample = values.get("sample", "")
        if not (sample.isdigit() and sample.isascii() and len(sample) <= 9):
            raise ValueError(f"sample: {sample!r} is not a sample number")
        key = (values["run_id"], values["task_id"], int(sample))
    out = ScoreRow(loc, trace_id, key)
    for column, text in values.items():
        if column in KEY_COLUMNS or not text:
            continue
        if column == "passed":
            if text.lower() not in TRUE + FALSE:
                raise ValueError(f"passed: {text!r} is not true/false")
            out.passed = text.lower() in TRUE
        elif column in ("score", "raw_score"):
            setattr(out, column, _finite(column, text))
        else:
            try:
                out.metrics[column] = _finite(column, text)
            except ValueError:
                continue  # a text column (a label, a note) is not a metric
    if out.score is None and out.raw_score is None and out.passed is None:
        raise ValueError("score: the row gives no score, raw_score or passed")
    return out


def _finite(column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{column}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{column}: {text!r} is not a finite number")
    return value


def _targets(con: duckdb.DuckDBPyConnection, rows: list[ScoreRow]) -> dict[str, list[tuple[int, str, float]]]:
    """``loc`` -> [(attempt_id, scoring, pass threshold)] of the stored attempts each row names."""
    traces = sorted({r.trace_id for r in rows if r.trace_id})
    keys = [r.key for r in rows if r.key]
    by_trace: dict[str, list[tuple[int, str, float]]] = {}
    if traces:
        for trace_id, attempt_id, scoring, threshold in con.execute(
            "SELECT json_extract_string(a.extra, '$.trace_id'), a.attempt_id, b.scoring, b.pass_threshold "
            "FROM attempts a JOIN runs r USING (run_id) JOIN benchmarks b ON b.benchmark = r.benchmark "
            "WHERE json_extract_string(a.extra, '$.trace_id') IN (SELECT unnest(?::VARCHAR[])) ORDER BY a.attempt_id",
            [traces],
        ).fetchall():
            by_trace.setdefault(trace_id, []).append((int(attempt_id), scoring, float(threshold)))
    by_key: dict[tuple[str, str, int], tuple[int, str, float]] = {}
    if keys:
        runs, tasks, samples = (list(column) for column in zip(*keys, strict=True))
        for run_id, task_id, sample, attempt_id, scoring, threshold in con.execute(
            "SELECT a.run_id, a.task_id, a.sample, a.attempt_id, b.scoring, b.pass_threshold "
            "FROM (SELECT unnest(?::VARCHAR[]) AS run_id, unnest(?::VARCHAR[]) AS task_id, "
            "unnest(?::INTEGER[]) AS sample) k "
            "JOIN attempts a USING (run_id, task_id, sample) JOIN runs r ON r.run_id = a.run_id "
            "JOIN benchmarks b ON b.benchmark = r.benchmark",
            [runs, tasks, samples],
        ).fetchall():
            by_key[(run_id, task_id, int(sample))] = (int(attempt_id), scoring, float(threshold))
    out: dict[str, list[tuple[int, str, float]]] = {}
    for row in rows:
        if row.trace_id:
            out[row.loc] = by_trace.get(row.trace_id, [])
        elif row.key in by_key:
            out[row.loc] = [by_key[row.key]]
        else:
            out[row.loc] = []
    return out


def _late_score(row: ScoreRow, attempt_id: int, scoring: str, threshold: float) -> LateScore:
    """The row's score read with the benchmark's scoring (as records.Normaliser reads a log's)."""
    score, raw = row.score, row.raw_score
    if score is not None and not 0.0 <= score <= 1.0:
        raise ValueError(f"score: {score} is outside [0, 1] (give a raw_score for other scales)")
    if score is None and raw is not None:
        if scoring == "graded":
            if not 1.0 <= raw <= 5.0:
                raise ValueError(f"raw_score: {raw} is outside the graded scale [1, 5]")
            score = (raw - 1.0) / 4.0
        elif 0.0 <= raw <= 1.0:
            score = raw
        else:
            raise ValueError(f"raw_score: {raw} cannot be normalised for {scoring} scoring")
    if score is None and row.passed is not None:
        score = 1.0 if row.passed else 0.0
    assert score is not None  # a row gives one of the three
    if scoring == "binary" and score not in (0.0, 1.0):
        raise ValueError(f"score: {score} is not 0 or 1 (binary scoring)")
    passed = row.passed if row.passed is not None else score >= threshold - 1e-12
    return LateScore(attempt_id, score, raw, passed, tuple(sorted(row.metrics.items())))


@dataclass
class Applied:
    """What applying a scores file did."""

    rows: int
    attempts: int


def apply_scores(db: Any, name: str, text: str, *, source: str) -> Applied:
    """Check every row against the store, then set the scores in one transaction.

    Raises:
        IngestError: a row is malformed, names no stored attempt (or a trace with several), or its score does
            not fit the benchmark's scoring; nothing was written.
    """
    problems = ProblemCollector()
    rows = read_rows(name, text, problems)
    problems.raise_if_any()
    with writer(db, short_session=True) as con:
        targets = _targets(con, rows)
        updates: dict[int, LateScore] = {}
        for row in rows:
            found = targets[row.loc]
            what = f"trace {row.trace_id}" if row.trace_id else "run {!r}, task {!r}, sample {}".format(*row.key or ())
            if not found:
                problems.add(row.loc, "trace_id" if row.trace_id else "sample", f"no stored attempt for {what}")
                continue
            if len(found) > 1:
                problems.add(
                    row.loc,
                    "trace_id",
                    f"{what} has {len(found)} attempts (attempt_span): name each by run_id, task_id and sample",
                )
                continue
            attempt_id, scoring, threshold = found[0]
            try:
                updates[attempt_id] = _late_score(row, attempt_id, scoring, threshold)
            except ValueError as exc:
                column, _, reason = str(exc).partition(": ")
                problems.add(row.loc, column, reason)
        problems.raise_if_any()
        with transaction(con):
            n = set_scores(con, list(updates.values()), source=source)
    return Applied(len(rows), n)

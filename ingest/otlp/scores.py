"""Scores of an attempt: from the mapping's score attribute or the trace's evaluations, or from a scores CSV
joined by trace id (``--scores``)."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path
from typing import Any

from ingest.errors import ProblemCollector
from ingest.otlp.mapping import TraceMapping
from ingest.otlp_conventions import (
    Evaluation,
)


def _apply_scores(record: dict[str, Any], evals: list[Evaluation], mapping: TraceMapping, score_attr: Any) -> None:
    """Score from the mapping's score attribute, else the named (or first) evaluation; others become metrics."""
    chosen: Evaluation | None = None
    scored = [e for e in evals if e.score is not None]
    if mapping.evaluation is not None:
        chosen = next((e for e in scored if e.name == mapping.evaluation), None)
    elif scored:
        chosen = scored[0]
    value: Any = score_attr
    if value is None and chosen is not None:
        value = chosen.score
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # a label that is not a number stays text: validation names it
            value = float(value)
    if value is not None:
        record["raw_score" if mapping.scoring == "graded" else "score"] = value
    metrics = {e.name: e.score for e in scored}
    if metrics:
        record["metrics"] = metrics
    if evals:
        record["evaluations"] = [{k: v for k, v in vars(e).items() if v is not None and k != "time_ns"} for e in evals]


def read_scores(spec: str, problems: ProblemCollector) -> dict[str, tuple[str, dict[str, Any]]]:
    """trace id -> (location, fields) from a scores CSV (``trace_id`` and ``score``/``passed``/``raw_score``; any
    other numeric column is a metric)."""
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        problems.add(f"{path}:1", "-", f"cannot read scores file: {exc}")
        return {}
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = reader.fieldnames or []
    if "trace_id" not in fields or not {"score", "passed", "raw_score"} & set(fields):
        problems.add(f"{path}:1", "-", f"a scores CSV needs trace_id and score|passed|raw_score; has {fields}")
        return {}
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for row in reader:
        loc = f"{path}:{reader.line_num}"
        try:
            out[row["trace_id"].strip().lower()] = (loc, _score_row(row))
        except ValueError as exc:
            problems.add(loc, "-", str(exc))
    return out


def _score_row(row: dict[str, str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    for key, raw in row.items():
        value = (raw or "").strip()
        if key == "trace_id" or not value:
            continue
        if key == "passed":
            if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(f"passed: {value!r} is not true/false")
            fields["passed"] = value.lower() in ("1", "true", "yes")
        elif key in ("score", "raw_score"):
            fields[key] = float(value)
        else:
            try:
                metrics[key] = float(value)
            except ValueError:
                continue  # text columns (labels, notes) are not metrics
    if metrics:
        fields["metrics"] = metrics
    return fields

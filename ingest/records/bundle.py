"""The normalised output of a file: a :class:`Bundle` of columns (rows, for attempts and steps) per table, ready
for one bulk write, and the Arrow column types of the per-attempt tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ingest.records.fields import RUN_FIELDS, TASK_FIELDS


def _columns(*names: str) -> dict[str, list[Any]]:
    return {n: [] for n in names}


@dataclass
class Bundle:
    """Columns (rows, for the millions of attempts and steps) for each table, ready for a bulk insert.

    Attempts carry a local index (their position in ``attempts``); steps, labels, metrics and
    ratings point at it through ``attempt_ix`` (or at an existing attempt through ``attempt_id``).
    """

    benchmarks: dict[str, list[Any]] = field(
        default_factory=lambda: _columns(
            "benchmark", "version", "scoring", "pass_threshold", "description", "tool_graph", "extra"
        )
    )
    tasks: dict[str, list[Any]] = field(default_factory=lambda: _columns(*TASK_FIELDS, "extra"))
    runs: dict[str, list[Any]] = field(default_factory=lambda: _columns(*RUN_FIELDS, "extra"))
    attempts: list[tuple[Any, ...]] = field(default_factory=list)  # rows in ATTEMPT_COLUMNS order
    steps: list[tuple[Any, ...]] = field(default_factory=list)  # rows in STEP_COLUMNS order
    texts: dict[str, str] = field(default_factory=dict)
    labels: list[tuple[Any, ...]] = field(default_factory=list)  # rows in LABEL_COLUMNS order
    metrics: list[tuple[Any, ...]] = field(default_factory=list)  # rows in METRIC_COLUMNS order
    ratings: dict[str, list[Any]] = field(
        default_factory=lambda: _columns(
            "attempt_ix", "attempt_id", "rater", "rater_kind", "dimension", "value", "extra"
        )
    )
    scores: list[tuple[Any, ...]] = field(default_factory=list)  # rows in SCORE_COLUMNS order
    # A re-scored log (a format that ``revises_scores``): the new row of each run it revises, and per stored
    # attempt its new headline (rows in SCORE_UPDATE_COLUMNS order); its scores rows carry ``attempt_id``.
    revised_runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    revised_benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)  # binary -> continuous
    score_updates: list[tuple[Any, ...]] = field(default_factory=list)
    arrow: dict[str, pa.Table] | None = None  # the per-attempt tables once frozen (see ``freeze``)

    @property
    def n_attempts(self) -> int:
        return self.arrow["attempts"].num_rows if self.arrow is not None else len(self.attempts)

    @property
    def n_steps(self) -> int:
        return self.arrow["steps"].num_rows if self.arrow is not None else len(self.steps)

    def freeze(self) -> dict[str, pa.Table]:
        """Turn the per-attempt columns into Arrow tables, once, and drop the Python lists.

        Arrow tables are what the writer inserts, and they cross a process boundary as plain buffers (a worker
        process validates, the parent writes). ``attempts`` gains ``attempt_ix``, its position in the file, which
        the writer turns into ``attempt_id`` like the ``attempt_ix`` of steps, labels, metrics and ratings.
        Definitions (benchmarks, tasks, runs) stay Python columns: they are few, and are reconciled before writing.
        """
        if self.arrow is None:
            tables = {
                "ratings": pa.table({col: pa.array(values) for col, values in self.ratings.items()}),
                "labels": _rows_table(LABEL_COLUMNS, self.labels),
                "metrics": _rows_table(METRIC_COLUMNS, self.metrics),
                "scores": _rows_table(SCORE_COLUMNS, self.scores),
                "score_updates": _rows_table(SCORE_UPDATE_COLUMNS, self.score_updates),
            }
            tables["attempts"] = _rows_table(ATTEMPT_COLUMNS, self.attempts)
            tables["attempts"] = tables["attempts"].append_column(
                "attempt_ix", pa.array(range(tables["attempts"].num_rows), pa.int64())
            )
            tables["steps"] = _rows_table(STEP_COLUMNS, self.steps)
            tables["texts"] = pa.table(
                {
                    "text_hash": pa.array(list(self.texts), pa.string()),
                    "text": pa.array(list(self.texts.values()), pa.string()),
                }
            )
            self.arrow = tables
            self.attempts, self.steps, self.texts = [], [], {}
            self.labels, self.metrics, self.ratings, self.scores, self.score_updates = [], [], {}, [], []
        return self.arrow


_JSON = pa.json_(pa.string())  # JSON text: DuckDB stores it in a JSON column as is, without parsing it again
ATTEMPT_COLUMNS = {
    "run_id": pa.string(),
    "task_id": pa.string(),
    "sample": pa.int64(),
    "score": pa.float64(),
    "raw_score": pa.float64(),
    "passed": pa.bool_(),
    "answer": pa.string(),
    "input_tokens": pa.int64(),
    "output_tokens": pa.int64(),
    "cost_usd": pa.float64(),
    "is_cost_computed": pa.bool_(),
    "latency_s": pa.float64(),
    "status": pa.string(),
    "n_steps": pa.int64(),
    "n_tool_calls": pa.int64(),
    "n_rounds": pa.int64(),
    "judge": _JSON,
    "extra": _JSON,
}
LABEL_COLUMNS = {"attempt_ix": pa.int64(), "code": pa.string(), "step": pa.int64(), "detail": pa.string()}
METRIC_COLUMNS = {"attempt_ix": pa.int64(), "name": pa.string(), "value": pa.float64()}
# Every score of an attempt (one per scorer, or per key of a dict score): ``attempt_id`` is set instead of
# ``attempt_ix`` for a new revision of the scores of an attempt already stored (a re-scored log).
SCORE_COLUMNS = {
    "attempt_ix": pa.int64(),
    "attempt_id": pa.int64(),
    "scorer": pa.string(),
    "value": pa.float64(),
    "raw_value": _JSON,
    "answer": pa.string(),
    "explanation": pa.string(),
    "is_headline": pa.bool_(),
}
SCORE_UPDATE_COLUMNS = {
    "attempt_id": pa.int64(),
    "score": pa.float64(),
    "raw_score": pa.float64(),
    "passed": pa.bool_(),
    "answer": pa.string(),
    "extra": _JSON,
}
STEP_COLUMNS = {
    "attempt_ix": pa.int64(),
    "step": pa.int64(),
    "round": pa.int64(),
    "kind": pa.string(),
    "tool": pa.string(),
    "args": _JSON,
    "content": pa.string(),
    "result": pa.string(),
    "result_hash": pa.string(),
    "result_chars": pa.int64(),
    "input_tokens": pa.int64(),
    "output_tokens": pa.int64(),
    "latency_s": pa.float64(),
    "error": pa.string(),
    "extra": _JSON,
}


def _rows_table(columns: dict[str, pa.DataType], rows: list[tuple[Any, ...]]) -> pa.Table:
    """An Arrow table of row tuples with the given column types, converted row by row in C++ (as a struct array:
    no transposing in Python)."""
    storage = pa.struct(
        [
            pa.field(name, kind.storage_type if isinstance(kind, pa.BaseExtensionType) else kind)
            for name, kind in columns.items()
        ]
    )
    converted = pa.array(rows, type=storage)
    chunks = converted.chunks if isinstance(converted, pa.ChunkedArray) else [converted]
    table = pa.Table.from_batches([pa.RecordBatch.from_struct_array(c) for c in chunks], pa.schema(storage))
    for i, kind in enumerate(columns.values()):
        if isinstance(kind, pa.BaseExtensionType):
            table = table.set_column(
                i,
                table.field(i).name,
                pa.chunked_array(
                    [pa.ExtensionArray.from_storage(kind, chunk) for chunk in table.column(i).chunks], kind
                ),
            )
    return table


def _append(cols: dict[str, list[Any]], row: dict[str, Any]) -> None:
    for name, values in cols.items():
        values.append(row.get(name))

"""The normalised output of a file: a :class:`Bundle` of columns (rows, for attempts and steps) per table, ready
for one bulk write, and the Arrow column types of the per-attempt tables."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ingest.records.fields import RUN_FIELDS, TASK_FIELDS
from ingest.tempdirs import SPILL_PREFIX, owned_folder


def _columns(*names: str) -> dict[str, list[Any]]:
    return {n: [] for n in names}


class KeptSpans:
    """A reader's record that keeps a trace's spans (OTLP/JSON) once in ``texts``, under their hash, which the
    trace's attempts name (``extra.otlp_spans``). Not JSON: no file can hold one, only a reader can yield it."""

    __slots__ = ("digest", "text", "trace_id")

    def __init__(self, trace_id: str, digest: str, text: str) -> None:
        self.trace_id, self.digest, self.text = trace_id, digest, text


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
    # A file validated in parts (``spill``): the per-attempt tables of the earlier parts wait in Arrow files, one
    # folder per part under the folder of each place they went to (``spill_folders``), and attempts are numbered
    # from ``ix_base`` on.
    ix_base: int = 0
    n_partial: int = 0  # attempts of a trace without its root span (marked ``trace_partial`` in their extra)
    traces: dict[str, str] = field(default_factory=dict)  # OTLP trace id -> the text hash of its kept spans
    spilled: list[str] = field(default_factory=list)
    spilled_steps: int = 0
    spill_dir: str | None = None  # the folder of the first part spilled (None: none is)
    # the folder made under each parent a part was spilled to ("": the system's temporary folder): the parts of a
    # large file wait in a memory folder while they fit there, then on disk
    spill_folders: dict[str, str] = field(default_factory=dict)
    # the one spilled part's tables once the writer has opened them (memory-mapped), for a file spilled whole by a
    # validation worker: ``parts`` is asked several times a file, and opening its eight Arrow files each time cost
    # CPU (BENCHMARKS.md "Ingest, tenth pass"). A file of several parts opens each part when asked, so that the
    # writer maps one part at a time.
    opened: dict[str, pa.Table] | None = field(default=None, repr=False, compare=False)

    @property
    def n_attempts(self) -> int:
        return self.ix_base + (self.arrow["attempts"].num_rows if self.arrow is not None else len(self.attempts))

    @property
    def n_steps(self) -> int:
        return self.spilled_steps + (self.arrow["steps"].num_rows if self.arrow is not None else len(self.steps))

    def spill(self, parent: str | None = None) -> None:
        """Move the per-attempt rows gathered so far to Arrow files on disk (in a folder made under ``parent`` once,
        the system's temporary folder when None; parts spilled under several parents are kept in a folder under
        each), so that memory holds one part of a file at a time; the writer reads
        them back with ``parts``. Definitions stay in memory. Call ``release`` when the bundle is written or given
        up. When writing fails (``OSError``: a full disk) nothing changes: the rows stay in memory."""
        if self.revised_runs or self.score_updates or (self.arrow is not None and self.arrow["score_updates"].num_rows):
            raise ValueError("a re-scored log is not written in parts")  # its updates read every attempt at once
        tables = self.freeze()
        folder = self.spill_folders.get(parent or "")
        made = folder is None
        if folder is None:
            # in the system's temporary folder, named after this process (removed by the next ingest if it is killed)
            folder = tempfile.mkdtemp(prefix="file-", dir=parent) if parent else owned_folder(SPILL_PREFIX)
        part = os.path.join(folder, f"part-{len(self.spilled):05d}")
        try:
            os.mkdir(part)
            for name, table in tables.items():
                with (
                    pa.OSFile(os.path.join(part, f"{name}.arrow"), "wb") as sink,
                    pa.ipc.new_file(sink, table.schema) as out,
                ):
                    out.write_table(table)
        except BaseException:  # (a full disk): the rows stay in memory, the parts spilled before stay valid
            # (the folder this call made goes too: a later spill may choose another parent)
            shutil.rmtree(folder if made else part, ignore_errors=True)
            raise
        self.spill_folders[parent or ""] = folder
        self.spill_dir = self.spill_dir or folder
        self.spilled.append(part)
        self.ix_base += tables["attempts"].num_rows
        self.spilled_steps += tables["steps"].num_rows
        self.arrow = None

    def drop_rows(self) -> None:
        """Forget the per-attempt rows gathered so far (a file found invalid is still validated to its end, to
        report every problem, but nothing of it will be written); attempt numbers go on."""
        self.ix_base += len(self.attempts)
        self.attempts, self.steps, self.texts = [], [], {}
        self.labels, self.metrics, self.scores = [], [], []
        self.ratings = {name: [] for name in self.ratings}

    def parts(self) -> Iterator[dict[str, pa.Table]]:
        """The per-attempt tables part by part: the spilled ones (memory-mapped from disk), then those in memory."""
        if len(self.spilled) == 1:
            if self.opened is None:
                self.opened = _opened(self.spilled[0])
            yield self.opened
        else:
            for part in self.spilled:
                yield _opened(part)
        yield self.freeze()

    def release(self) -> None:
        """Remove the spilled parts from disk (the bundle is written, or given up)."""
        self.opened = None
        for folder in self.spill_folders.values():
            shutil.rmtree(folder, ignore_errors=True)
        self.spill_folders = {}
        self.spill_dir = None
        self.spilled = []

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
                "attempt_ix", pa.array(range(self.ix_base, self.ix_base + tables["attempts"].num_rows), pa.int64())
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
            self.labels, self.metrics, self.scores, self.score_updates = [], [], [], []
            self.ratings = {name: [] for name in self.ratings}
        return self.arrow


_TABLES = ("ratings", "labels", "metrics", "scores", "score_updates", "attempts", "steps", "texts")


def _opened(part: str) -> dict[str, pa.Table]:
    """A spilled part's tables, memory-mapped from its Arrow files."""
    return {name: pa.ipc.open_file(pa.memory_map(os.path.join(part, f"{name}.arrow"))).read_all() for name in _TABLES}


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

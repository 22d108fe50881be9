"""Validation and normalisation of native-format (v1) records into column batches.

Every reader (native JSONL and the adapters for other formats) turns its input into native v1
record dicts, each with a location (``file:line`` or ``file:$.path``). This module checks them all,
collecting every problem, and normalises them into a :class:`Bundle` of columns ready for one bulk
write. References are resolved against earlier records in the same file or the database
(:class:`Known`); a forward reference is an error, as the format specifies.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from ingest.errors import ProblemCollector
from ingest.fastpath import FastAttempt, FastLine, FastStep
from ingest.jsonline import load_record

RECORD_KINDS = ("benchmark", "task", "run", "attempt", "rating")
SCORING = ("binary", "graded", "continuous")
AGENT_KINDS = ("llm", "agent", "framework", "human")
STATUSES = ("completed", "tool_failure", "timeout", "crashed", "refused")
RATER_KINDS = ("human", "llm")
DEFAULT_THRESHOLD = {"binary": 1.0, "graded": 0.5, "continuous": 0.5}
INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1  # the INTEGER and BIGINT columns the values go to
INLINE_RESULT_CHARS = 1024  # longer tool results are stored once in `texts`, keyed by hash

BENCHMARK_FIELDS = ("benchmark", "version", "scoring", "pass_threshold", "description", "tool_graph")
TASK_FIELDS = (
    "benchmark",
    "task_id",
    "level",
    "category",
    "capabilities",
    "human_minutes",
    "query",
    "reference_answer",
    "reference_trajectory",
)
RUN_FIELDS = (
    "run_id",
    "benchmark",
    "agent",
    "family",
    "agent_version",
    "kind",
    "eval_date",
    "judge",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "status",
)
ATTEMPT_FIELDS = (
    "run_id",
    "task_id",
    "sample",
    "score",
    "raw_score",
    "passed",
    "answer",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "status",
    "errors",
    "judge",
    "steps",
    "metrics",
    "is_scored",
    "scores",
)
STEP_FIELDS = (
    "round",
    "kind",
    "tool",
    "args",
    "result",
    "content",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "error",
)
RATING_FIELDS = ("run_id", "task_id", "sample", "rater", "rater_kind", "dimension", "value")


class _Fallback(Exception):
    """Internal: a line the fast path decoded needs the general path (which then reports any problem)."""


class _Bad(Exception):
    """Internal: one field of one record is invalid (collected, never escapes this module)."""

    def __init__(self, field_name: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field_name
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Field checkers: each returns the normalised value or raises _Bad(field, reason)
# ---------------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _ident(rec: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = rec.get(name)
    if value is None:
        if required:
            raise _Bad(name, "missing required field")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Bad(name, f"expected a string, got {_type_name(value)}")
    text = str(value)
    if not text.strip():
        raise _Bad(name, "must not be empty")
    return text


def _text(rec: dict[str, Any], name: str) -> str | None:
    value = rec.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    raise _Bad(name, f"expected a string, got {_type_name(value)}")


def _number(
    rec: dict[str, Any], name: str, *, lo: float | None = None, hi: float | None = None, integer: bool = False
) -> float | int | None:
    value = rec.get(name)
    if value is None:
        return None
    if type(value) is int and integer and (lo is None or value >= lo) and (hi is None or value <= hi):
        return value  # the common case, without the general checks below
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(name, f"expected a number, got {_type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Bad(name, f"{value} is not a finite number")
    if integer and not float(value).is_integer():
        raise _Bad(name, f"expected an integer, got {value}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise _Bad(name, f"{value} is outside {bounds}")
    return int(value) if integer else float(value)


def _enum(rec: dict[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = rec.get(name)
    if value is None:
        return default
    if value not in allowed:
        raise _Bad(name, f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def _bool(rec: dict[str, Any], name: str) -> bool | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _Bad(name, f"expected true or false, got {_type_name(value)}")
    return value


def _str_list(rec: dict[str, Any], name: str) -> list[str] | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(name, "expected an array of strings")
    return value


def _object(rec: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Bad(name, f"expected an object, got {_type_name(value)}")
    return value


def _date(rec: dict[str, Any], name: str) -> dt.date | None:
    value = rec.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(name, f"expected a date 'YYYY-MM-DD', got {_type_name(value)}")
    try:
        if len(value) == 10:
            return dt.date.fromisoformat(value)
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if stamp.tzinfo is not None:
            stamp = stamp.astimezone(dt.UTC)
        return stamp.date()
    except ValueError:
        raise _Bad(name, f"{value!r} is not a date 'YYYY-MM-DD' or an ISO timestamp") from None


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):  # integers beyond 64 bits, exotic values
        return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _extra(rec: dict[str, Any], known: tuple[str, ...]) -> str | None:
    """The fields of ``rec`` the format does not define, as JSON text (kept, never dropped); None when none."""
    allowed = _KNOWN_SETS.get(known)
    if allowed is None:
        allowed = _KNOWN_SETS[known] = frozenset((*known, "record"))
    if allowed.issuperset(rec):
        return None
    return _json_text({k: v for k, v in rec.items() if k not in allowed})


_KNOWN_SETS: dict[tuple[str, ...], frozenset[str]] = {}


def _tool_graph(rec: dict[str, Any]) -> dict[str, list[str]] | None:
    graph = _object(rec, "tool_graph")
    if graph is None:
        return None
    for tool, prereqs in graph.items():
        if not isinstance(prereqs, list) or not all(isinstance(p, str) for p in prereqs):
            raise _Bad(f"tool_graph.{tool}", "expected an array of prerequisite tool names")
    return graph


# ---------------------------------------------------------------------------------------------
# What is already known (earlier in the file, or in the database)
# ---------------------------------------------------------------------------------------------


DEFINITION_TABLES = {"benchmark": "benchmarks", "task": "tasks", "run": "runs"}


def definition_key(kind: str, row: dict[str, Any]) -> str:
    """The name a definition is known by: the benchmark, ``benchmark/task_id``, or the run id."""
    if kind == "benchmark":
        return str(row["benchmark"])
    if kind == "task":
        return f"{row['benchmark']}/{row['task_id']}"
    return str(row["run_id"])


@dataclass
class Known:
    """Definitions a record may refer to: from the database, then from earlier lines of the file.

    ``benchmarks`` maps name -> (scoring, pass_threshold); ``runs`` maps run_id -> (benchmark,
    price_in, price_out); ``tasks`` is a set of (benchmark, task_id); ``attempts`` maps
    (run_id, task_id, sample) -> attempt_id for attempts already in the database.
    ``definitions`` keeps the normalised row of every definition for conflict checks; ``hashes`` maps the
    content hash of every ingested file to its path. Without an ``attempt_loader`` (in a worker process, which
    has no database) attempts already in the database are not seen: the parent checks them before writing.
    """

    benchmarks: dict[str, tuple[str, float]] = field(default_factory=dict)
    runs: dict[str, tuple[str, float | None, float | None]] = field(default_factory=dict)
    tasks: set[tuple[str, str]] = field(default_factory=set)
    attempts: dict[tuple[str, str, int], int] = field(default_factory=dict)
    definitions: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    attempt_loader: Callable[[str], dict[tuple[str, int], int]] | None = None
    loaded_runs: set[str] = field(default_factory=set)

    def add(self, kind: str, row: dict[str, Any]) -> None:
        """Know the definition ``row`` of ``kind`` (benchmark, task or run)."""
        if kind == "benchmark":
            self.benchmarks[row["benchmark"]] = (row["scoring"], float(row["pass_threshold"]))
        elif kind == "task":
            self.tasks.add((row["benchmark"], row["task_id"]))
        else:
            self.runs[row["run_id"]] = (row["benchmark"], row["price_input_per_mtok"], row["price_output_per_mtok"])
        self.definitions[(kind, definition_key(kind, row))] = row

    def copy(self) -> Known:
        """An independent copy of the definitions (a file's normaliser extends it), with no attempts cached."""
        return Known(
            dict(self.benchmarks),
            dict(self.runs),
            set(self.tasks),
            {},
            dict(self.definitions),
            dict(self.hashes),
            self.attempt_loader,
        )

    def for_worker(self) -> Known:
        """What a validation worker process needs, small to send: names, scoring and prices, no definition rows
        and no database. A file validated against it keeps every definition it makes, even one the database
        already has; the writer drops the identical ones and refuses conflicting ones (``commit_prepared``)."""
        return Known(dict(self.benchmarks), dict(self.runs), set(self.tasks), {}, {}, dict(self.hashes))

    def existing_attempt(self, key: tuple[str, str, int]) -> int | None:
        """The database id of attempt ``key``, loading the run's keys on first use."""
        run_id = key[0]
        if self.attempt_loader is not None and run_id not in self.loaded_runs:
            self.loaded_runs.add(run_id)
            for (task_id, sample), attempt_id in self.attempt_loader(run_id).items():
                self.attempts[(run_id, task_id, sample)] = attempt_id
        return self.attempts.get(key)


# ---------------------------------------------------------------------------------------------
# The normalised output
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Per-record normalisers
# ---------------------------------------------------------------------------------------------


class Normaliser:
    """Validates records one by one, collecting problems and filling a Bundle."""

    def __init__(self, known: Known, problems: ProblemCollector, *, revises_scores: bool = False) -> None:
        """``revises_scores``: the format can re-score a run already stored (an Inspect log after ``inspect score``:
        the same eval, new scores); its run then replaces the stored run's status and extra, and its stored
        attempts get new scores (a revision) instead of being refused as duplicates."""
        self.known = known
        self.problems = problems
        self.bundle = Bundle()
        self._file_attempts: dict[tuple[str, str, int], int] = {}
        self.revises_scores = revises_scores
        self._rescored: set[tuple[str, str, int]] = set()
        self._revision_locs: dict[str, str] = {}  # revised run -> location of its run record
        self._revision_scored: set[str] = set()  # revised runs of which this file scores at least one attempt

    def feed(self, records: Iterable[tuple[str, Any]]) -> Bundle:
        """Validate and normalise every record; problems go to the collector.

        A record is a decoded JSON value, or a :class:`~ingest.fastpath.FastLine` (an attempt line the native
        reader decoded with the fast path); a fast line any check would refuse is re-read and normalised by the
        general path, which reports the problem exactly as for any other line.
        """
        handlers = {
            "benchmark": self._benchmark,
            "task": self._task,
            "run": self._run,
            "attempt": self._attempt,
            "rating": self._rating,
        }
        for loc, rec in records:
            if rec.__class__ is FastLine:
                n_steps = len(self.bundle.steps)
                try:
                    self._add_attempt(_FastFields(rec.attempt))
                    continue
                except (_Bad, _Fallback):
                    del self.bundle.steps[n_steps:]  # the steps of the attempt appended before the check failed
                rec, reason = load_record(rec.raw)
                if reason is not None:
                    self.problems.add(loc, "-", reason)
                    continue
            if not isinstance(rec, dict):
                self.problems.add(loc, "-", f"expected a JSON object, got {_type_name(rec)}")
                continue
            kind = rec.get("record")
            if not isinstance(kind, str) or kind not in handlers:  # a list or object here is unhashable
                what = "missing" if kind is None else f"{kind!r} is not one of {', '.join(RECORD_KINDS)}"
                self.problems.add(loc, "record", what)
                continue
            try:
                handlers[kind](loc, rec)
            except _Bad as bad:
                self.problems.add(loc, bad.field, bad.reason)
        new_runs = {key[0] for key in self._file_attempts}
        for run_id, loc in self._revision_locs.items():
            if run_id not in self._revision_scored and run_id not in new_runs:
                # an unscored log of a stored eval that adds no attempt either (the original met after its
                # `inspect score`): it would only empty the stored scores; revisions follow the order of ingest
                self.problems.add(
                    loc,
                    "run_id",
                    f"run {run_id!r} is stored already and this log of the same eval has no scores to revise it "
                    "with (an unscored original after its re-scored log adds nothing)",
                )
        return self.bundle

    def _define(self, loc: str, key: tuple[str, ...], row: dict[str, Any], cols: dict[str, list[Any]]) -> bool:
        """Record a definition; identical repeats are skipped, conflicting ones are errors."""
        seen = self.known.definitions.get(key)
        if seen is not None:
            if seen != row:
                diff = sorted(k for k in row if row.get(k) != seen.get(k))
                raise _Bad(key[0], f"{key[1]!r} is already defined with different {', '.join(diff)}")
            return False
        self.known.add(key[0], row)
        _append(cols, row)
        return True

    def _benchmark(self, loc: str, rec: dict[str, Any]) -> None:
        name = _ident(rec, "benchmark")
        scoring = _enum(rec, "scoring", SCORING, "binary")
        threshold = _number(rec, "pass_threshold", lo=0.0, hi=1.0)
        row = {
            "benchmark": name,
            "version": _text(rec, "version"),
            "scoring": scoring,
            "pass_threshold": DEFAULT_THRESHOLD[scoring] if threshold is None else threshold,
            "description": _text(rec, "description"),
            "tool_graph": _json_text(_tool_graph(rec)),
            "extra": _extra(rec, BENCHMARK_FIELDS),
        }
        assert name is not None
        widened = self._widened(row)
        if widened is not None:
            if widened:
                self.bundle.revised_benchmarks[name] = row
                self.known.add("benchmark", row)
            return
        self._define(loc, ("benchmark", name), row, self.bundle.benchmarks)

    def _widened(self, row: dict[str, Any]) -> bool | None:
        """For a format that ``revises_scores`` (Inspect), a benchmark stored as ``binary`` that a log scores on
        [0, 1] (partial credit, or a re-scored log whose unscored original looked binary) becomes ``continuous``
        (True: update it; its 0/1 scores stay valid and pass as before); a ``continuous`` one met with only 0/1
        scores stays as it is (False). None: not such a case (the usual definition rules apply)."""
        seen = self.known.definitions.get(("benchmark", str(row["benchmark"])))
        if not self.revises_scores or seen is None or seen == row:
            return None
        if any(row[k] != seen.get(k) for k in row if k not in ("scoring", "pass_threshold")):
            return None
        if seen["scoring"] == "binary" and row["scoring"] == "continuous":
            return True
        if seen["scoring"] == "continuous" and row["scoring"] == "binary":
            return False
        return None

    def _need_benchmark(self, rec: dict[str, Any]) -> str:
        name = _ident(rec, "benchmark")
        assert name is not None
        if name not in self.known.benchmarks:
            raise _Bad("benchmark", f"unknown benchmark {name!r}: define it with a benchmark record first")
        return name

    def _task(self, loc: str, rec: dict[str, Any]) -> None:
        bench = self._need_benchmark(rec)
        task_id = _ident(rec, "task_id")
        assert task_id is not None
        ref_answer = rec.get("reference_answer")
        row = {
            "benchmark": bench,
            "task_id": task_id,
            "level": _text(rec, "level"),
            "category": _text(rec, "category"),
            "capabilities": _str_list(rec, "capabilities"),
            "human_minutes": _number(rec, "human_minutes", lo=0.0),
            "query": _text(rec, "query"),
            "reference_answer": ref_answer
            if isinstance(ref_answer, str) or ref_answer is None
            else _json_text(ref_answer),
            "reference_trajectory": _str_list(rec, "reference_trajectory"),
            "extra": _extra(rec, TASK_FIELDS),
        }
        self._define(loc, ("task", f"{bench}/{task_id}"), row, self.bundle.tasks)

    def _run(self, loc: str, rec: dict[str, Any]) -> None:
        run_id = _ident(rec, "run_id")
        bench = self._need_benchmark(rec)
        row = {
            "run_id": run_id,
            "benchmark": bench,
            "agent": _ident(rec, "agent"),
            "family": _text(rec, "family"),
            "agent_version": _text(rec, "agent_version"),
            "kind": _enum(rec, "kind", AGENT_KINDS, "llm"),
            "eval_date": _date(rec, "eval_date"),
            "judge": _text(rec, "judge"),
            "price_input_per_mtok": _number(rec, "price_input_per_mtok", lo=0.0),
            "price_output_per_mtok": _number(rec, "price_output_per_mtok", lo=0.0),
            "status": _text(rec, "status"),
            "extra": _extra(rec, RUN_FIELDS),
        }
        assert run_id is not None
        if self._is_revision(row):
            self.bundle.revised_runs[str(run_id)] = row
            self.known.add("run", row)
            self._revision_locs[str(run_id)] = loc
            return
        self._define(loc, ("run", run_id), row, self.bundle.runs)

    def _is_revision(self, row: dict[str, Any]) -> bool:
        """True when ``row`` re-scores a stored run: the format allows it, and the stored run is the same eval
        (every field but status and extra equal, the same ``inspect_eval_id``) with another status or extra."""
        seen = self.known.definitions.get(("run", str(row["run_id"])))
        if not self.revises_scores or seen is None or seen == row:
            return False
        if any(row[k] != seen.get(k) for k in row if k not in ("status", "extra")):
            return False
        eval_ids = [json.loads(r.get("extra") or "{}").get("inspect_eval_id") for r in (seen, row)]
        return eval_ids[0] is not None and eval_ids[0] == eval_ids[1]

    def _attempt_key(self, rec: dict[str, Any]) -> tuple[str, str, str, int]:
        run_id = _ident(rec, "run_id")
        task_id = _ident(rec, "task_id")
        assert run_id is not None and task_id is not None
        bench = self._benchmark_of(run_id, task_id)
        sample = _number(rec, "sample", lo=0, hi=INT32_MAX, integer=True)
        return bench, run_id, task_id, int(sample or 0)

    def _benchmark_of(self, run_id: str, task_id: str) -> str:
        """The benchmark of an attempt's run, once its run and task are known to be defined."""
        if run_id not in self.known.runs:
            raise _Bad("run_id", f"unknown run {run_id!r}: define it with a run record first")
        bench = self.known.runs[run_id][0]
        if (bench, task_id) not in self.known.tasks:
            raise _Bad(
                "task_id", f"unknown task {task_id!r} of benchmark {bench!r}: define it with a task record first"
            )
        return bench

    def _check_new(self, key: tuple[str, str, int]) -> None:
        """Refuse attempt ``key`` (run, task, sample) when it is already earlier in the file or in the database."""
        if key in self._file_attempts or self.known.existing_attempt(key) is not None:
            where = "earlier in this file" if key in self._file_attempts else "in the database"
            raise _Bad("sample", f"duplicate attempt (run {key[0]!r}, task {key[1]!r}, sample {key[2]}) {where}")

    def _scored(
        self, bench: str, status: str, score: float | None, raw: float | None, passed: bool | None
    ) -> tuple[float, float | None, bool]:
        """(score on [0, 1], raw score, passed) from the checked values of an attempt of ``bench``."""
        scoring, threshold = self.known.benchmarks[bench]
        if score is None and raw is not None:
            if scoring == "graded":
                if not 1.0 <= raw <= 5.0:
                    raise _Bad("raw_score", f"{raw} is outside the graded scale [1, 5]")
                score = (raw - 1.0) / 4.0
            elif scoring == "binary" and raw in (0.0, 1.0) or 0.0 <= raw <= 1.0:
                score = raw
            else:
                raise _Bad("score", f"missing, and raw_score {raw} cannot be normalised for {scoring} scoring")
        if score is None and passed is not None:
            score = 1.0 if passed else 0.0
        if score is None:
            if status == "completed":
                raise _Bad("score", "missing required field (give score, raw_score or passed)")
            score = 0.0
        if scoring == "binary" and score not in (0.0, 1.0):
            raise _Bad("score", f"{score} is not 0 or 1 (benchmark {bench!r} has binary scoring)")
        return score, raw, (score >= threshold - 1e-12) if passed is None else passed

    def _cost(
        self, run_id: str, cost: float | None, in_tok: int | None, out_tok: int | None
    ) -> tuple[float | None, bool]:
        """(cost, whether it was computed from tokens and the run's prices)."""
        if cost is not None:
            return cost, False
        computed = _computed_cost(in_tok, out_tok, *self.known.runs[run_id][1:])
        return computed, computed is not None

    def _attempt(self, loc: str, rec: dict[str, Any]) -> None:
        self._add_attempt(_RecordFields(rec))

    def _add_attempt(self, fields: _RecordFields | _FastFields) -> None:
        """The one attempt handler: ``fields`` checks and converts each field as it is asked for (a decoded
        record's fields one by one, or a fast-path line's, already typed); the order of the questions is the order
        in which problems are found and reported."""
        run_id, task_id = fields.ids()
        bench = self._benchmark_of(run_id, task_id)
        key = (run_id, task_id, fields.sample())
        stored = self.known.existing_attempt(key) if run_id in self.bundle.revised_runs else None
        if stored is None:
            self._check_new(key)
        elif key in self._rescored:
            raise _Bad(
                "sample", f"duplicate attempt (run {key[0]!r}, task {key[1]!r}, sample {key[2]}) earlier in this file"
            )
        else:
            self._rescored.add(key)
        status = fields.status()
        given = fields.score()
        score, raw, passed = (
            (None, fields.unscored_raw(), None) if given is None else self._scored(bench, status, *given)
        )
        in_tok, out_tok = fields.tokens()
        cost, computed = self._cost(run_id, fields.cost(), in_tok, out_tok)
        computed = computed or (cost is not None and fields.cost_is_computed())
        judge = fields.judge()
        errors = fields.errors()
        metrics = fields.metrics()
        scores = fields.scores()
        if stored is not None:  # a re-scored attempt: its new headline and scores; the trajectory stays as stored
            if score is not None or raw is not None or any(r[1] is not None for r in scores):
                self._revision_scored.add(run_id)
            self.bundle.score_updates.append((stored, score, raw, passed, fields.answer(), fields.extra()))
            self.bundle.scores.extend((None, stored, *row) for row in scores)
            return
        ix = len(self.bundle.attempts)
        steps = fields.steps(ix, self._long_text)
        answer = fields.answer()
        latency = fields.latency()
        counts = self._append_steps(steps)
        self._store_attempt(
            key,
            (score, raw, passed, answer, in_tok, out_tok, cost, computed, latency, status),
            (judge, fields.extra()),
            counts,
            errors,
            metrics,
        )
        if scores:
            self.bundle.scores.extend((ix, None, *row) for row in scores)

    def _store_attempt(
        self,
        key: tuple[str, str, int],
        head: tuple[Any, ...],
        tail: tuple[Any, ...],
        counts: tuple[int, int, int],
        errors: list[tuple[str, int | None, str | None]],
        metrics: list[tuple[str, float]],
    ) -> None:
        """Append attempt ``key`` (columns ``head``, the step ``counts``, then ``tail``), its labels and metrics;
        its steps are appended already, at index ``len(attempts)``."""
        ix = len(self.bundle.attempts)
        self.bundle.attempts.append((*key, *head, *counts, *tail))
        if errors:
            self.bundle.labels.extend((ix, *label) for label in errors)
        if metrics:
            self.bundle.metrics.extend((ix, *metric) for metric in metrics)
        self._file_attempts[key] = ix

    def _append_steps(self, steps: list[tuple[Any, ...]]) -> tuple[int, int, int]:
        """Append an attempt's step rows (from ``_record_steps`` or ``_fast_steps``); return (steps, tool calls,
        rounds)."""
        self.bundle.steps.extend(steps)
        n_tool = 0
        rounds: set[int] = set()
        for row in steps:
            if row[3] == "tool_call":
                n_tool += 1
            rnd = row[2]
            rounds.add(row[1] + 1 if rnd is None else rnd)
        return len(steps), n_tool, len(rounds)

    def _long_text(self, text: str) -> str:
        """Keep a long tool result once in ``texts``; return its key (the SHA-256 of its UTF-8)."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        self.bundle.texts.setdefault(digest, text)
        return digest

    def _rating(self, loc: str, rec: dict[str, Any]) -> None:
        _, run_id, task_id, sample = self._attempt_key(rec)
        key = (run_id, task_id, sample)
        row = {
            "attempt_ix": self._file_attempts.get(key),
            "attempt_id": self.known.existing_attempt(key),
            "rater": _ident(rec, "rater"),
            "rater_kind": _enum(rec, "rater_kind", RATER_KINDS, "llm"),
            "dimension": _ident(rec, "dimension"),
            "value": _number(rec, "value"),
            "extra": _extra(rec, RATING_FIELDS),
        }
        if row["value"] is None:
            raise _Bad("value", "missing required field")
        if row["attempt_ix"] is None and row["attempt_id"] is None:
            raise _Bad("sample", f"no attempt (run {run_id!r}, task {task_id!r}, sample {sample}) to rate")
        _append(self.bundle.ratings, row)


class _RecordFields:
    """An attempt record decoded as JSON, each field checked (``_Bad`` names the field) as the handler asks."""

    __slots__ = ("rec",)

    def __init__(self, rec: dict[str, Any]) -> None:
        self.rec = rec

    def ids(self) -> tuple[str, str]:
        run_id, task_id = _ident(self.rec, "run_id"), _ident(self.rec, "task_id")
        assert run_id is not None and task_id is not None
        return run_id, task_id

    def sample(self) -> int:
        return int(_number(self.rec, "sample", lo=0, hi=INT32_MAX, integer=True) or 0)

    def status(self) -> str:
        return _enum(self.rec, "status", STATUSES, "completed")  # type: ignore[return-value]

    def score(self) -> tuple[float | None, float | None, bool | None] | None:
        """(score, raw score, passed) as given; None when not scored yet (an Inspect sample before ``inspect
        score``: empty, not 0)."""
        rec = self.rec
        if rec.get("is_scored") is False:
            return None
        raw = _number(rec, "raw_score")
        passed = _bool(rec, "passed")
        value = rec.get("score")
        score = (1.0 if value else 0.0) if isinstance(value, bool) else _number(rec, "score", lo=0.0, hi=1.0)
        return score, raw, passed

    def unscored_raw(self) -> float | None:
        """The raw score of an attempt with no [0, 1] score (``is_scored: false``): a value on its own scale (an
        Inspect 0-10 rating), kept; None for an attempt not scored at all."""
        return _number(self.rec, "raw_score")

    def scores(self) -> list[tuple[Any, ...]]:
        return _scores(self.rec.get("scores"))

    def tokens(self) -> tuple[int | None, int | None]:
        in_tok = _number(self.rec, "input_tokens", lo=0, hi=INT64_MAX, integer=True)
        out_tok = _number(self.rec, "output_tokens", lo=0, hi=INT64_MAX, integer=True)
        return in_tok, out_tok  # type: ignore[return-value]

    def cost(self) -> float | None:
        return _number(self.rec, "cost_usd", lo=0.0)

    def cost_is_computed(self) -> bool:
        """A cost the reader computed itself says where it came from (``cost_source``, kept in extra)."""
        return self.rec.get("cost_source") is not None

    def judge(self) -> str | None:
        return _json_text(_object(self.rec, "judge"))

    def errors(self) -> list[tuple[str, int | None, str | None]]:
        return _labels(self.rec.get("errors"))

    def metrics(self) -> list[tuple[str, float]]:
        return _metrics(self.rec.get("metrics"))

    def steps(self, ix: int, keep: Callable[[str], str]) -> list[tuple[Any, ...]]:
        steps = self.rec.get("steps")
        if steps is not None and not isinstance(steps, list):
            raise _Bad("steps", f"expected an array of step objects, got {_type_name(steps)}")
        return _record_steps(steps or (), ix, keep)

    def answer(self) -> str | None:
        answer = self.rec.get("answer")
        return answer if isinstance(answer, str) or answer is None else _json_text(answer)

    def latency(self) -> float | None:
        return _number(self.rec, "latency_s", lo=0.0)

    def extra(self) -> str | None:
        return _extra(self.rec, ATTEMPT_FIELDS)


def _record_steps(steps: list[Any] | tuple[()], ix: int, keep: Callable[[str], str]) -> list[tuple[Any, ...]]:
    """The step rows of attempt ``ix`` from a decoded record, each step checked; ``_Bad`` names the step
    (``steps[2].kind``). ``keep`` stores a long tool result apart and returns its key."""
    rows = []
    for pos, raw in enumerate(steps):
        if not isinstance(raw, dict):
            raise _Bad(f"steps[{pos}]", f"expected an object, got {_type_name(raw)}")
        try:
            rnd, kind, tool, args, content, result, in_tok, out_tok, latency, error, extra = _step(raw)
        except _Bad as bad:
            raise _Bad(f"steps[{pos}].{bad.field}", bad.reason) from None
        chars = digest = None
        if result is not None:
            chars = len(result)
            if chars > INLINE_RESULT_CHARS:
                digest, result = keep(result), None
        rows.append(
            (ix, pos, rnd, kind, tool, args, content, result, digest, chars, in_tok, out_tok, latency, error, extra)
        )
    return rows


class _FastFields:
    """An attempt line the fast path decoded (ingest/fastpath.py: every field has its documented type already).

    What the record path would refuse raises ``_Fallback`` here: the caller then reads the line again by the record
    path, which finds and reports the same problem exactly as for any other line.
    """

    __slots__ = ("att",)

    def __init__(self, att: FastAttempt) -> None:
        self.att = att

    def ids(self) -> tuple[str, str]:
        run_id, task_id = self.att.run_id, self.att.task_id
        if not run_id.strip() or not task_id.strip():
            raise _Fallback
        return run_id, task_id

    def sample(self) -> int:
        return self.att.sample or 0

    def status(self) -> str:
        status = self.att.status
        if status is None:
            return "completed"
        if status not in STATUSES:
            raise _Fallback
        return status

    def score(self) -> tuple[float | None, float | None, bool | None]:
        score = self.att.score
        if score.__class__ is bool:
            score = 1.0 if score else 0.0
        return score, self.att.raw_score, self.att.passed

    def unscored_raw(self) -> None:
        return None  # the fast path has no ``is_scored``

    def scores(self) -> list[tuple[Any, ...]]:
        return []  # nor ``scores``: lines with them take the record path

    def tokens(self) -> tuple[int | None, int | None]:
        return self.att.input_tokens, self.att.output_tokens

    def cost(self) -> float | None:
        return self.att.cost_usd

    def cost_is_computed(self) -> bool:
        return False  # a line with cost_source has a field the fast path does not know: it takes the record path

    def judge(self) -> str | None:
        return None if self.att.judge is None else _fast_json(self.att.judge)

    def errors(self) -> list[tuple[str, int | None, str | None]]:
        out: list[tuple[str, int | None, str | None]] = []
        for code in self.att.errors or ():
            code = code.strip()
            if not code:
                raise _Fallback
            out.append((code.upper(), None, None))
        return out

    def metrics(self) -> list[tuple[str, float]]:
        metrics = self.att.metrics
        return [(name, value) for name, value in metrics.items() if value is not None] if metrics else []

    def steps(self, ix: int, keep: Callable[[str], str]) -> list[tuple[Any, ...]]:
        return _fast_steps(self.att.steps or (), ix, keep)

    def answer(self) -> str | None:
        answer = self.att.answer
        return answer if answer is None or answer.__class__ is str else _fast_json(answer)

    def latency(self) -> float | None:
        return self.att.latency_s

    def extra(self) -> None:
        return None  # the fast path takes only lines without unknown fields


def _fast_steps(steps: list[FastStep] | tuple[()], ix: int, keep: Callable[[str], str]) -> list[tuple[Any, ...]]:
    """``_record_steps`` for steps the fast path decoded: the hot loop of ingest. ``_Fallback`` where
    ``_record_steps`` would find a problem (the steps appended so far are then dropped by ``feed``)."""
    rows = []
    for pos, step in enumerate(steps):
        tool, kind, args, content, result, error = (
            step.tool,
            step.kind,
            step.args,
            step.content,
            step.result,
            step.error,
        )
        if kind is None:
            kind = "tool_call" if tool else "message"
        elif not kind:
            raise _Fallback
        if args is not None:
            args = _fast_json(args)
        if content is not None and content.__class__ is not str:
            content = _fast_json(content)
        if error is not None and error.__class__ is not str:
            error = _fast_json(error)
        chars = digest = None
        if result is not None:
            if result.__class__ is not str:
                result = _fast_json(result)
            chars = len(result)
            if chars > INLINE_RESULT_CHARS:
                digest, result = keep(result), None
        rows.append((
            ix, pos, step.round, kind, tool, args, content, result, digest, chars,
            step.input_tokens, step.output_tokens, step.latency_s, error, None,
        ))  # fmt: skip
    return rows


_STEP_KNOWN = frozenset(STEP_FIELDS)


def _fast_json(value: Any) -> str:
    """``_json_text`` of a value the fast path decoded; _Fallback for integers beyond 64 bits, which the general
    path reads differently (orjson makes them floats)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        raise _Fallback from None


def _step(raw: dict[str, Any]) -> tuple[Any, ...]:
    """One step's checked fields: round, kind, tool, args, content, result, tokens in and out, latency, error,
    extra."""
    tool = raw.get("tool")
    if tool is not None and not isinstance(tool, str):
        tool = _text(raw, "tool")
    kind = raw.get("kind")
    if kind is None:
        kind = "tool_call" if tool else "message"
    elif not isinstance(kind, str):
        raise _Bad("kind", f"expected a string, got {_type_name(kind)}")
    elif not kind:
        raise _Bad("kind", "must not be empty")
    result = raw.get("result")
    if result is not None and not isinstance(result, str):
        result = _json_text(result)
    content = raw.get("content")
    if content is not None and not isinstance(content, str):
        content = _json_text(content)
    error = raw.get("error")
    if error is not None and not isinstance(error, str):
        error = _json_text(error)
    args = raw.get("args")
    extra = None
    if not _STEP_KNOWN.issuperset(raw):
        extra = _extra(raw, STEP_FIELDS)
    rnd = raw.get("round")
    if rnd is not None and (type(rnd) is not int or not 0 <= rnd <= INT32_MAX):
        rnd = _number(raw, "round", lo=0, hi=INT32_MAX, integer=True)
    latency = raw.get("latency_s")
    if latency is not None and (type(latency) is not float or not 0.0 <= latency < math.inf):
        latency = _number(raw, "latency_s", lo=0.0)
    in_tok = raw.get("input_tokens")
    if in_tok is not None and (type(in_tok) is not int or not 0 <= in_tok <= INT64_MAX):
        in_tok = _number(raw, "input_tokens", lo=0, hi=INT64_MAX, integer=True)
    out_tok = raw.get("output_tokens")
    if out_tok is not None and (type(out_tok) is not int or not 0 <= out_tok <= INT64_MAX):
        out_tok = _number(raw, "output_tokens", lo=0, hi=INT64_MAX, integer=True)
    return (
        rnd,
        kind,
        tool,
        None if args is None else _json_text(args),
        content,
        result,
        in_tok,
        out_tok,
        latency,
        error,
        extra,
    )


def _computed_cost(
    in_tok: float | int | None, out_tok: float | int | None, price_in: float | None, price_out: float | None
) -> float | None:
    """Cost from tokens and per-million-token prices, when every needed price is known."""
    if in_tok is None and out_tok is None:
        return None
    if (in_tok is not None and price_in is None) or (out_tok is not None and price_out is None):
        return None
    return ((in_tok or 0) * (price_in or 0.0) + (out_tok or 0) * (price_out or 0.0)) / 1e6


def _labels(value: Any) -> list[tuple[str, int | None, str | None]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad("errors", f"expected an array of error codes, got {_type_name(value)}")
    out: list[tuple[str, int | None, str | None]] = []
    for pos, item in enumerate(value):
        if isinstance(item, str) and item.strip():
            out.append((item.strip().upper(), None, None))
        elif isinstance(item, dict) and isinstance(item.get("code"), str) and item["code"].strip():
            try:
                step = _number(item, "step", lo=0, hi=INT32_MAX, integer=True)
            except _Bad as bad:
                raise _Bad(f"errors[{pos}].{bad.field}", bad.reason) from None
            detail = item.get("detail")
            out.append(
                (
                    item["code"].strip().upper(),
                    None if step is None else int(step),
                    detail if isinstance(detail, str) or detail is None else _json_text(detail),
                )
            )
        else:
            raise _Bad(f"errors[{pos}]", "expected an error code string or an object with a 'code'")
    return out


def _metrics(value: Any) -> list[tuple[str, float]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise _Bad("metrics", f"expected an object of name: number, got {_type_name(value)}")
    out = []
    for name, metric in value.items():
        if metric is None:
            continue
        if isinstance(metric, bool) or not isinstance(metric, (int, float)) or not math.isfinite(metric):
            raise _Bad(f"metrics.{name}", f"expected a finite number, got {_type_name(metric)}")
        out.append((str(name), float(metric)))
    return out


def _scores(value: Any) -> list[tuple[Any, ...]]:
    """The ``scores`` of an attempt: ``[{scorer, value, raw_value, answer, explanation, is_headline}, ...]`` as rows
    (scorer, value, raw value as JSON text, answer, explanation, is_headline); one per scorer name, at most one
    headline. ``value`` is a finite number on the scorer's own scale, or null (no score)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad("scores", f"expected an array of score objects, got {_type_name(value)}")
    rows: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for pos, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Bad(f"scores[{pos}]", f"expected an object, got {_type_name(item)}")
        try:
            name = _ident(item, "scorer")
            number = _number(item, "value")
            answer, explanation = _text(item, "answer"), _text(item, "explanation")
            is_headline = bool(_bool(item, "is_headline"))
        except _Bad as bad:
            raise _Bad(f"scores[{pos}].{bad.field}", bad.reason) from None
        assert name is not None
        if name in seen:
            raise _Bad(f"scores[{pos}].scorer", f"{name!r} is given twice")
        seen.add(name)
        raw = item.get("raw_value", item.get("value"))
        rows.append((name, number, _json_text(raw), answer, explanation, is_headline))
    if sum(1 for row in rows if row[5]) > 1:
        raise _Bad("scores", "more than one score is_headline")
    return rows

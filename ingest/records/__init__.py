"""Validation and normalisation of native-format (v1) records into column batches.

Every reader (native JSONL and the adapters for other formats) turns its input into native v1
record dicts, each with a location (``file:line`` or ``file:$.path``). This package checks them all,
collecting every problem, and normalises them into a :class:`Bundle` of columns ready for one bulk
write. References are resolved against earlier records in the same file or the database
(:class:`Known`); a forward reference is an error, as the format specifies.

By record kind: ``definitions`` (benchmark, task, run), ``attempt`` (with ``steps``), ``rating``; what they share:
``fields`` (the fields of each kind, the checkers of one field), ``known``, ``bundle`` (the output), ``base`` (a
file's state); ``normaliser`` reads the records, each by its kind's handler.
"""

from ingest.records.bundle import (
    ATTEMPT_COLUMNS,
    LABEL_COLUMNS,
    METRIC_COLUMNS,
    SCORE_COLUMNS,
    SCORE_UPDATE_COLUMNS,
    STEP_COLUMNS,
    Bundle,
)
from ingest.records.fields import (
    AGENT_KINDS,
    ATTEMPT_FIELDS,
    BENCHMARK_FIELDS,
    DEFAULT_THRESHOLD,
    INLINE_RESULT_CHARS,
    INT32_MAX,
    INT64_MAX,
    RATER_KINDS,
    RATING_FIELDS,
    RECORD_KINDS,
    RUN_FIELDS,
    SCORING,
    STATUSES,
    STEP_FIELDS,
    TASK_FIELDS,
)
from ingest.records.known import DEFINITION_TABLES, Known, definition_key
from ingest.records.normaliser import Normaliser

__all__ = [
    "AGENT_KINDS",
    "ATTEMPT_COLUMNS",
    "ATTEMPT_FIELDS",
    "BENCHMARK_FIELDS",
    "DEFAULT_THRESHOLD",
    "DEFINITION_TABLES",
    "INLINE_RESULT_CHARS",
    "INT32_MAX",
    "INT64_MAX",
    "LABEL_COLUMNS",
    "METRIC_COLUMNS",
    "RATER_KINDS",
    "RATING_FIELDS",
    "RECORD_KINDS",
    "RUN_FIELDS",
    "SCORE_COLUMNS",
    "SCORE_UPDATE_COLUMNS",
    "SCORING",
    "STATUSES",
    "STEP_COLUMNS",
    "STEP_FIELDS",
    "TASK_FIELDS",
    "Bundle",
    "Known",
    "Normaliser",
    "definition_key",
]

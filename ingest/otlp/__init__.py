"""OpenTelemetry traces (OTLP/JSON lines or OTLP protobuf) -> native v1 records.

A trace (or each span a mapping selects, ``attempt_span``) is one attempt; its LLM, tool and retriever spans,
in tree order (children by start time), are the steps. Run, task, sample and score come from attributes named by
a mapping (``ingest/mappings/otlp/default.yaml`` unless ``--mapping`` says otherwise), from evaluation results in
the trace, or from a scores CSV joined by trace id (``--scores``). Locations are ``file:line`` (JSON) or
``file:N`` with N the protobuf message. Spans are decoded by ``ingest.otlp_decode`` and read with the
conventions in ``ingest.otlp_conventions``; the format is described in docs/formats.md.

By role: ``mapping`` (which attributes mean what), ``traces`` (spans grouped and checked, the attempts of a trace),
then spans by record kind: ``attempts``, ``steps``, ``scores`` (evaluations and the scores CSV); ``reader`` (detection,
fingerprint, ``parse_otlp``).
"""

from ingest.otlp.attempts import Attempt, build_attempt
from ingest.otlp.mapping import (
    ATTRIBUTE_FIELDS,
    INLINE_KEYS,
    MAPPING_KEYS,
    MAPPINGS_DIR,
    MISSING_SCORE,
    SCORINGS,
    TraceMapping,
    load_trace_mapping,
    shipped_trace_mappings,
)
from ingest.otlp.reader import Records, detect_otlp, fingerprint_otlp, parse_otlp
from ingest.otlp.scores import read_scores
from ingest.otlp.steps import PROVIDER_KEYS
from ingest.otlp.traces import MAX_SPANS_PER_TRACE, Trace, attempt_roots, group_traces

__all__ = [
    "ATTRIBUTE_FIELDS",
    "INLINE_KEYS",
    "MAPPINGS_DIR",
    "MAPPING_KEYS",
    "MAX_SPANS_PER_TRACE",
    "MISSING_SCORE",
    "PROVIDER_KEYS",
    "SCORINGS",
    "Attempt",
    "Records",
    "Trace",
    "TraceMapping",
    "attempt_roots",
    "build_attempt",
    "detect_otlp",
    "fingerprint_otlp",
    "group_traces",
    "load_trace_mapping",
    "parse_otlp",
    "read_scores",
    "shipped_trace_mappings",
]

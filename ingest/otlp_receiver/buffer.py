"""The trace buffer: spans per trace until the trace is complete (its root arrived, or it is stored already, and
nothing came for ``settle_s``), bounded in traces and bytes; the limits; a request's spans prepared as compact
JSON; the reasons spans are dropped, counted."""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingest.otlp import MAX_SPANS_PER_TRACE
from ingest.otlp.lines import Part, Prepared, as_line, prepare

log = logging.getLogger("runlens.otlp")


@dataclass(frozen=True)
class Limits:
    """How long spans wait and how much may wait (see the module docstring)."""

    settle_s: float = 2.0
    trace_timeout_s: float = 60.0
    flush_interval_s: float = 2.0
    max_open_traces: int = 10_000
    max_buffered_bytes: int = 64 * 1024 * 1024
    max_body_bytes: int = 32 * 1024 * 1024
    max_requests: int = 8  # trace requests read or decoded at once (more get HTTP 503)
    decode_workers: int = 2  # threads decoding and buffering requests
    max_batch_traces: int = 500  # traces written per transaction (more complete traces: more transactions)
    root_wait_s: float = 1800.0  # how long spans of a trace wait for its root span before being stored as partial
    max_waiting_bytes: int = 16 * 1024 * 1024  # rootless traces past the timeout: beyond, oldest stored as partial


@dataclass
class _Open:
    """The spans received so far of one trace, as ``(resource, scope, span)`` OTLP/JSON objects."""

    parts: list[Part] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    n_bytes: int = 0
    has_root: bool = False
    stored: bool = False  # the trace was written already (these spans came late): merged after the settle time
    last_seen: float = 0.0


class TraceBuffer:
    """Spans per trace until the trace is complete; thread-safe, bounded in traces and bytes."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._open: dict[str, _Open] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._dropped: collections.OrderedDict[str, float] = collections.OrderedDict()  # trace id -> when
        self._stored: collections.OrderedDict[str, None] = collections.OrderedDict()  # written lately (bounded)
        self.dropped_spans = 0

    def mark_stored(self, trace_ids: Iterable[str]) -> None:
        """Remember traces just written: their late spans are merged after the settle time, not kept waiting for
        a root span that is stored already."""
        with self._lock:
            for trace_id in trace_ids:
                self._stored[trace_id] = None
                self._stored.move_to_end(trace_id)
            while len(self._stored) > self.limits.max_open_traces:
                self._stored.popitem(last=False)

    @property
    def n_open(self) -> int:
        """Traces waiting."""
        return len(self._open)

    def add(self, request: dict[str, Any] | list[Prepared]) -> tuple[int, list[str]]:
        """Buffer the spans of a (validated) OTLP/JSON request, or of its ``prepare``d form; return (spans
        rejected, reasons).

        Linear in the request's spans: reasons are counted in a dict by kind (a few trace ids each as examples),
        and one summary line is logged per request, however many traces it drops."""
        spans = prepare(request) if isinstance(request, dict) else request
        rejected = 0
        counts: dict[str, list[Any]] = {}  # reason -> [spans, traces (set, bounded), example trace ids]
        now = self.clock()
        with self._lock:
            for trace_id, span_id, is_root, part in spans:
                held = self._open.get(trace_id)
                if held is not None and span_id in held.span_ids:
                    # an exporter's retry of a request that did arrive: the span is buffered already
                    held.last_seen = now
                    continue
                size = len(part[2])
                reason = self._admit(trace_id, size)
                if reason is not None:
                    rejected += 1
                    _count(counts, reason, trace_id)
                    continue
                entry = self._open.get(trace_id)
                if entry is None:
                    entry = self._open[trace_id] = _Open(stored=trace_id in self._stored)
                entry.parts.append(part)
                entry.span_ids.add(span_id)
                entry.n_bytes += size
                entry.has_root = entry.has_root or is_root
                entry.last_seen = now
                self._bytes += size
        reasons = _summaries(counts)
        if rejected:
            self.dropped_spans += rejected
            log.warning("request: dropped %d span(s): %s", rejected, "; ".join(reasons))
        return rejected, reasons

    def _admit(self, trace_id: str, size: int) -> str | None:
        """None when a span of ``size`` bytes of ``trace_id`` fits, else why not (without the trace id: reasons
        are counted by kind). A trace that does not fit is dropped whole (its buffered spans too, and its later
        spans for a while): only complete traces are written."""
        if trace_id in self._dropped:
            return "their trace was dropped earlier"
        entry = self._open.get(trace_id)
        reason = None
        if entry is None and len(self._open) >= self.limits.max_open_traces:
            reason = f"{self.limits.max_open_traces:,} traces are open (--max-open-traces)"
        elif self._bytes + size > self.limits.max_buffered_bytes:
            reason = f"{self.limits.max_buffered_bytes:,} bytes of spans are buffered (--max-buffered-mb)"
        elif entry is not None and len(entry.parts) >= MAX_SPANS_PER_TRACE:
            reason = f"more than {MAX_SPANS_PER_TRACE:,} spans in a trace (RUNLENS_OTLP_MAX_SPANS)"
        if reason is None:
            return None
        self._drop(trace_id)
        return f"trace dropped: {reason}"

    def _drop(self, trace_id: str) -> None:
        entry = self._open.pop(trace_id, None)
        if entry is not None:
            self._bytes -= entry.n_bytes
            self.dropped_spans += len(entry.parts)
        self._dropped[trace_id] = self.clock()
        while len(self._dropped) > self.limits.max_open_traces:  # remembered ids are bounded too
            self._dropped.popitem(last=False)

    def put_back(self, traces: list[tuple[str, bytes, bool]]) -> None:
        """Buffer again traces that could not be written (within the limits, like new spans)."""
        for _, line, _ in traces:
            self.add(orjson.loads(line))

    def take_complete(self, *, everything: bool = False, limit: int | None = None) -> list[tuple[str, bytes, bool]]:
        """Remove and return ``(trace id, OTLP/JSON line, has root)`` of complete traces, at most ``limit`` (all
        buffered traces when ``everything``, at shutdown).

        Complete: the root span arrived (or the trace is stored already) and nothing came for ``settle_s``. A trace
        whose root has not arrived waits: past ``trace_timeout_s`` of silence it is *waiting*, and it is taken (to
        be stored marked partial, completed when the rest arrives) only after ``root_wait_s``, or, oldest first,
        when the waiting traces hold more than ``max_waiting_bytes``."""
        now = self.clock()
        out: list[tuple[str, bytes, bool]] = []
        limits = self.limits
        with self._lock:
            while self._dropped and now - next(iter(self._dropped.values())) >= limits.trace_timeout_s:
                self._dropped.popitem(last=False)
            waiting: list[tuple[float, str]] = []
            waiting_bytes = 0
            chosen: list[str] = []
            for trace_id, entry in self._open.items():
                idle = now - entry.last_seen
                if everything or ((entry.has_root or entry.stored) and idle >= limits.settle_s):
                    chosen.append(trace_id)
                elif not (entry.has_root or entry.stored) and idle >= limits.trace_timeout_s:
                    if idle >= limits.root_wait_s:
                        chosen.append(trace_id)
                    else:
                        waiting.append((entry.last_seen, trace_id))
                        waiting_bytes += entry.n_bytes
            if waiting_bytes > limits.max_waiting_bytes:
                for _, trace_id in sorted(waiting):  # the oldest first, until the rest fits
                    chosen.append(trace_id)
                    waiting_bytes -= self._open[trace_id].n_bytes
                    if waiting_bytes <= limits.max_waiting_bytes:
                        break
            for trace_id in chosen[:limit]:
                entry = self._open.pop(trace_id)
                self._bytes -= entry.n_bytes
                out.append((trace_id, as_line(entry.parts), entry.has_root))
        return out

    @property
    def n_waiting_bytes(self) -> int:
        """Bytes buffered in traces without a root span (read without the lock: a figure for the log)."""
        return sum(e.n_bytes for e in list(self._open.values()) if not (e.has_root or e.stored))


EXAMPLES = 3  # trace ids named per reason in a log line or a partialSuccess message


def _count(counts: dict[str, list[Any]], reason: str, trace_id: str) -> None:
    """Count one rejected span of ``trace_id`` under ``reason`` (constant time)."""
    entry = counts.setdefault(reason, [0, set(), []])
    entry[0] += 1
    if trace_id not in entry[1]:
        entry[1].add(trace_id)
        if len(entry[2]) < EXAMPLES:
            entry[2].append(trace_id)


def _summaries(counts: dict[str, list[Any]]) -> list[str]:
    """One line per reason: ``N span(s) of M trace(s): reason (e.g. trace a, b)``."""
    out = []
    for reason, (spans, traces, examples) in counts.items():
        more = ", ..." if len(traces) > len(examples) else ""
        out.append(f"{spans:,} span(s) of {len(traces):,} trace(s): {reason} (trace {', '.join(examples)}{more})")
    return out

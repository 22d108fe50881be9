"""Spans grouped into traces and checked (duplicate span ids, cycles in parent ids, size), in tree order; the
attempts of a trace (the whole trace, or the spans a mapping's ``attempt_span`` selects)."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import ProblemCollector
from ingest.otlp.mapping import TraceMapping
from ingest.otlp_conventions import (
    span_class,
)
from ingest.otlp_decode import Span

MAX_SPANS_PER_TRACE = int(os.environ.get("RUNLENS_OTLP_MAX_SPANS", "5000"))


@dataclass
class Trace:
    """The spans of one trace, checked, in tree order (parents before children, siblings by start time)."""

    trace_id: str
    spans: list[Span]
    children: dict[str, list[Span]]
    roots: list[Span]


def group_traces(path: Path, spans: list[Span], problems: ProblemCollector) -> list[Trace]:
    """Spans grouped by trace id and checked (duplicate span ids, cycles in parent ids, size); a bad trace is
    reported at the line of its offending span and left out."""
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    traces = []
    for trace_id, members in by_trace.items():
        trace = _check_trace(path, trace_id, members, problems)
        if trace is not None:
            traces.append(trace)
    traces.sort(key=lambda t: (t.roots[0].start_ns, t.trace_id))
    return traces


def _check_trace(path: Path, trace_id: str, members: list[Span], problems: ProblemCollector) -> Trace | None:
    if len(members) > MAX_SPANS_PER_TRACE:
        problems.add(
            f"{path}:{members[0].line}",
            "spans",
            f"trace {trace_id} has {len(members):,} spans, more than the limit of {MAX_SPANS_PER_TRACE:,} "
            "(RUNLENS_OTLP_MAX_SPANS)",
        )
        return None
    by_id: dict[str, Span] = {}
    for span in members:
        if span.span_id in by_id:
            problems.add(f"{path}:{span.line}", "spanId", f"span {span.span_id} appears twice in trace {trace_id}")
            return None
        by_id[span.span_id] = span
    cycle = _find_cycle(by_id)
    if cycle is not None:
        problems.add(
            f"{path}:{by_id[cycle[0]].line}",
            "parentSpanId",
            f"cycle in the parent ids of trace {trace_id}: {' -> '.join(cycle)}",
        )
        return None
    children: dict[str, list[Span]] = defaultdict(list)
    roots = []
    for span in members:
        if span.parent_id is not None and span.parent_id in by_id:
            children[span.parent_id].append(span)
        else:
            roots.append(span)
    order = lambda s: (s.start_ns, s.span_id)  # noqa: E731 - a sort key used three times
    for kids in children.values():
        kids.sort(key=order)
    roots.sort(key=lambda s: (s.parent_id is not None, *order(s)))  # true roots first, then orphans
    return Trace(trace_id, _tree_order(roots, children), children, roots)


def _find_cycle(by_id: dict[str, Span]) -> list[str] | None:
    """A loop of parent ids (``[a, b, a]``), or None: walk up from each span, remembering finished spans."""
    done: set[str] = set()
    for start in by_id:
        path: list[str] = []
        on_path: set[str] = set()
        node: str | None = start
        while node is not None and node in by_id and node not in done:
            if node in on_path:
                return [*path[path.index(node) :], node]
            path.append(node)
            on_path.add(node)
            node = by_id[node].parent_id
        done.update(path)
    return None


def _tree_order(roots: list[Span], children: dict[str, list[Span]]) -> list[Span]:
    out: list[Span] = []
    stack = list(reversed(roots))
    while stack:
        span = stack.pop()
        out.append(span)
        stack.extend(reversed(children.get(span.span_id, [])))
    return out


def _subtree(root: Span, children: dict[str, list[Span]]) -> list[Span]:
    return _tree_order([root], children)


def attempt_roots(trace: Trace, mapping: TraceMapping) -> list[tuple[Span, list[Span]]]:
    """``(root span, spans in tree order)`` of each attempt of a trace: the whole trace (from its earliest
    root), or the outermost spans the mapping's ``attempt_span`` selects."""
    if mapping.attempt_span:
        chosen = [s for s in trace.spans if _selected(s, mapping)]
        chosen_ids = {s.span_id for s in chosen}
        by_id = {s.span_id: s for s in trace.spans}
        outermost = [s for s in chosen if not _has_ancestor_in(s, chosen_ids, by_id)]
        if outermost:
            return [(s, _subtree(s, trace.children)) for s in outermost]
    return [(trace.roots[0], trace.spans)]


def _selected(span: Span, mapping: TraceMapping) -> bool:
    for key, value in mapping.attempt_span:
        if key == "name" and span.name != value:
            return False
        if key == "kind" and span_class(span) != value.lower():
            return False
    return True


def _has_ancestor_in(span: Span, ids: set[str], by_id: dict[str, Span]) -> bool:
    node = span.parent_id
    while node is not None and node in by_id:
        if node in ids:
            return True
        node = by_id[node].parent_id
    return False

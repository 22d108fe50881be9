"""OpenTelemetry traces (OTLP/JSON lines or OTLP protobuf) -> native v1 records.

A trace (or each span a mapping selects, ``attempt_span``) is one attempt; its LLM, tool and retriever spans,
in tree order (children by start time), are the steps. Run, task, sample and score come from attributes named by
a mapping (``ingest/mappings/otlp/default.yaml`` unless ``--mapping`` says otherwise), from evaluation results in
the trace, or from a scores CSV joined by trace id (``--scores``). Locations are ``file:line`` (JSON) or
``file:N`` with N the protobuf message. Spans are decoded by ``ingest.otlp_decode`` and read with the
conventions in ``ingest.otlp_conventions``; the format is described in docs/formats.md.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import io
import os
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ingest.cost import price_call
from ingest.errors import IngestError, ProblemCollector
from ingest.otlp_conventions import (
    LLM_TOKENS_IN,
    LLM_TOKENS_OUT,
    STEP_KINDS,
    Evaluation,
    evaluations,
    llm_step,
    span_class,
    tool_step,
)
from ingest.otlp_decode import STATUS_ERROR, Span, is_json, proto_messages, read_spans

MAPPINGS_DIR = Path(__file__).resolve().parent.parent / "mappings" / "otlp"
MAX_SPANS_PER_TRACE = int(os.environ.get("RUNLENS_OTLP_MAX_SPANS", "5000"))
ATTRIBUTE_FIELDS = (
    "benchmark",
    "run_id",
    "agent",
    "agent_version",
    "eval_date",
    "task_id",
    "sample",
    "score",
    "passed",
    "query",
    "reference_answer",
)
SCORINGS = ("binary", "graded", "continuous")
MISSING_SCORE = ("keep", "error", "skip")
# the keys a mapping may set besides ``attributes`` (a YAML file, or inline ``key=value``)
MAPPING_KEYS = ("name", "benchmark", "scoring", "kind", "evaluation", "missing_score", "attempt_span", "prices")
INLINE_KEYS = ("name", "benchmark", "scoring", "kind", "evaluation", "missing_score")

Records = Iterator[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class TraceMapping:
    """Which attributes name the run, task, sample and score of an attempt (see default.yaml)."""

    name: str
    attributes: dict[str, tuple[str, ...]]
    benchmark: str = "otel"
    scoring: str = "continuous"
    kind: str = "agent"
    evaluation: str | None = None
    missing_score: str = "keep"
    attempt_span: tuple[tuple[str, str], ...] = ()  # (("name", X),) or (("kind", "AGENT"),)
    prices: tuple[tuple[str, float, float], ...] = ()  # (model, USD per million input, per million output tokens)
    source: str = field(default="", compare=False)


# ---------------------------------------------------------------------------------------------
# Mappings
# ---------------------------------------------------------------------------------------------


def shipped_trace_mappings() -> dict[str, Path]:
    """Name -> YAML file of every OTLP mapping shipped in ingest/mappings/otlp/."""
    return {p.stem: p for p in sorted(MAPPINGS_DIR.glob("*.yaml"))}


def _read_yaml(path: Path, where: str) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise IngestError.single(where, "mapping", f"cannot read mapping {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise IngestError.single(where, "mapping", f"{path}: expected a YAML mapping of keys")
    return raw


def load_trace_mapping(spec: str | TraceMapping | None, *, where: str = "--mapping") -> TraceMapping:
    """The default mapping, overridden by a shipped name, a YAML file, or inline ``field=attribute,...`` (a mapping
    already loaded is returned as it is).

    Raises:
        IngestError: the spec names no mapping, or the mapping is malformed.
    """
    if isinstance(spec, TraceMapping):
        return spec
    raw = _read_yaml(shipped_trace_mappings()["default"], where)
    if spec:
        shipped = shipped_trace_mappings()
        if spec in shipped:
            override = _read_yaml(shipped[spec], where)
        elif spec.endswith((".yaml", ".yml")):
            if not Path(spec).is_file():
                raise IngestError.single(where, "mapping", f"mapping file {spec!r} not found")
            override = _read_yaml(Path(spec), where)
        elif "=" in spec:
            override = _inline(spec, where)
        else:
            raise IngestError.single(
                where,
                "mapping",
                f"unknown OTLP mapping {spec!r}: give {', '.join(shipped)}, a .yaml file, or field=attr",
            )
        attrs = {**raw["attributes"], **(override.pop("attributes", None) or {})}
        raw = {**raw, **override, "attributes": attrs}
    return _build(raw, where, spec or "default")


def _inline(spec: str, where: str) -> dict[str, Any]:
    """``field=attribute,key=value,...``: a field of ATTRIBUTE_FIELDS sets its attribute list to that one
    attribute, a key of INLINE_KEYS sets the key; any other name is refused, as in a YAML file (a typo must not
    silently leave the default in place)."""
    out: dict[str, Any] = {"attributes": {}}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not key or not value:
            raise IngestError.single(where, "mapping", f"{part!r} is not field=attribute")
        if key in ATTRIBUTE_FIELDS:
            out["attributes"][key] = [value]
        elif key in INLINE_KEYS:
            out[key] = value
        else:
            raise IngestError.single(
                where,
                "mapping",
                f"unknown mapping key {key!r} in {part!r}: fields {', '.join(ATTRIBUTE_FIELDS)}; keys "
                f"{', '.join(INLINE_KEYS)} (attempt_span and prices: in a YAML file)",
            )
    return out


def _prices(raw: Any, where: str) -> tuple[tuple[str, float, float], ...]:
    """``prices: {model: {input_per_mtok: X, output_per_mtok: Y}}`` (USD per million tokens), checked."""
    if raw is None:
        return ()
    bad = IngestError.single(
        where, "mapping", "prices must be {MODEL: {input_per_mtok: USD, output_per_mtok: USD}} (numbers >= 0)"
    )
    if not isinstance(raw, dict):
        raise bad
    out = []
    for model, entry in raw.items():
        if not isinstance(entry, dict) or set(entry) != {"input_per_mtok", "output_per_mtok"}:
            raise bad
        values = [entry["input_per_mtok"], entry["output_per_mtok"]]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values):
            raise bad
        out.append((str(model), float(values[0]), float(values[1])))
    return tuple(sorted(out))


def _build(raw: dict[str, Any], where: str, label: str) -> TraceMapping:
    unknown_keys = sorted(set(raw) - {*MAPPING_KEYS, "attributes"})
    if unknown_keys:
        raise IngestError.single(
            where,
            "mapping",
            f"unknown mapping key(s) {', '.join(unknown_keys)}; keys: attributes, {', '.join(MAPPING_KEYS)}",
        )
    attrs = raw.get("attributes") or {}
    unknown = sorted(set(attrs) - set(ATTRIBUTE_FIELDS))
    if unknown:
        raise IngestError.single(
            where, "mapping", f"unknown field(s) {', '.join(unknown)}; {', '.join(ATTRIBUTE_FIELDS)}"
        )
    scoring = str(raw.get("scoring") or "continuous")
    missing = str(raw.get("missing_score") or "keep")
    if scoring not in SCORINGS or missing not in MISSING_SCORE:
        raise IngestError.single(
            where, "mapping", "scoring must be binary|graded|continuous, missing_score keep|error|skip"
        )
    selector = raw.get("attempt_span") or {}
    if not isinstance(selector, dict) or not set(selector) <= {"name", "kind"}:
        raise IngestError.single(where, "mapping", "attempt_span must be {name: NAME} or {kind: KIND}")
    return TraceMapping(
        name=str(raw.get("name") or label),
        attributes={k: tuple(str(a) for a in (v if isinstance(v, list) else [v])) for k, v in attrs.items()},
        benchmark=str(raw.get("benchmark") or "otel"),
        scoring=scoring,
        kind=str(raw.get("kind") or "agent"),
        evaluation=None if raw.get("evaluation") is None else str(raw["evaluation"]),
        missing_score=missing,
        attempt_span=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        prices=_prices(raw.get("prices"), where),
        source=label,
    )


# ---------------------------------------------------------------------------------------------
# Detection and fingerprint
# ---------------------------------------------------------------------------------------------


def detect_otlp(path: Path, head: bytes) -> bool:
    """OTLP/JSON (``"resourceSpans"`` near the start of a JSON object) or an OTLP protobuf file (``.pb``,
    ``.binpb``, ``.otlp``) whose first message parses as a trace request."""
    if is_json(head):
        start = head.lstrip()[:4096]
        return b'"resourceSpans"' in start or b'"resource_spans"' in start
    if not path.name.lower().endswith((".pb", ".binpb", ".otlp")):
        return False
    from ingest.otlp_decode import BadSpan, decode_proto_request, varint_messages

    if len(head) >= 65536:
        return True  # the head may cut a message short: trust the suffix, the parser reports problems
    for messages in (proto_messages(head), varint_messages(head) or []):
        try:
            if messages and decode_proto_request(messages[0]).get("resourceSpans"):
                return True
        except BadSpan:
            continue
    return False


def fingerprint_otlp(path: Path, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The resolved mapping and the scores CSV's bytes enter the idempotency hash."""
    mapping = load_trace_mapping(options.get("mapping"), where=f"{path}:1")
    out: dict[str, Any] = {"mapping": repr(replace(mapping, source=""))}
    scores = options.get("scores")
    if scores:
        other = Path(str(scores))
        out["_scores"] = hashlib.sha256(other.read_bytes()).hexdigest() if other.is_file() else None
    return out


# ---------------------------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Attempts
# ---------------------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One attempt being built: its key, record and where it came from."""

    loc: str
    trace_id: str
    benchmark: str
    run_id: str
    task_id: str
    sample: int | None
    start_ns: int
    run: dict[str, Any]
    record: dict[str, Any]
    task: dict[str, Any] = field(default_factory=dict)  # query, reference_answer: when the mapping finds them


def _lookup(name: str, root: Span, spans: list[Span], mapping: TraceMapping) -> Any:
    """The first attribute of the mapping's list for ``name`` found on the root, its resource, or another span."""
    keys = mapping.attributes.get(name, ())
    for source in (root.attrs, root.resource, *(s.attrs for s in sorted(spans, key=lambda s: s.start_ns))):
        for key in keys:
            value = source.get(key)
            if value is not None and value != "":
                return value
    return None


def _used_keys(mapping: TraceMapping) -> set[str]:
    return {key for keys in mapping.attributes.values() for key in keys}


def build_attempt(
    path: Path, trace: Trace, root: Span, spans: list[Span], mapping: TraceMapping, options: dict[str, Any]
) -> Attempt:
    """The attempt record (without run, task and sample numbers resolved) of one attempt root and its spans."""
    steps, evals = _steps_and_evaluations(spans, mapping)
    others = [_span_summary(s) for s in spans if s is not root and span_class(s) not in STEP_KINDS]
    agent = options.get("agent") or _lookup("agent", root, spans, mapping) or root.resource.get("service.name")
    version = _lookup("agent_version", root, spans, mapping)
    run_id = options.get("run_id") or _lookup("run_id", root, spans, mapping)
    run_id = run_id or (f"{agent}@{version}" if version else str(agent or "otel"))
    benchmark = options.get("benchmark") or _lookup("benchmark", root, spans, mapping) or mapping.benchmark
    task_id = _lookup("task_id", root, spans, mapping)
    if task_id is None:
        task_id = trace.trace_id if not mapping.attempt_span else f"{trace.trace_id}:{root.span_id}"
    sample = _lookup("sample", root, spans, mapping)
    record = _attempt_record(trace, root, steps, evals, mapping, _lookup("score", root, spans, mapping))
    if others:
        record["other_spans"] = others
    passed = _lookup("passed", root, spans, mapping)
    if isinstance(passed, bool):
        record["passed"] = passed
    eval_date = _lookup("eval_date", root, spans, mapping)
    if root.parent_id is not None:  # the trace's root span has not been seen: never stored as complete
        record["trace_partial"] = {"missing": "root span", "root_parent_span_id": root.parent_id, "spans": len(spans)}
    task = {k: str(v) for k in ("query", "reference_answer") if (v := _lookup(k, root, spans, mapping)) is not None}
    run = {
        "agent": str(agent or run_id),
        "agent_version": None if version is None else str(version),
        "eval_date": str(eval_date) if eval_date else _date(root.start_ns),
    }
    return Attempt(
        loc=f"{path}:{root.line}",
        trace_id=trace.trace_id,
        benchmark=str(benchmark),
        run_id=str(run_id),
        task_id=str(task_id),
        sample=_sample(sample),
        start_ns=root.start_ns,
        run=run,
        record=record,
        task=task,
    )


def _sample(value: Any) -> int | None:
    """A sample number from an attribute (an integer, or its decimal text); None when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii() and len(value.strip()) <= 9:
        return int(value)
    return None


def _span_summary(span: Span) -> dict[str, Any]:
    """A span that is neither the root nor a step, kept whole (its attributes are not dropped)."""
    summary = {
        "name": span.name,
        "span_id": span.span_id,
        "parent_span_id": span.parent_id,
        "span_kind": span_class(span),
        "latency_s": (span.end_ns - span.start_ns) / 1e9,
        "attributes": span.attrs or None,
        "status": {2: "error", 1: "ok"}.get(span.status_code),
        "status_message": span.status_message or None,
        "events": [{"name": n, "attributes": a} for n, _, a in span.events] or None,
    }
    return {k: v for k, v in summary.items() if v is not None}


def _date(ns: int) -> str | None:
    if ns <= 0:
        return None
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).date().isoformat()


PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")


def _steps_and_evaluations(spans: list[Span], mapping: TraceMapping) -> tuple[list[dict[str, Any]], list[Evaluation]]:
    steps: list[dict[str, Any]] = []
    evals: list[Evaluation] = []
    rnd = 0
    for span in spans:
        cls = span_class(span)
        evals.extend(evaluations(span, cls))
        if cls == "llm":
            rnd += 1
            step = llm_step(span, keep_input=rnd == 1)
            if step.get("cost_usd") is None:  # neither convention carries one: priced from model and tokens
                price = price_call(
                    step.get("model"),
                    step.get("input_tokens"),
                    step.get("output_tokens"),
                    overrides=mapping.prices,
                    provider=next((str(span.attrs[k]) for k in PROVIDER_KEYS if span.attrs.get(k)), None),
                    when_ns=span.start_ns,
                )
                if price is not None:
                    step["cost_usd"], step["cost_source"] = price.usd, price.source
        elif cls in STEP_KINDS:
            step = tool_step(span, cls)
        else:
            continue  # agent, chain, evaluator and other spans: kept whole in the attempt's extra (other_spans)
        step["round"] = max(rnd, 1)
        steps.append(step)
    last_llm = max((i for i, s in enumerate(steps) if s["kind"] == "model"), default=None)
    if last_llm is not None and last_llm == len(steps) - 1 and "tool_calls" not in steps[last_llm]:
        steps[last_llm]["kind"] = "final"  # the last model turn, calling no tool, is the answer
    evals.sort(key=lambda e: e.time_ns)
    return steps, evals


def _attempt_record(
    trace: Trace,
    root: Span,
    steps: list[dict[str, Any]],
    evals: list[Evaluation],
    mapping: TraceMapping,
    score_attr: Any,
) -> dict[str, Any]:
    models = [s for s in steps if s["kind"] in ("model", "final")]
    rest = {k: v for k, v in root.attrs.items() if k not in _used_keys(mapping)}
    answer = rest.pop("output.value", None)
    if answer is None and models:
        answer = models[-1].get("content")
    record: dict[str, Any] = {
        "record": "attempt",
        "answer": answer,
        "input_tokens": _first(_sum(models, "input_tokens"), _root_tokens(rest, LLM_TOKENS_IN)),
        "output_tokens": _first(_sum(models, "output_tokens"), _root_tokens(rest, LLM_TOKENS_OUT)),
        "cost_usd": None,
        "latency_s": (root.end_ns - root.start_ns) / 1e9,
        "status": "crashed" if root.status_code == STATUS_ERROR else "completed",
        "steps": steps,
        "trace_id": trace.trace_id,
        "root_span": root.name,
        "input": rest.pop("input.value", None),
        "attributes": rest or None,
        "resource": {k: v for k, v in root.resource.items() if k not in _used_keys(mapping)} or None,
    }
    if root.status_code == STATUS_ERROR:
        record["error"] = root.status_message or "error"
    _apply_cost(record, models)
    _apply_scores(record, evals, mapping, score_attr)
    return {k: v for k, v in record.items() if v is not None}


def _apply_cost(record: dict[str, Any], models: list[dict[str, Any]]) -> None:
    """The attempt's cost: the sum over its model steps when every step with tokens has a cost (from the span, the
    mapping's prices or the catalog), else none, with the models that had no price (``cost_missing``). A cost
    with any computed part names its sources (``cost_source``: source -> steps), which marks it computed."""
    priced = [s for s in models if s.get("cost_usd") is not None]
    unpriced = [s for s in models if s.get("cost_usd") is None and (s.get("input_tokens") or s.get("output_tokens"))]
    if unpriced:
        names = sorted({str(s.get("model") or "(no model name)") for s in unpriced})
        record["cost_missing"] = {
            "models": names,
            "steps": len(unpriced),
            "reason": "no price in the mapping's prices or the catalog: add them under prices: in the mapping",
        }
        return
    if not priced:
        return
    record["cost_usd"] = sum(s["cost_usd"] for s in priced)
    sources: dict[str, int] = {}
    for s in priced:
        key = s.get("cost_source", "span")
        sources[key] = sources.get(key, 0) + 1
    if set(sources) != {"span"}:
        record["cost_source"] = sources


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _root_tokens(rest: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    """Token counts an agent's root span carries itself (used only when no LLM span reports any)."""
    for key in keys:
        value = rest.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _sum(steps: list[dict[str, Any]], key: str) -> Any:
    values = [s[key] for s in steps if s.get(key) is not None]
    return sum(values) if values else None


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


# ---------------------------------------------------------------------------------------------
# Scores CSV
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# The reader
# ---------------------------------------------------------------------------------------------


def parse_otlp(path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any) -> Records:
    """Yield benchmark, task, run and attempt records for an OTLP trace file.

    Args:
        path: the file.
        data: its bytes (OTLP/JSON lines or protobuf).
        problems: where problems are reported.
        progress: optional tqdm-like bar.
        **options: ``mapping`` (name, YAML file or ``field=attribute,...``), ``scores`` (a CSV joined by
            trace id), ``agent``, ``benchmark``, ``run_id`` (constants that win over attributes).
    """
    try:
        mapping = load_trace_mapping(options.get("mapping"), where=f"{path}:1")
    except IngestError as exc:
        for problem in exc.problems:
            problems.add(problem.location, problem.field, problem.reason)
        return
    spans = read_spans(path, data, problems)
    traces = group_traces(path, spans, problems)
    scores = read_scores(str(options["scores"]), problems) if options.get("scores") else {}
    attempts = []
    for trace in traces:
        for root, members in attempt_roots(trace, mapping):
            attempts.append(build_attempt(path, trace, root, members, mapping, options))
    if progress is not None:
        progress.update(len(data))
    if problems:
        return
    yield from _records(attempts, scores, mapping, problems)


def _records(
    attempts: list[Attempt],
    scores: dict[str, tuple[str, dict[str, Any]]],
    mapping: TraceMapping,
    problems: ProblemCollector,
) -> Records:
    kept = []
    for att in attempts:
        joined = scores.get(att.trace_id)
        if joined is not None:
            att.record.pop("score", None)
            att.record.pop("raw_score", None)
            att.record = {
                **att.record,
                **joined[1],
                "metrics": {**att.record.get("metrics", {}), **joined[1].get("metrics", {})},
            }
        if not {"score", "raw_score", "passed"} & set(att.record):  # one rule, whatever the trace's status
            if mapping.missing_score == "keep":  # stored unscored (score empty, never 0) until a late score
                att.record["is_scored"] = False
            elif mapping.missing_score == "skip":
                continue
            else:
                problems.add(
                    att.loc,
                    "score",
                    f"trace {att.trace_id} has no score: no score attribute, evaluation or annotation, and no row "
                    "in --scores (missing_score: error; keep stores it unscored, skip leaves it out)",
                )
                continue
        kept.append(att)
    yield from _definitions(kept, mapping)
    samples: dict[tuple[str, str], int] = defaultdict(int)
    for att in sorted(kept, key=lambda a: (a.start_ns, a.trace_id)):
        key = (att.run_id, att.task_id)
        sample = att.sample if att.sample is not None else samples[key]
        samples[key] = max(samples[key], sample + 1)
        yield att.loc, {**att.record, "run_id": att.run_id, "task_id": att.task_id, "sample": sample}


def _definitions(attempts: list[Attempt], mapping: TraceMapping) -> Records:
    """One benchmark, task and run record each, from the first attempt naming it (a run's date: its earliest)."""
    seen: set[tuple[str, ...]] = set()
    first_date: dict[str, str] = {}
    for att in attempts:
        date = att.run["eval_date"]
        if date and (att.run_id not in first_date or date < first_date[att.run_id]):
            first_date[att.run_id] = date
    for att in attempts:
        if ("b", att.benchmark) not in seen:
            seen.add(("b", att.benchmark))
            yield att.loc, {"record": "benchmark", "benchmark": att.benchmark, "scoring": mapping.scoring}
        if ("t", att.benchmark, att.task_id) not in seen:
            seen.add(("t", att.benchmark, att.task_id))
            yield att.loc, {"record": "task", "benchmark": att.benchmark, "task_id": att.task_id, **att.task}
        if ("r", att.run_id) not in seen:
            seen.add(("r", att.run_id))
            run = {**att.run, "eval_date": first_date.get(att.run_id)}
            yield (
                att.loc,
                {"record": "run", "run_id": att.run_id, "benchmark": att.benchmark, "kind": mapping.kind, **run},
            )

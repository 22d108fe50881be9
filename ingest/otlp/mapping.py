"""Trace mappings: which span attributes name the run, task, sample and score of an attempt (a shipped YAML file
in ``ingest/mappings/otlp/``, a YAML file of one's own, or ``field=attribute,...`` inline), its scoring, the
spans that are attempts, and model prices."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.cost import ModelPrice
from ingest.errors import IngestError

MAPPINGS_DIR = Path(__file__).resolve().parent.parent / "mappings" / "otlp"
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
    prices: tuple[ModelPrice, ...] = ()  # USD per million tokens, per model name
    source: str = field(default="", compare=False)


# ---------------------------------------------------------------------------------------------
# Mappings
# ---------------------------------------------------------------------------------------------


def shipped_trace_mappings() -> dict[str, Path]:
    """Name -> YAML file of every OTLP mapping shipped in ingest/mappings/otlp/."""
    return {p.stem: p for p in sorted(MAPPINGS_DIR.glob("*.yaml"))}


def _read_yaml(path: Path, where: str) -> dict[str, Any]:
    import yaml  # on first use: 10 ms of every ingest process's start otherwise

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


PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
CACHE_PRICE_KEYS = ("cache_read_per_mtok", "cache_write_per_mtok")


def _prices(raw: Any, where: str) -> tuple[ModelPrice, ...]:
    """``prices: {model: {input_per_mtok: X, output_per_mtok: Y[, cache_read_per_mtok: Z, cache_write_per_mtok:
    W]}}`` (USD per million tokens), checked."""
    if raw is None:
        return ()
    bad = IngestError.single(
        where,
        "mapping",
        "prices must be {MODEL: {input_per_mtok: USD, output_per_mtok: USD}} (numbers >= 0), with "
        "cache_read_per_mtok and cache_write_per_mtok optional (cached input is charged as input without them)",
    )
    if not isinstance(raw, dict):
        raise bad
    out = []
    for model, entry in raw.items():
        if not isinstance(entry, dict) or not set(PRICE_KEYS) <= set(entry) <= {*PRICE_KEYS, *CACHE_PRICE_KEYS}:
            raise bad
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in entry.values()):
            raise bad
        cache = [float(entry[k]) if k in entry else None for k in CACHE_PRICE_KEYS]
        out.append(ModelPrice(str(model), float(entry["input_per_mtok"]), float(entry["output_per_mtok"]), *cache))
    return tuple(sorted(out, key=lambda p: p.model))


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

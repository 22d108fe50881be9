"""Long CSV adapter: one row per run x task [x sample], read through a column mapping.

A mapping says which column feeds which native v1 field, where the benchmark name comes from and
which companion files (beside the results file) add run-level facts: agent names, dates, run totals
spread over the run's tasks. Mappings are shipped as ``ingest/mappings/<name>.yaml``, given as a
YAML path, or inline as ``field=column,...`` (see docs/formats.md). Rows become native records
located ``file:line``; companion facts are located at the companion's ``file:line``.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ingest.errors import IngestError, ProblemCollector

MAPPINGS_DIR = Path(__file__).resolve().parent / "mappings"
RUN_FIELDS = (
    "agent",
    "family",
    "agent_version",
    "kind",
    "eval_date",
    "judge",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "run_status",
)
TASK_FIELDS = ("level", "category", "query", "reference_answer", "human_minutes")
ATTEMPT_FIELDS = (
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
)
KEY_FIELDS = ("run_id", "task_id", "benchmark")
ALL_FIELDS = KEY_FIELDS + RUN_FIELDS + TASK_FIELDS + ATTEMPT_FIELDS
FLOAT_FIELDS = {
    "score",
    "raw_score",
    "cost_usd",
    "latency_s",
    "human_minutes",
    "price_input_per_mtok",
    "price_output_per_mtok",
}
INT_FIELDS = {"sample", "input_tokens", "output_tokens"}
TRUE = {"1", "1.0", "true", "t", "yes", "y", "c", "pass", "passed", "resolved"}
FALSE = {"0", "0.0", "false", "f", "no", "n", "i", "fail", "failed", "unresolved"}
MAX_CSV_FIELD = 16 * 1024 * 1024
csv.field_size_limit(MAX_CSV_FIELD)


@dataclass(frozen=True)
class Companion:
    """A file beside the results file holding run-level facts, joined on ``key``."""

    file: str
    key: dict[str, str]
    columns: dict[str, str] = field(default_factory=dict)
    spread: dict[str, tuple[str, ...]] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    required: bool = True


@dataclass(frozen=True)
class Mapping:
    """How the columns of a long CSV become native records (see docs/formats.md)."""

    name: str
    columns: dict[str, str]
    benchmark: str | None = None
    benchmark_column: str | None = None
    scoring: str | None = None  # None: binary when every score is 0/1, else continuous
    kind: str | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    companions: tuple[Companion, ...] = ()
    detect: tuple[str, ...] = ()
    run_id_scope: str | None = None
    source: str = "inline"


# ---------------------------------------------------------------------------------------------
# Mappings
# ---------------------------------------------------------------------------------------------


def shipped_mappings() -> dict[str, Path]:
    """Name -> YAML file of every mapping shipped in ingest/mappings/."""
    return {p.stem: p for p in sorted(MAPPINGS_DIR.glob("*.yaml"))}


def load_mapping(spec: str, *, where: str = "--mapping") -> Mapping:
    """A mapping from a shipped name, a YAML file path, or an inline ``field=column,...`` spec.

    Raises:
        IngestError: the spec names no mapping, or the mapping itself is malformed.
    """
    shipped = shipped_mappings()
    if spec in shipped:
        return _from_yaml(shipped[spec], spec)
    path = Path(spec)
    if spec.endswith((".yaml", ".yml")):
        if not path.is_file():
            raise IngestError.single(where, "mapping", f"mapping file {spec!r} not found")
        return _from_yaml(path, str(path))
    if "=" in spec:
        return _from_inline(spec, where)
    raise IngestError.single(
        where,
        "mapping",
        f"unknown mapping {spec!r}: give one of "
        f"{', '.join(shipped) or '(none shipped)'}, a .yaml file, or field=column,...",
    )


def _from_yaml(path: Path, label: str) -> Mapping:
    import yaml  # on first use: 10 ms of every ingest process's start otherwise

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise IngestError.single(f"{path}:1", "mapping", f"cannot read mapping: {exc}") from exc
    if not isinstance(raw, dict):
        raise IngestError.single(f"{path}:1", "mapping", "expected a YAML mapping of keys")
    return _build(raw, f"{path}:1", label)


def _from_inline(spec: str, where: str) -> Mapping:
    raw: dict[str, Any] = {"columns": {}}
    for part in spec.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise IngestError.single(where, "mapping", f"{part!r} is not field=column")
        if key == "benchmark":
            raw["benchmark"] = value
        elif key == "benchmark_column":
            raw["benchmark"] = {"column": value}
        elif key in ("scoring", "kind", "run_id_scope"):
            raw[key] = value
        elif key.startswith("metric."):
            raw.setdefault("metrics", {})[key[len("metric.") :]] = value
        else:
            raw["columns"][key] = value
    return _build(raw, where, "inline")


def _build(raw: dict[str, Any], where: str, label: str) -> Mapping:
    columns = raw.get("columns") or {}
    unknown = sorted(set(columns) - set(ALL_FIELDS))
    if unknown:
        raise IngestError.single(
            where, "mapping", f"unknown field(s) {', '.join(unknown)}; fields are {', '.join(ALL_FIELDS)}"
        )
    missing = [f for f in ("run_id", "task_id") if f not in columns]
    if missing or not {"score", "passed", "raw_score"} & set(columns):
        need = missing + ([] if {"score", "passed", "raw_score"} & set(columns) else ["score|passed"])
        raise IngestError.single(where, "mapping", f"must map {', '.join(need)} to columns")
    bench = raw.get("benchmark")
    bench_col = bench.get("column") if isinstance(bench, dict) else None
    if bench is None and "benchmark" in columns:
        bench_col = columns["benchmark"]
    if bench is None and bench_col is None:
        raise IngestError.single(where, "mapping", "give benchmark (a name) or benchmark_column")
    comps = tuple(
        Companion(
            file=str(c["file"]),
            key=dict(c["key"]),
            columns=dict(c.get("columns") or {}),
            spread={k: tuple(v if isinstance(v, list) else [v]) for k, v in (c.get("spread") or {}).items()},
            extra=tuple(c.get("extra") or ()),
            required=bool(c.get("required", True)),
        )
        for c in raw.get("companions") or ()
    )
    return Mapping(
        name=str(raw.get("name") or label),
        columns={k: str(v) for k, v in columns.items() if k != "benchmark"},
        benchmark=None if bench_col else str(bench),
        benchmark_column=bench_col,
        scoring=raw.get("scoring"),
        kind=raw.get("kind"),
        metrics={str(k): str(v) for k, v in (raw.get("metrics") or {}).items()},
        companions=comps,
        detect=tuple(raw.get("detect") or ()),
        run_id_scope=raw.get("run_id_scope"),
        source=label,
    )


def header_of(data: bytes) -> list[str]:
    """The header row of a CSV (empty when there is none)."""
    first = data[:65536].split(b"\n", 1)[0].decode("utf-8-sig", "replace").strip("\r")
    return next(csv.reader([first]), []) if first else []


def mapping_for_header(header: list[str]) -> Mapping | None:
    """The shipped mapping whose ``detect`` columns the header has, else the native-column default."""
    cols = set(header)
    for name, path in shipped_mappings().items():
        mapping = _from_yaml(path, name)
        if mapping.detect and set(mapping.detect) <= cols:
            return mapping
    if {"run_id", "task_id"} <= cols and {"score", "passed", "raw_score"} & cols:
        raw: dict[str, Any] = {
            "name": "native-columns",
            "columns": {f: f for f in ALL_FIELDS if f in cols and f != "benchmark"},
        }
        raw["benchmark"] = {"column": "benchmark"} if "benchmark" in cols else "__stem__"
        return _build(raw, "header", "native-columns")
    return None


def companion_of(header: list[str]) -> str | None:
    """Name of the shipped mapping one of whose companion files has this header (read with its results file)."""
    cols = set(header)
    if mapping_for_header(header) is not None:
        return None
    for name, path in shipped_mappings().items():
        for comp in _from_yaml(path, name).companions:
            needed = set(comp.key.values()) | set(comp.columns.values())
            if needed <= cols and len(needed) >= 2:
                return name
    return None


def detect_csv_long(path: Path, head: bytes) -> bool:
    """A .csv/.tsv whose header matches a shipped mapping (or one's companion file), or has native column names."""
    if not path.name.lower().endswith((".csv", ".tsv")):
        return False
    header = header_of(head)
    return mapping_for_header(header) is not None or companion_of(header) is not None


def _resolve(path: Path, data: bytes, options: dict[str, Any]) -> Mapping:
    spec = options.get("mapping")
    if spec:
        return load_mapping(str(spec), where=f"{path}:1")
    found = mapping_for_header(header_of(data))
    if found is None:
        raise IngestError.single(
            f"{path}:1",
            "-",
            "no column mapping: pass --mapping NAME|FILE.yaml|"
            "field=column,... (shipped: " + ", ".join(shipped_mappings()) + ")",
        )
    return found


def fingerprint_csv_long(path: Path, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The mapping and the bytes of every companion file enter the idempotency hash."""
    if options.get("mapping") is None and companion_of(header_of(data)) is not None:
        return {"mapping": "companion"}
    mapping = _resolve(path, data, options)
    # the resolved mapping (not how it was named) enters the hash: --format auto and --mapping NAME agree
    out: dict[str, Any] = {"mapping": repr(replace(mapping, source=""))}
    for comp in mapping.companions:
        other = path.parent / comp.file
        out[f"_companion:{comp.file}"] = hashlib.sha256(other.read_bytes()).hexdigest() if other.is_file() else None
    return out


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def read_csv(path: Path, data: bytes, problems: ProblemCollector) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and ``(line, cells)`` rows of a CSV; undecodable input becomes a problem."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.add(f"{path}:1", "-", f"not valid UTF-8 (byte {exc.start + 1})")
        return [], []
    delimiter = "\t" if path.name.lower().endswith(".tsv") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = [h.strip() for h in next(reader, [])]
        rows = [(reader.line_num, row) for row in reader if row and any(c.strip() for c in row)]
    except csv.Error as exc:
        problems.add(f"{path}:{reader.line_num}", "-", f"malformed CSV: {exc}")
        return [], []
    if not header:
        problems.add(f"{path}:1", "-", "empty file: expected a CSV header row")
    return header, rows


EMPTY = frozenset(("", "nan", "NaN", "NAN", "null", "NULL", "None", "none", "NA", "na", "N/A", "n/a"))


def _to_float(value: str) -> float | None:
    value = value.strip()
    return None if value in EMPTY else float(value)


def _to_int(value: str) -> int | None:
    value = value.strip()
    if value in EMPTY:
        return None
    if value.isdigit():
        return int(value)
    number = float(value)
    if not number.is_integer():
        raise ValueError(f"{value!r} is not an integer")
    return int(number)


def _to_bool(value: str) -> bool | None:
    low = value.strip().lower()
    if low in EMPTY:
        return None
    if low in TRUE or low in FALSE:
        return low in TRUE
    raise ValueError(f"{value!r} is not a yes/no value (1/0, true/false)")


def _to_score(value: str) -> float | None:
    low = value.strip().lower()
    if low in ("true", "false"):
        return 1.0 if low == "true" else 0.0
    return _to_float(value)


def _to_date(value: str) -> str | None:
    value = value.strip()
    if value in EMPTY:
        return None
    if len(value) == 8 and value.isdigit():
        return f"{value[:4]}-{value[4:6]}-{value[6:]}"
    return value


def _to_text(value: str) -> str | None:
    value = value.strip()
    return None if value in EMPTY else value


def converter(fld: str) -> Any:
    """The function turning a CSV cell into what native field ``fld`` wants (ValueError when it cannot)."""
    if fld == "passed":
        return _to_bool
    if fld == "score":
        return _to_score
    if fld in FLOAT_FIELDS:
        return _to_float
    if fld in INT_FIELDS:
        return _to_int
    if fld == "eval_date":
        return _to_date
    return _to_text


def convert(value: str, fld: str) -> Any:
    """A CSV cell as the native field wants it; ValueError when it cannot be."""
    try:
        return converter(fld)(value)
    except ValueError as exc:
        if "is not" in str(exc):
            raise
        raise ValueError(f"{value.strip()!r} is not a number") from None


def _check_columns(
    where: str, header: list[str], needed: dict[str, str], what: str, problems: ProblemCollector
) -> bool:
    absent = [f"{col!r} (for {fld})" for fld, col in needed.items() if col not in header]
    for item in absent:
        problems.add(where, "mapping", f"{what} has no column {item}; its columns are {', '.join(header)}")
    return not absent


@dataclass
class _RunInfo:
    line: str
    fields: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    n_rows: int = 0


def _load_companion(path: Path, comp: Companion, problems: ProblemCollector) -> dict[tuple[str, ...], _RunInfo]:
    """Run facts by key from one companion file (first row wins for columns; spread columns summed)."""
    other = path.parent / comp.file
    if not other.is_file():
        if comp.required:
            problems.add(
                f"{path}:1",
                "companion",
                f"companion file {comp.file!r} not found beside the results file (expected {other})",
            )
        return {}
    header, rows = read_csv(other, other.read_bytes(), problems)
    needed = {
        **{f"key {k}": c for k, c in comp.key.items()},
        **comp.columns,
        **{f"{k}[{i}]": c for k, cols in comp.spread.items() for i, c in enumerate(cols)},
        **{f"extra {c}": c for c in comp.extra},
    }
    if not header or not _check_columns(f"{other}:1", header, needed, f"companion {comp.file}", problems):
        return {}
    ix = {name: i for i, name in enumerate(header)}
    out: dict[tuple[str, ...], _RunInfo] = {}
    for line, row in rows:

        def cell(col: str, row: list[str] = row) -> str:
            return row[ix[col]] if ix[col] < len(row) else ""  # short rows read as blanks

        key = tuple(cell(c).strip() for c in comp.key.values())
        info = out.get(key)
        if info is None:
            info = out[key] = _RunInfo(f"{other}:{line}")
            for fld, col in comp.columns.items():
                try:
                    info.fields[fld] = convert(cell(col), fld)
                except ValueError as exc:
                    problems.add(f"{other}:{line}", col, str(exc))
            info.extra = {c: cell(c) for c in comp.extra if cell(c).strip()}
        for fld, cols in comp.spread.items():
            for col in cols:
                try:
                    value = convert(cell(col), "cost_usd")
                except ValueError as exc:
                    problems.add(f"{other}:{line}", col, str(exc))
                    continue
                if value is not None:
                    info.totals[fld] = info.totals.get(fld, 0.0) + value
    return out


def parse_csv_long(
    path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield native records for a long CSV read through its mapping (``options['mapping']`` or detected).

    Args:
        path: the results file (companions are looked up beside it).
        data: its bytes.
        problems: where problems are reported (``file:line: column: reason``).
        progress: optional tqdm-like bar (updated once, at the end).
        **options: ``mapping`` (name, YAML path or inline spec).
    """
    if options.get("mapping") is None and companion_of(header_of(data)) is not None:
        return  # a companion found while walking a folder: it is read together with its results file
    try:
        mapping = _resolve(path, data, options)
    except IngestError as exc:
        problems.problems.extend(exc.problems)
        return
    header, rows = read_csv(path, data, problems)
    if not header:
        return
    needed = dict(mapping.columns)
    if mapping.benchmark_column:
        needed["benchmark"] = mapping.benchmark_column
    needed.update({f"metric {k}": c for k, c in mapping.metrics.items()})
    if not _check_columns(f"{path}:1", header, needed, f"{path.name} (mapping {mapping.name})", problems):
        return
    companions = [(_load_companion(path, c, problems), c) for c in mapping.companions]
    if problems:
        return
    parsed = _rows(path, header, rows, mapping, problems)
    yield from _records(path, parsed, mapping, companions, problems)
    if progress is not None:
        progress.update(len(data))


def _rows(
    path: Path, header: list[str], rows: list[tuple[int, list[str]]], mapping: Mapping, problems: ProblemCollector
) -> list[tuple[str, dict[str, Any], dict[str, float]]]:
    """Every row converted to ``(location, fields, metrics)``; bad cells become problems."""
    ix = {name: i for i, name in enumerate(header)}
    pairs = list(mapping.columns.items())
    if mapping.benchmark_column:
        pairs.append(("benchmark", mapping.benchmark_column))
    fields = [(fld, ix[col], converter(fld)) for fld, col in pairs]
    metric_cols = [(name, ix[col]) for name, col in mapping.metrics.items()]
    stem_bench = path.stem if mapping.benchmark == "__stem__" else mapping.benchmark
    width = len(header)
    name = str(path)
    out = []
    for line, row in rows:
        if len(row) != width:
            problems.add(f"{name}:{line}", "-", f"{len(row)} cells, but the header has {width} columns")
            continue
        rec: dict[str, Any] = {"benchmark": stem_bench}
        metrics: dict[str, float] = {}
        try:
            for fld, i, conv in fields:
                rec[fld] = conv(row[i])
            for metric, i in metric_cols:
                value = _to_float(row[i])
                if value is not None:
                    metrics[metric] = value
        except ValueError:
            bad = next(
                header[i] for fld, i, _ in fields + [(m, i, None) for m, i in metric_cols] if not _converts(row[i], fld)
            )
            problems.add(
                f"{name}:{line}",
                bad,
                _why(row[header.index(bad)], dict(pairs + [(m, header[i]) for m, i in metric_cols]), bad),
            )
            continue
        out.append((f"{name}:{line}", rec, metrics))
    return out


def _converts(value: str, fld: str) -> bool:
    try:
        convert(value, fld if fld in ALL_FIELDS else "cost_usd")
    except ValueError:
        return False
    return True


def _why(value: str, pairs: dict[str, str], column: str) -> str:
    fld = next((f for f, c in pairs.items() if c == column), "cost_usd")
    try:
        convert(value, fld if fld in ALL_FIELDS else "cost_usd")
    except ValueError as exc:
        return f"{exc} (field {fld})"
    return "invalid value"


def _run_key(rec: dict[str, Any], comp: Companion) -> tuple[str, ...]:
    return tuple("" if rec.get(f) is None else str(rec.get(f)) for f in comp.key)


def _records(
    path: Path,
    parsed: list[tuple[str, dict[str, Any], dict[str, float]]],
    mapping: Mapping,
    companions: list[tuple[dict[tuple[str, ...], _RunInfo], Companion]],
    problems: ProblemCollector,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Benchmark, task and run records on first use, then one attempt per row."""
    n_per_run: dict[tuple[Any, Any], int] = {}
    benches_of: dict[Any, set[Any]] = {}
    for _, rec, _ in parsed:
        key = (rec.get("benchmark"), rec.get("run_id"))
        n_per_run[key] = n_per_run.get(key, 0) + 1
        benches_of.setdefault(rec.get("run_id"), set()).add(rec.get("benchmark"))
    non_binary = {
        rec.get("benchmark")
        for _, rec, _ in parsed
        if rec.get("score", 0.0) not in (0.0, 1.0, None) or rec.get("raw_score", 0.0) not in (0.0, 1.0, None)
    }
    seen_bench: set[Any] = set()
    seen_task: set[tuple[Any, Any]] = set()
    runs: dict[tuple[Any, Any], tuple[Any, dict[str, float]]] = {}
    for loc, rec, metrics in parsed:
        bench, src_run = rec.get("benchmark"), rec.get("run_id")
        if bench is None:
            problems.add(loc, "benchmark", "missing: the benchmark column is empty")
            continue
        if bench not in seen_bench:
            seen_bench.add(bench)
            scoring = mapping.scoring or ("continuous" if bench in non_binary else "binary")
            yield loc, {"record": "benchmark", "benchmark": bench, "scoring": scoring}
        if (bench, rec.get("task_id")) not in seen_task:
            seen_task.add((bench, rec.get("task_id")))
            yield (
                loc,
                {
                    "record": "task",
                    "benchmark": bench,
                    "task_id": rec.get("task_id"),
                    **{f: rec[f] for f in TASK_FIELDS if rec.get(f) is not None},
                },
            )
        if (bench, src_run) not in runs:
            shared = mapping.run_id_scope and len(benches_of.get(src_run, ())) > 1
            run_id = f"{bench}:{src_run}" if shared and src_run is not None else src_run
            run_loc, run_rec, per_task = _run_record(
                loc, rec, run_id, n_per_run[(bench, src_run)], mapping, companions, problems
            )
            runs[(bench, src_run)] = (run_id, per_task)
            if run_rec is not None:
                yield run_loc, run_rec
        run_id, per_task = runs[(bench, src_run)]
        attempt = {
            "record": "attempt",
            "run_id": run_id,
            "task_id": rec.get("task_id"),
            **{f: rec[f] for f in ATTEMPT_FIELDS if rec.get(f) is not None},
        }
        for fld, value in per_task.items():
            attempt.setdefault(fld, value)
        if metrics:
            attempt["metrics"] = metrics
        yield loc, attempt


def _run_record(
    loc: str,
    rec: dict[str, Any],
    run_id: Any,
    n_tasks: int,
    mapping: Mapping,
    companions: list[tuple[dict[tuple[str, ...], _RunInfo], Companion]],
    problems: ProblemCollector,
) -> tuple[str, dict[str, Any] | None, dict[str, float]]:
    """The run record for a row's run, with companion facts; and per-task values spread from run totals."""
    run: dict[str, Any] = {"record": "run", "run_id": run_id, "benchmark": rec["benchmark"]}
    if mapping.kind:
        run["kind"] = mapping.kind
    for fld in RUN_FIELDS:
        if rec.get(fld) is not None:
            run["status" if fld == "run_status" else fld] = rec[fld]
    run_loc = loc
    per_task: dict[str, float] = {}
    for table, comp in companions:
        info = table.get(_run_key(rec, comp))
        if info is None:
            if comp.required:
                problems.add(
                    loc,
                    "run_id",
                    f"run {rec.get('run_id')!r} is not in {comp.file} (joined on {', '.join(comp.key.values())})",
                )
                return loc, None, {}
            continue
        if comp.required:
            run_loc = info.line
        for fld, value in info.fields.items():
            if value is not None:
                run["status" if fld == "run_status" else fld] = value
        run.update({k: v for k, v in info.extra.items() if k not in run})
        for fld, total in info.totals.items():
            run[f"total_{fld}"] = total
            share = total / n_tasks
            per_task[fld] = round(share) if fld in INT_FIELDS else share
    run.setdefault("agent", str(run_id))
    if per_task:
        run["spread_over_tasks"] = n_tasks
    return run_loc, run, per_task


def swebench_format_parts() -> tuple[Any, Any, Any]:
    """``(detect, parse, fingerprint)`` of ``--format swebench`` (DESIGN.md): csv with the swebench-verified mapping."""

    def detect(path: Path, head: bytes) -> bool:
        return False  # --format auto already reads these files as csv; this name exists for the CLI contract

    def parse(
        path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        return parse_csv_long(path, data, problems, progress, **{**options, "mapping": "swebench-verified"})

    def fingerprint(path: Path, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
        return fingerprint_csv_long(path, data, {**options, "mapping": "swebench-verified"})

    return detect, parse, fingerprint

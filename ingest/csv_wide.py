"""Wide CSV adapter: the spreadsheet shape, one row per agent (run) and one column per task.

::

    agent,eval_date,task-1,task-2,task-3
    GPT-4o,2025-01-10,1,0,0.5
    Claude,2025-02-01,1,,1

Metadata columns are recognised by name (``run_id, agent, model, name, eval_date, date, kind, family,
agent_version, benchmark``); the first column is the agent when none of them is. Every other column
is a task; a cell is a score in [0, 1] (or yes/no), and a blank cell means the task was not run.
Benchmark name: ``--benchmark`` / ``--mapping benchmark=NAME``, else a ``benchmark`` column, else the
file stem. ``run_id`` defaults to ``<benchmark>:<agent>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.csv_long import convert, header_of, read_csv
from ingest.errors import ProblemCollector

META = {
    "run_id": "run_id",
    "agent": "agent",
    "model": "agent",
    "name": "agent",
    "system": "agent",
    "eval_date": "eval_date",
    "date": "eval_date",
    "kind": "kind",
    "family": "family",
    "agent_version": "agent_version",
    "version": "agent_version",
    "benchmark": "benchmark",
}
MIN_TASK_COLUMNS = 2


def _options(options: dict[str, Any]) -> dict[str, str]:
    """``benchmark``/``kind`` from options or an inline ``--mapping key=value,...``."""
    out = {k: str(v) for k, v in options.items() if k in ("benchmark", "kind", "agent") and v}
    spec = options.get("mapping")
    if spec and "=" in str(spec):
        for part in str(spec).split(","):
            key, _, value = part.partition("=")
            if key.strip() in ("benchmark", "kind") and value.strip():
                out.setdefault(key.strip(), value.strip())
    return out


def _layout(header: list[str]) -> tuple[dict[int, str], list[int]]:
    """Column index -> metadata field, and the indices of task columns."""
    meta = {i: META[h.lower()] for i, h in enumerate(header) if h.lower() in META}
    if "agent" not in meta.values() and "run_id" not in meta.values() and header:
        meta[0] = "agent"
    tasks = [i for i in range(len(header)) if i not in meta]
    return meta, tasks


def detect_csv_wide(path: Path, head: bytes) -> bool:
    """A .csv/.tsv with a label column and at least two columns of numbers (or blanks) in the first rows."""
    if not path.name.lower().endswith((".csv", ".tsv")):
        return False
    header = header_of(head)
    meta, tasks = _layout(header)
    if len(tasks) < MIN_TASK_COLUMNS:
        return False
    problems = ProblemCollector()
    _, rows = read_csv(path, head[: head.rfind(b"\n") + 1] or head, problems)
    if problems or not rows:
        return False
    for _, row in rows[:20]:
        for i in tasks:
            if i < len(row):
                try:
                    convert(row[i], "score")
                except ValueError:
                    return False
    return True


def fingerprint_csv_wide(path: Path, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """Nothing beyond the file and options (kept for symmetry with the long CSV format)."""
    return {}


def parse_csv_wide(
    path: Path, data: bytes, problems: ProblemCollector, progress: Any = None, **options: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield native records for an agents x tasks score matrix (see the module docstring)."""
    opts = _options(options)
    header, rows = read_csv(path, data, problems)
    if not header:
        return
    meta, tasks = _layout(header)
    if len(tasks) < 1:
        problems.add(f"{path}:1", "-", "no task columns: expected agent, then one column per task")
        return
    if len(set(header)) != len(header):
        dups = sorted({h for h in header if header.count(h) > 1})
        problems.add(f"{path}:1", "-", f"duplicate column names: {', '.join(dups)}")
        return
    cells: list[tuple[str, dict[str, Any], list[tuple[str, float]]]] = []
    for line, row in rows:
        loc = f"{path}:{line}"
        if len(row) != len(header):
            problems.add(loc, "-", f"{len(row)} cells, but the header has {len(header)} columns")
            continue
        info = {fld: row[i].strip() for i, fld in meta.items() if row[i].strip()}
        scores = []
        for i in tasks:
            try:
                value = convert(row[i], "score")
            except ValueError:
                problems.add(loc, header[i], f"{row[i]!r} is not a score (a number in [0, 1], or blank)")
                continue
            if value is not None:
                scores.append((header[i], value))
        cells.append((loc, info, scores))
    binary = all(v in (0.0, 1.0) for _, _, s in cells for _, v in s)
    yield from _records(path, cells, opts, binary)
    if progress is not None:
        progress.update(len(data))


def _records(
    path: Path, cells: list[tuple[str, dict[str, Any], list[tuple[str, float]]]], opts: dict[str, str], binary: bool
) -> Iterator[tuple[str, dict[str, Any]]]:
    seen_bench: set[str] = set()
    seen_task: set[tuple[str, str]] = set()
    for loc, info, scores in cells:
        bench = opts.get("benchmark") or info.get("benchmark") or path.stem
        if bench not in seen_bench:
            seen_bench.add(bench)
            yield (
                f"{path}:1",
                {"record": "benchmark", "benchmark": bench, "scoring": "binary" if binary else "continuous"},
            )
        agent = info.get("agent") or info.get("run_id")
        run = {
            "record": "run",
            "run_id": info.get("run_id") or f"{bench}:{agent}",
            "benchmark": bench,
            "agent": agent,
            "kind": info.get("kind") or opts.get("kind"),
        }
        for fld in ("eval_date", "family", "agent_version"):
            if info.get(fld):
                run[fld] = convert(info[fld], fld)
        yield loc, run
        for task_id, value in scores:
            if (bench, task_id) not in seen_task:
                seen_task.add((bench, task_id))
                yield f"{path}:1", {"record": "task", "benchmark": bench, "task_id": task_id}
            yield loc, {"record": "attempt", "run_id": run["run_id"], "task_id": task_id, "score": value}

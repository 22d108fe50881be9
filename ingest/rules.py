"""Rule findings from a declared tool dependency graph (AD-Bench Figure 9), stored as ``source = 'rule'``.

A benchmark declares ``{tool: [prerequisite, ...]}`` in ``benchmarks.tool_graph`` or, failing that, in
``<graphs dir>/<benchmark>.json`` (``$RUNLENS_TOOL_GRAPHS``, default ``data/tool_graphs/``). Keys that start
with ``_`` are directives, not tools: ``_compute`` lists the computation tools (default: calculator, python,
code_interpreter, execute_python).

Codes (one finding per offending step):

* ``DE``        a tool called before every prerequisite had succeeded in an *earlier round* (parallel calls in
                the same round cannot use each other's output), or a computation tool called before any
                non-computation tool had returned data;
* ``REDUNDANT`` the same tool with identical arguments (canonical JSON) as an earlier call that did not fail;
* ``NO_TOOL``   (graph declared) a round other than the last with agent output but neither a tool call, a
                final answer nor a user turn;
* ``TOOL``      a tool call that returned an error.

Labels from the log (``source = 'label'``) and the judge are never touched. Ingest labels each file's attempts
inside the file's transaction (:func:`label_file_attempts`); ``python -m analytics rules``
(``jobs.rules.refresh_rules``) recomputes benchmarks whose graph changed (``--force``: all), each in one
transaction, with an audit row. The drilldown's live findings are ``analytics.rules.attempt_findings``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ingest import lazy_imports
from store import PROJECT_ROOT, RunlensError, query_df, query_rows, transaction

if TYPE_CHECKING:  # imported where used: an ingest without a tool graph never imports pandas (ingest.lazy_imports)
    import pandas as pd

DEFAULT_COMPUTE_TOOLS = ("calculator", "python", "code_interpreter", "execute_python")
GRAPHS_DIR = PROJECT_ROOT / "data" / "tool_graphs"
NO_GRAPH = "none"
META_PREFIX = "rules_graph_hash:"
_NOT_AGENT = {"user", "system", "tool", "tool_result", "final"}

Graph = Mapping[str, list[str]]


@dataclass(frozen=True)
class Finding:
    """One rule finding on one step of a trajectory."""

    code: str
    step: int
    detail: str


def graph_hash(graph: Graph | None) -> str:
    """A short, stable hash of a graph (``"none"`` when no graph is declared)."""
    if not graph:
        return NO_GRAPH
    canon = json.dumps({k: sorted(v) for k, v in graph.items()}, sort_keys=True)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def _canonical_args(args: Any) -> str:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args
    return json.dumps(args, sort_keys=True, separators=(",", ":"))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def find_rule_errors(steps: Iterable[Mapping[str, Any]], graph: Graph | None) -> list[Finding]:
    """Apply the rules to one trajectory.

    Args:
        steps: dicts with ``step``, ``round``, ``kind``, ``tool``, ``args`` (JSON text or object), ``error``,
            in trajectory order.
        graph: ``{tool: [prerequisites]}`` (``_``-prefixed keys are directives), or None.

    Returns:
        Findings ordered by step.
    """
    graph = graph or {}
    prereqs = {t: list(p) for t, p in graph.items() if not t.startswith("_")}
    compute = set(graph.get("_compute") or DEFAULT_COMPUTE_TOOLS)
    rows = [dict(s) for s in steps]
    for pos, s in enumerate(rows):
        s["round"] = pos + 1 if _missing(s.get("round")) else int(s["round"])
    out: list[Finding] = []
    done: dict[str, int] = {}  # tool -> earliest round in which it succeeded
    seen_ok: set[tuple[str, str]] = set()
    has_data_round: int | None = None
    for s in rows:
        if s.get("kind") != "tool_call" or _missing(s.get("tool")):
            continue
        tool, rnd, step = str(s["tool"]), s["round"], int(s["step"])
        failed = not _missing(s.get("error"))
        lacking = [p for p in prereqs.get(tool, []) if done.get(p, rnd) >= rnd]
        if lacking:
            out.append(Finding("DE", step, f"{tool} called before {', '.join(lacking)}"))
        elif tool in compute and (has_data_round is None or has_data_round >= rnd):
            out.append(Finding("DE", step, f"computation ({tool}) before any data"))
        key = (tool, _canonical_args(s.get("args")))
        if key in seen_ok:
            out.append(Finding("REDUNDANT", step, f"{tool} repeated with identical arguments"))
        if failed:
            out.append(Finding("TOOL", step, f"{tool} failed: {str(s['error'])[:200]}"))
            continue
        seen_ok.add(key)
        done.setdefault(tool, rnd)
        if tool not in compute and has_data_round is None:
            has_data_round = rnd
    if prereqs:
        out.extend(_no_tool_rounds(rows))
    return sorted(out, key=lambda f: (f.step, f.code))


def _no_tool_rounds(rows: list[dict[str, Any]]) -> list[Finding]:
    """Rounds (not the last) with agent output but no tool call, final answer or user turn."""
    by_round: dict[int, list[dict[str, Any]]] = {}
    for s in rows:
        by_round.setdefault(s["round"], []).append(s)
    rounds = sorted(by_round)
    out = []
    for rnd in rounds[:-1]:
        kinds = {str(s.get("kind")) for s in by_round[rnd]}
        if "tool_call" in kinds or "final" in kinds or "user" in kinds or not kinds - _NOT_AGENT:
            continue
        out.append(Finding("NO_TOOL", int(by_round[rnd][0]["step"]), f"round {rnd} has no tool call"))
    return out


# ---------------------------------------------------------------------------------------------
# Graphs and stored findings
# ---------------------------------------------------------------------------------------------


def _graphs_dir() -> Path:
    env = os.environ.get("RUNLENS_TOOL_GRAPHS")
    return Path(env) if env else GRAPHS_DIR


def has_graph_file(benchmark: str) -> bool:
    """True when the graphs folder has a tool graph for ``benchmark`` (``<graphs dir>/<benchmark>.json``)."""
    return (_graphs_dir() / f"{benchmark}.json").exists()


def read_graph_file(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """A ``{tool: [prerequisites]}`` JSON file, validated."""
    try:
        graph = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunlensError(f"{path}: cannot read tool graph: {exc}") from exc
    if not isinstance(graph, dict) or not all(
        isinstance(v, list) and all(isinstance(p, str) for p in v) for v in graph.values()
    ):
        raise RunlensError(f"{path}: a tool graph is an object {{tool: [prerequisite, ...]}}")
    return graph


def load_graph(con: duckdb.DuckDBPyConnection, benchmark: str) -> dict[str, list[str]] | None:
    """The benchmark's declared graph: the ``tool_graph`` column, else ``<graphs dir>/<benchmark>.json``."""
    rows = query_rows(con, "SELECT tool_graph::VARCHAR FROM benchmarks WHERE benchmark = ?", [benchmark])
    if rows and rows[0][0]:
        return json.loads(rows[0][0])
    path = _graphs_dir() / f"{benchmark}.json"
    return read_graph_file(path) if path.exists() else None


def _benchmark_steps(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return query_df(
        con,
        "SELECT s.attempt_id, s.step, s.round, s.kind, s.tool, s.args::VARCHAR AS args, s.error "
        "FROM steps s JOIN attempts a USING (attempt_id) WHERE a.run_id = ? "
        "ORDER BY s.attempt_id, s.step",
        [run_id],
    )


def compute_findings(con: duckdb.DuckDBPyConnection, *, benchmark: str, graph: Graph | None) -> pd.DataFrame:
    """Rule findings for every attempt of a benchmark (read run by run, so memory stays bounded)."""
    lazy_imports.allow()
    import pandas as pd

    out: list[dict[str, Any]] = []
    for (run_id,) in query_rows(con, "SELECT run_id FROM runs WHERE benchmark = ? ORDER BY run_id", [benchmark]):
        steps = _benchmark_steps(con, run_id)
        for attempt_id, g in steps.groupby("attempt_id", sort=True):
            for f in find_rule_errors(g.to_dict("records"), graph):
                out.append({"attempt_id": int(attempt_id), "code": f.code, "step": f.step, "detail": f.detail})
    return pd.DataFrame(out, columns=["attempt_id", "code", "step", "detail"])


def stored_hash(con: duckdb.DuckDBPyConnection, benchmark: str) -> str | None:
    """The graph hash the stored rule findings of a benchmark were computed with (None: never computed)."""
    rows = query_rows(con, "SELECT value FROM meta WHERE key = ?", [META_PREFIX + benchmark])
    return rows[0][0] if rows else None


def stale_benchmarks(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Benchmarks whose rule findings are missing or were computed with another graph."""
    names = [r[0] for r in query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY benchmark")]
    return [b for b in names if stored_hash(con, b) != graph_hash(load_graph(con, b))]


def label_file_attempts(
    con: duckdb.DuckDBPyConnection,
    *,
    file_id: int,
    own_transaction: bool = True,
    benchmarks: Iterable[str] | None = None,
    last_file_id: int | None = None,
) -> int:
    """Store rule findings for the attempts one ingested file brought; return how many were added.

    Only benchmarks that declare a tool graph are labelled at ingest (so logs without one pay nothing);
    the others get their findings from ``python -m analytics rules``. When a benchmark's findings were
    never computed and it already held attempts, or were computed with another graph, the whole
    benchmark is recomputed instead, so stored findings always match one graph. Ingest calls this inside the
    file's own transaction (``own_transaction=False``): a file and its findings go in together or not at all.
    ``benchmarks``: those of the file's attempts when the caller knows them (ingest does: it spares a scan of the
    attempts table per file); found from the stored rows when None. ``last_file_id``: the files ``file_id`` to
    ``last_file_id`` were written in this transaction (a batch, ``ingest.batches``; their rows all written before
    this runs) and are labelled together, as one file: the findings are those of labelling them one after another
    as each was written (a batch's later files are not "older" attempts of the benchmark, which would recompute it
    whole, findings of the later files included, and then add those again for each later file).
    """
    added = 0
    ids = [file_id, file_id if last_file_id is None else last_file_id]
    if benchmarks is None:
        benches = [
            row[0]
            for row in query_rows(
                con,
                "SELECT DISTINCT r.benchmark FROM attempts a JOIN runs r USING (run_id) "
                "WHERE a.file_id BETWEEN ? AND ? ORDER BY 1",
                ids,
            )
        ]
    else:
        benches = sorted(benchmarks)
    for bench in benches:
        graph = load_graph(con, bench)
        if graph is None:
            continue
        lazy_imports.allow()  # the findings are DataFrames (store.derived)
        import pandas as pd

        from store import derived

        ghash = graph_hash(graph)
        older = query_rows(
            con,
            "SELECT count(*) FROM attempts a JOIN runs r USING (run_id) "
            "WHERE r.benchmark = ? AND (a.file_id IS NULL OR a.file_id NOT BETWEEN ? AND ?)",
            [bench, *ids],
        )[0][0]
        if stored_hash(con, bench) != ghash and (older or stored_hash(con, bench) is not None):
            findings = compute_findings(con, benchmark=bench, graph=graph)
            derived.replace_rule_findings(
                con, bench, findings, ghash, meta_key=META_PREFIX + bench, own_transaction=own_transaction
            )
            added += len(findings)
            continue
        steps = query_df(
            con,
            "SELECT s.attempt_id, s.step, s.round, s.kind, s.tool, s.args::VARCHAR AS args, "
            "s.error FROM steps s JOIN attempts a USING (attempt_id) JOIN runs r USING (run_id) "
            "WHERE a.file_id BETWEEN ? AND ? AND r.benchmark = ? ORDER BY s.attempt_id, s.step",
            [*ids, bench],
        )
        rows = [
            {"attempt_id": int(aid), "code": f.code, "step": f.step, "detail": f.detail}
            for aid, g in steps.groupby("attempt_id", sort=True)
            for f in find_rule_errors(g.to_dict("records"), graph)
        ]
        findings = pd.DataFrame(rows, columns=["attempt_id", "code", "step", "detail"])
        with transaction(con, own=own_transaction):
            derived.insert_rule_findings(con, findings, ghash)
            derived.set_meta(con, META_PREFIX + bench, ghash)
        added += len(findings)
    return added

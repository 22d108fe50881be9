"""Rule findings written with a file's rows: which of its benchmarks have a tool graph (``label_rules``), and the
findings stored inside the file's transaction (``RuleLabels``) or a batch's (``batch_rule_labels``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ingest.records import Bundle, Known

if TYPE_CHECKING:  # (the validation workers import this module through ingest.pipeline: no DuckDB there)
    import duckdb


def label_rules(bundle: Bundle, known: Known) -> RuleLabels | None:
    """Rule findings of the file's attempts (benchmarks with a tool graph), inside the file's transaction; None
    when none of the file's benchmarks has a graph (stored or in the graphs folder): nothing to ask the store."""
    if not bundle.n_attempts:
        return None
    benchmarks = _file_benchmarks(bundle, known)
    if benchmarks is not None:
        from ingest.rules import has_graph_file

        graphs = dict(zip(bundle.benchmarks["benchmark"], bundle.benchmarks["tool_graph"], strict=True))
        stored = {b: known.definitions.get(("benchmark", b)) for b in benchmarks if b not in graphs}
        if any(row is None for row in stored.values()):
            benchmarks = None  # a definition this process has not seen (cannot happen): ask the store
        else:
            graphs.update({b: row["tool_graph"] for b, row in stored.items() if row is not None})
            benchmarks = {b for b in benchmarks if graphs[b] or has_graph_file(b)}
            if not benchmarks:
                return None
    return RuleLabels(None if benchmarks is None else frozenset(benchmarks))


@dataclass(frozen=True)
class RuleLabels:
    """A file's rule findings, stored inside its transaction (``before_commit(con, file_id)``); ``benchmarks``: its
    attempts' benchmarks that have a tool graph (None: found from the stored rows)."""

    benchmarks: frozenset[str] | None

    def __call__(self, con: duckdb.DuckDBPyConnection, file_id: int) -> None:
        from ingest.rules import label_file_attempts

        label_file_attempts(con, file_id=file_id, own_transaction=False, benchmarks=self.benchmarks)


def batch_rule_labels(labels: list[RuleLabels]) -> Callable[[duckdb.DuckDBPyConnection, list[int]], None] | None:
    """The rule findings of a batch's files (``labels``: those of its files that have any), stored together once
    every file's rows are written (``write_batch``'s ``before_commit(con, file_ids)``): the findings of the files
    labelled one after another (``ingest.rules.label_file_attempts``, ``last_file_id``)."""
    if not labels:
        return None
    benchmarks = (
        None if any(x.benchmarks is None for x in labels) else frozenset().union(*(x.benchmarks or () for x in labels))
    )

    def label(con: duckdb.DuckDBPyConnection, file_ids: list[int]) -> None:
        from ingest.rules import label_file_attempts

        label_file_attempts(
            con, file_id=file_ids[0], last_file_id=file_ids[-1], own_transaction=False, benchmarks=benchmarks
        )

    return label


def _file_benchmarks(bundle: Bundle, known: Known) -> set[str] | None:
    """The benchmarks of a bundle's attempts, from its runs and the known ones (None if one is not known)."""
    defined = dict(zip(bundle.runs["run_id"], bundle.runs["benchmark"], strict=True))
    found: set[str] = set()
    for tables in bundle.parts():
        for run_id in tables["attempts"].column("run_id").unique().to_pylist():
            bench = defined.get(run_id) or known.runs.get(run_id, (None,))[0]
            if bench is None:
                return None
            found.add(bench)
    return found

"""Rule findings recomputed for whole benchmarks and kept through the one writer: where a benchmark's tool graph
changed since its findings were computed (``--force``: everywhere), ``python -m analytics rules``. The rules and the
labelling of each ingested file, inside the file's own transaction, are ``ingest.rules``'s."""

from __future__ import annotations

from ingest.rules import META_PREFIX, Graph, compute_findings, graph_hash, load_graph, stored_hash
from store import Location, RunlensError, derived, query_rows, writer


def refresh_rules(
    db: Location = None,
    *,
    benchmark: str | None = None,
    force: bool = False,
    graph: Graph | None = None,
) -> dict[str, int]:
    """Recompute rule findings where the graph changed (or everywhere with ``force``).

    Args:
        db: database path.
        benchmark: only this benchmark.
        force: recompute even when the stored hash matches.
        graph: use this graph instead of the declared one (needs ``benchmark``).

    Returns:
        ``{benchmark: number of findings}`` for each benchmark recomputed.
    """
    if graph is not None and not benchmark:
        raise RunlensError("a graph given on the command line needs --benchmark")
    done: dict[str, int] = {}
    with writer(db) as con:
        names = [r[0] for r in query_rows(con, "SELECT benchmark FROM benchmarks ORDER BY benchmark")]
        if benchmark and benchmark not in names:
            raise RunlensError(f"no benchmark named {benchmark!r}")
        for name in [benchmark] if benchmark else names:
            g = graph if graph is not None else load_graph(con, name)
            ghash = graph_hash(g)
            if not force and stored_hash(con, name) == ghash:
                continue
            findings = compute_findings(con, benchmark=name, graph=g)
            derived.replace_rule_findings(con, name, findings, ghash, meta_key=META_PREFIX + name)
            done[name] = len(findings)
    return done

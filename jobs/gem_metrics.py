"""GEM embedding metrics kept through the one writer: embed every response (cached by text hash in
``embeddings``), compute RF, RC, AF, AC and injection (``analytics.gem.compute_metrics``) and replace the stored
``source = 'computed'`` values (``python -m analytics gem-metrics``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb
import numpy as np
import pandas as pd

from analytics import gem
from analytics.embeddings import cached_vectors, text_hash
from store import derived


def embed_cached(
    con: duckdb.DuckDBPyConnection, texts: Sequence[str], *, encode: Callable[[list[str]], np.ndarray], model: str
) -> np.ndarray:
    """Vectors for ``texts``: from the cache, else from ``encode`` (then cached). ``con`` must be writable."""
    hashes = [text_hash(t) for t in texts]
    have = cached_vectors(con, hashes, model=model)
    todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in have}
    if todo:
        vecs = encode(list(todo.values()))
        new = pd.DataFrame({"text_hash": list(todo), "model": model, "vector": [v.tolist() for v in vecs]})
        derived.insert_embeddings(con, new)
        have.update(dict(zip(todo, vecs, strict=True)))
    if not hashes:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([have[h] for h in hashes])


def compute_gem_metrics(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str,
    encode: Callable[[list[str]], np.ndarray],
    model: str,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed every response of ``benchmark`` and store RF, RC, AF, AC and injection (source 'computed').

    Returns the number of metric rows written. ``con`` must be a writer connection.
    """
    rows = gem.responses(con, benchmark=benchmark)
    rows = rows[rows["answer"].notna()]
    metrics = gem.compute_metrics(
        rows, lambda texts: embed_cached(con, texts, encode=encode, model=model), progress=progress
    )
    return store_metrics(con, metrics, attempt_ids=rows["attempt_id"].tolist(), model=model)


def store_metrics(
    con: duckdb.DuckDBPyConnection, metrics: pd.DataFrame, *, attempt_ids: Sequence[int], model: str
) -> int:
    """Replace the computed embedding metrics of ``attempt_ids`` for ``model`` (source 'computed')."""
    return derived.replace_computed_metrics(
        con, metrics, attempt_ids=attempt_ids, model=model, names=list(gem.EMBEDDING_METRICS)
    )

"""Derived data written through the one writer: sentence embeddings of failed attempts (for failure clusters).

analytics/ only reads; this module computes what is missing and appends it in one transaction."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from analytics.clusters import cached_failure_vectors, failure_texts
from analytics.db import transaction, writer
from analytics.embeddings import DEFAULT_MODEL, Embedder, text_hash


def store_vectors(con: object, texts: Sequence[str], vectors: np.ndarray, *, model: str) -> int:
    """Append (text hash, model, vector) rows to ``embeddings``; ``con`` is a writer connection."""
    if not len(texts):
        return 0
    frame = pd.DataFrame(
        {"text_hash": [text_hash(t) for t in texts], "model": model, "vector": [v.tolist() for v in vectors]}
    )
    con.register("_rl_vectors", frame)  # type: ignore[attr-defined]
    try:
        con.execute(  # type: ignore[attr-defined]
            "INSERT INTO embeddings SELECT n.text_hash, n.model, n.vector::FLOAT[] FROM _rl_vectors n "
            "ANTI JOIN embeddings e ON e.text_hash = n.text_hash AND e.model = n.model"
        )
    finally:
        con.unregister("_rl_vectors")  # type: ignore[attr-defined]
    return len(frame)


def embed_failures(
    db: str | os.PathLike[str] | None,
    *,
    benchmark: str,
    run_id: str | None = None,
    encode: Callable[[list[str]], np.ndarray] | None = None,
    model: str = DEFAULT_MODEL,
) -> int:
    """Embed the failed attempts of ``benchmark`` (or one run) that have no cached vector; return how many.

    ``encode`` defaults to the pinned all-MiniLM-L6-v2 (loaded only when something is missing).
    """
    with writer(db, publish_snapshot=False) as con:
        failures = failure_texts(con, benchmark=benchmark, run_id=run_id)
        _, missing = cached_failure_vectors(con, failures, model=model)
        if not missing:
            return 0
        vectors = (encode or Embedder(model).encode)(missing)
        with transaction(con):
            n = store_vectors(con, missing, vectors, model=model)
        from analytics.db import publish, resolve_db_path

        publish(con, resolve_db_path(db))
    return n

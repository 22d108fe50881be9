"""embeddings, loaded: cached vectors of texts from the ``embeddings`` table (the only module of the feature that
queries)."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd

from store import query_df


def cached_vectors(con: duckdb.DuckDBPyConnection, hashes: Sequence[str], *, model: str) -> dict[str, np.ndarray]:
    """Cached vectors of ``hashes`` for ``model``."""
    if not hashes:
        return {}
    con.register("emb_keys", pd.DataFrame({"text_hash": list(dict.fromkeys(hashes))}))
    try:
        df = query_df(
            con,
            "SELECT e.text_hash, e.vector FROM embeddings e JOIN emb_keys k USING (text_hash) WHERE e.model = ?",
            [model],
        )
    finally:
        con.unregister("emb_keys")
    return {h: np.asarray(v, dtype=np.float32) for h, v in zip(df["text_hash"], df["vector"], strict=True)}

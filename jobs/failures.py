"""Failure clusters' derived data: sentence embeddings of failed attempts and the clusters' cached LLM labels.

analytics/ only reads; this job computes what is missing and appends it through the one writer."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analytics import llm
from analytics.clusters import (
    LABEL_PROMPT_VERSION,
    Clusters,
    cached_failure_vectors,
    cached_labels,
    clean_label,
    failure_texts,
    label_messages,
)
from analytics.embeddings import DEFAULT_MODEL, Embedder, text_hash
from store import Location, derived, publish, resolve_db_path, transaction, writer


def store_vectors(con: object, texts: Sequence[str], vectors: np.ndarray, *, model: str) -> int:
    """Append (text hash, model, vector) rows to ``embeddings``; ``con`` is a writer connection."""
    if not len(texts):
        return 0
    frame = pd.DataFrame(
        {"text_hash": [text_hash(t) for t in texts], "model": model, "vector": [v.tolist() for v in vectors]}
    )
    derived.insert_embeddings(con, frame)  # type: ignore[arg-type]
    return len(frame)


def embed_failures(
    db: Location,
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
        publish(con, resolve_db_path(db))
    return n


def label_clusters(
    db: Location,
    clusters: Clusters,
    *,
    cfg: llm.LLMConfig | None = None,
    client: Any = None,
) -> int:
    """Ask the configured LLM for a one-line label of each cluster not labelled yet; return how many calls were made.

    Labels are cached in ``cluster_labels`` by (content key, model, prompt version): a cluster seen before costs
    nothing. Without a configured endpoint (``llm.llm_config()`` is None) nothing is called and 0 is returned.
    """
    cfg = cfg or llm.llm_config()
    if cfg is None:
        return 0
    todo = clusters.summary[clusters.summary["cluster_id"] >= 0]
    with writer(db, publish_snapshot=False) as con:
        have = cached_labels(con, todo["content_key"].tolist(), model=cfg.model)
        todo = todo[~todo["content_key"].isin(have)].drop_duplicates("content_key")
        if todo.empty:
            return 0
        client = client or llm.make_client(cfg)
        rows = []
        for r in todo.itertuples():
            res = llm.chat(client, cfg, label_messages(list(r.terms), list(r.examples)), max_tokens=60)
            rows.append((r.content_key, clean_label(res.text) or " · ".join(r.terms), res))
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        derived.insert_cluster_labels(
            con,
            [
                (key, cfg.model, LABEL_PROMPT_VERSION, label, res.input_tokens, res.output_tokens, now)
                for key, label, res in rows
            ],
        )
        publish(con, resolve_db_path(db))
    return len(rows)

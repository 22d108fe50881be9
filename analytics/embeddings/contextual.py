"""The packaged all-MiniLM-L6-v2 run in numpy: the transformer's forward pass without torch.

``NumpyMiniLM.encode`` gives the sentence vectors sentence-transformers gives (mean of the last layer over the
text's tokens, unit length; equal to float rounding, checked in tests/test_clusters.py) from the
package's ``model.safetensors`` and ``tokenizer.json``. No torch is imported: the clustering runs in the clusters
job's own process (jobs/clusters_worker.py), and also in any process that clusters, where importing torch would
cost its memory and start-up for a few hundred short texts (``static_model_path`` says why a server never imports
it); the failure clusters use it on the distinct documents of a tree (at most a thousand short texts), where a short
text costs 8-20 ms of CPU.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analytics.embeddings.compute import packaged_model_path

MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
BATCH = 64
KEEP = 20_000  # vectors kept per process (about 30 MB)
HEADS = 12
EPS = 1e-12


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


@functools.lru_cache(maxsize=1)
def _weights() -> tuple[dict[str, np.ndarray], Any]:
    """The model's tensors and its tokenizer (cutting at ``MAX_TOKENS``), loaded once per process."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    path = packaged_model_path()
    w = load_file(str(path / "model.safetensors"))
    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    return w, tok


@dataclass
class NumpyMiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions, 12 heads) in numpy; ``name`` as ``Embedder``'s."""

    batch_size: int = BATCH
    keep: int = KEEP
    _kept: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def name(self) -> str:
        """Model name stored with vectors: the same model as ``Embedder``'s default."""
        from analytics.embeddings.compute import DEFAULT_MODEL

        return DEFAULT_MODEL

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors, one row per text; texts of similar length are batched together (less padding). The
        vectors of the ``keep`` texts used last are kept (a clustering computed again after an upload embeds
        only the new documents)."""
        texts = list(texts)
        w, tok = _weights()
        out = np.empty((len(texts), w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        with self._lock:  # one instance serves every thread of a server
            new = [t for t in dict.fromkeys(texts) if t not in self._kept]
            if new:
                from threadpoolctl import threadpool_limits

                # One BLAS thread: the batches' products are small, and on a loaded machine a second thread spins
                # waiting for the first (at load 18 it took several times the CPU of one thread).
                ids = [e.ids for e in tok.encode_batch(new)]
                order = np.argsort([len(i) for i in ids], kind="stable")
                vecs = np.empty((len(new), out.shape[1]), dtype=np.float32)
                with threadpool_limits(1, user_api="blas"):
                    for s in range(0, len(order), self.batch_size):
                        rows = order[s : s + self.batch_size]
                        vecs[rows] = self._forward(w, [ids[i] for i in rows])
                self._kept.update(zip(new, vecs, strict=True))
            for i, t in enumerate(texts):
                out[i] = self._kept[t] = self._kept.pop(t)  # used: the newest again
            for t in list(self._kept)[: max(0, len(self._kept) - max(self.keep, len(new)))]:  # the least recent
                del self._kept[t]
        return out

    @staticmethod
    def _forward(w: dict[str, np.ndarray], ids: list[list[int]]) -> np.ndarray:
        """The pooled, unit-length vectors of one batch of token id lists."""
        from scipy.special import erf

        n, length = len(ids), max(len(i) for i in ids)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for r, i in enumerate(ids):
            tokens[r, : len(i)] = i
            mask[r, : len(i)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:length][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        hidden = x.shape[-1]
        head = hidden // HEADS
        blocked = (1.0 - mask)[:, None, None, :] * np.finfo(np.float32).min  # padding is never attended to
        layer = 0
        while f"encoder.layer.{layer}.attention.self.query.weight" in w:
            p = f"encoder.layer.{layer}."

            def dense(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q, k, v = (
                dense(x, "attention.self." + m).reshape(n, length, HEADS, head).transpose(0, 2, 1, 3)
                for m in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            att = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, hidden)
            x = _layer_norm(
                dense(att, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            mid = dense(x, "intermediate.dense")
            mid = 0.5 * mid * (1.0 + erf(mid / np.sqrt(2.0)))  # BERT's exact GELU
            x = _layer_norm(
                dense(mid, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
            )
            layer += 1
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

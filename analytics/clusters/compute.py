"""Clustering failure vectors with the number of clusters chosen from the data, and what names a cluster.

``cluster_vectors`` (docs/failure_analysis.md has the measurements):

1. **distinct documents**: failures with the same document (``load.failure_documents`` cuts ids, numbers, paths
   and quoted values, so many reports of one cause are one text) are one point; how often a wording occurs does
   not make it a cluster of its own;
2. **centre**: the cached vectors' mean is subtracted and rows re-normalised (for steps 4-5 and the
   representatives);
3. a seeded **sample** of at most ``MAX_POINTS`` distinct documents is described by ``document_features``: each
   document is split (``document_parts``) into its free text (what the failing steps, the answer and the last
   result say) and its structure (where it failed, the answer against the reference, trajectory and status
   hints, an error code in a code field or in brackets); the free text's **meaning** (the static model's token vectors weighted by their inverse document
   frequency among the sample: a word every failure has weighs nothing; without the frames ``frame_spans`` finds,
   an envelope around every cause's message), **words** (TF-IDF of words and word
   pairs reduced to ``SVD_DIMS`` dimensions), the words' **context** (``context_features``: each word as its
   positive PMI with the words it is said beside, so two wordings of a cause said in that cause's frames are alike
   though they share no word), in a tree of at most ``SENTENCE_MAX`` distinct documents the free text's
   **sentence** vector by the full all-MiniLM-L6-v2 (``NumpyMiniLM``, centred: alone it separates the causes of
   the tuning sets better than the static model; about 8-20 ms of CPU a document, so only where the tree is
   small), and a light one-hot of the **structure**, side by side
   (``BLOCK_WEIGHTS``). The document's own leads ("failed:", "final answer:", "(differs from the reference)",
   "no tool called") then no longer pull causes together, which the cached vector of the whole document did;
4. **average linkage** (cosine) on the sample, **cut at the distance** ``CUT_DISTANCE``: two groups stay apart when
   their members' mean cosine similarity is below 1 - ``CUT_DISTANCE`` (0.15), so the number of clusters follows
   from the data and one cause worded several ways, whose wordings share words or meaning, is one cluster. Weights
   and cut were chosen on tuning sets (seeds 1-8 of tests/failure_sets.py, tests/failure_sets_ops.py and
   tests/failure_sets_web.py; with the last result only after a repeated call, the first two's mean ARI at
   0.85 / 0.9 / 0.95 was 0.91 / 0.93 / 0.71 and 0.77 / 0.84 / 0.73), never on the held-out seeds nor the demo. It replaced the best-silhouette cut (mean ARI
   0.54: the silhouette prefers the wordings of a cause, which are tight groups, to the cause);
   **per set**, the finer cut ``FINER_CUT`` (0.825) is taken instead when its clusters are more stable across
   seeded subsamples than the default's by more than ``STABILITY_MARGIN`` (``stable_cut``): a cut at the edge of
   two groups joins them in some subsamples and not in others. Chosen on the same tuning seeds (silhouette among
   cuts and the largest gap between merge heights were worse: docs/failure_analysis.md); a **small tree** (at most
   ``SMALL_TREE`` distinct documents) is then cut in the widest gap between its merge heights up to
   ``GAP_CUT_MAX`` when that gap is at least ``GAP_MIN`` (``small_tree_cut``): with few documents a cause's
   wordings are seen in few frames and join a little above the cut, well before the causes do (chosen on the same
   tuning seeds and 14 more `web` tuning sets);
5. **every other distinct document** joins the nearest cluster centre of the centred vectors (chunks of ``CHUNK``
   rows: 1M failures never build an n x n matrix); members of clusters smaller than ``MIN_SIZE`` failures join
   the nearest larger cluster when its centre is similar at all (``ABSORB_SIMILARITY``), else they are ``-1``,
   "unclustered", said in so many words.

Every step is linear in the number of failures except the tree, which is built on at most ``MAX_POINTS`` rows.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from analytics.embeddings.compute import STATIC_DIMS

SENTENCE_DIMS = 384  # all-MiniLM-L6-v2's vectors

MAX_POINTS = 3000
MIN_SIZE = 3
SVD_DIMS = 100
CUT_DISTANCE = 0.85
ABSORB_SIMILARITY = 0.0
MIN_SIMILARITY = 0.0
CHUNK = 65536
BLOCK_WEIGHTS = {"meaning": 1.0, "sentence": 1.0, "words": 1.0, "context": 1.0, "structure": 0.1}
SENTENCE_MAX: int | None = 1000  # a tree of at most this many distinct documents gets the sentence block
CONTEXT_WORDS = 2000  # the context block's vocabulary: at most this many words, the most frequent
SEED = 0
SPAN_SHARE: float | None = 0.3  # a run of SPAN_WORDS words in at least this share of the documents is cut
SPAN_WORDS = 3
ANSWER_HUB_RATIO: float | None = 3.0  # a final answer counted this many times its document's rarest segment is cut
FRAME_SHARE: float | None = 0.11  # a run said around this share of the documents' different contexts is a frame
FINER_CUT: float | None = 0.825  # the finer cut taken instead of CUT_DISTANCE when it is clearly more stable
STABILITY_MARGIN = 0.02  # ... by at least this much mean ARI (subsample against the whole tree)
STABILITY_DRAWS = 6
STABILITY_SHARE = 0.8
SMALL_TREE: int | None = 150  # a tree of at most this many distinct documents is cut in its widest gap above the cut
GAP_CUT_MAX = 0.925  # ... among the merge heights up to this distance
GAP_MIN = 0.03  # ... when that gap is at least this wide


def centred(vectors: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """Rows minus their mean, unit length again (rows that become zero stay zero). ``in_place``: in ``vectors``
    itself when they are float32 (the caller's array is then the centred one: no second copy of a million rows)."""
    x = np.asarray(vectors, dtype=np.float32) if in_place else np.array(vectors, dtype=np.float32)
    x -= x.mean(axis=0, dtype=np.float64).astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]  # a quarter of np.linalg.norm's time at 1M rows
    x /= np.where(norms > 1e-9, norms, 1.0)
    return x


def text_features(texts: list[str], *, dims: int = SVD_DIMS, seed: int = SEED) -> tuple[np.ndarray, Any] | None:
    """Unit rows of a TF-IDF of the documents' words and word pairs (sublinear counts; every term, since the
    documents are distinct: a word of one wording sets it apart) reduced by a seeded truncated SVD, and the TF-IDF matrix itself; None when the documents have fewer
    than two such terms."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        tfidf = TfidfVectorizer(
            ngram_range=(1, 2), sublinear_tf=True, min_df=1, token_pattern=r"(?u)\b[^\W\d_][\w'-]+\b"
        ).fit_transform(texts)
    except ValueError:  # no term at all
        return None
    if tfidf.shape[1] < 2:
        return None
    reduced = TruncatedSVD(min(dims, tfidf.shape[1] - 1), random_state=seed).fit_transform(tfidf)
    return (reduced / np.maximum(np.linalg.norm(reduced, axis=1, keepdims=True), 1e-9)).astype(np.float32), tfidf


def context_features(texts: list[str], *, dims: int = SVD_DIMS, seed: int = SEED) -> np.ndarray | None:
    """Each document described by the **contexts of its words** (a second-order co-occurrence): every word (at
    most ``CONTEXT_WORDS``, the most frequent) is the row of its positive pointwise mutual information with the
    other words it shares a document with, among these documents; a document is the IDF-weighted sum of its
    words' rows, centred, reduced by a seeded truncated SVD when wider than ``dims``, unit length. Two wordings of
    one cause that share no word ("captcha challenge displayed", "please verify you are a human") are alike here
    when their words are said in the same frames ("Security check. …", "… - reference id …"): the first-order
    words block cannot join them, the meaning block only when the model knows. None when no two words are said
    together."""
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    try:
        x = CountVectorizer(
            binary=True, max_features=CONTEXT_WORDS, token_pattern=r"(?u)\b[^\W\d_][\w'-]+\b", dtype=np.float64
        ).fit_transform(texts)
    except ValueError:  # no word at all
        return None
    if x.shape[1] < 2:
        return None
    co = sparse.csr_matrix(x.T @ x).tocoo()  # the diagonal (a word's document count) counts in the totals
    total = co.data.sum()
    p_word = np.asarray(co.tocsr().sum(axis=1)).ravel() / total
    pmi = np.log((co.data / total) / (p_word[co.row] * p_word[co.col]))
    keep = (pmi > 0) & (co.row != co.col)  # positive, and a word is not its own context
    if not keep.any():  # no word said beside another
        return None
    ppmi = sparse.csr_matrix((pmi[keep], (co.row[keep], co.col[keep])), shape=co.shape)
    idf = np.log(x.shape[0] / np.maximum(np.asarray(x.sum(axis=0)).ravel(), 1.0))
    docs = np.asarray((x.multiply(idf[None, :]).tocsr() @ ppmi).todense(), dtype=np.float32)
    docs = centred(docs)
    if docs.shape[1] > dims:
        from sklearn.decomposition import TruncatedSVD

        docs = TruncatedSVD(dims, random_state=seed).fit_transform(docs)
        docs /= np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-9)
    return docs.astype(np.float32)


# The document's own words (analytics/clusters/load.py writes them): segment leads, the answer's comparison with the
# reference, the trajectory's and the status's hints. They are the document's structure, not its text.
SEGMENT_SEP = " | "
_VERSUS = re.compile(
    r"\s*\(?\b((?:the same number as|a different number than|the same as|the opposite yes/no of|"
    r"different numbers than|differs from) the reference)\)?\s*$"
)
_LETTER = re.compile(r"[^\W\d_]")
_FLAGS = ("no tool called", "no final answer")
# An error code in a code field or in brackets ("code: e_action", "failed [e_browser]"): a snake_case name the free
# text drops, kept as a structure token (several causes share a code; it tips two causes with different codes apart).
_CODE = re.compile(
    r"\b(?:code|error_code|errno)\W{1,3}([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b|\[([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\]"
)
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")  # snake_case names: a function, a column, a key


def document_segments(doc: str) -> tuple[list[str], list[bool], list[str]]:
    """A failure document split into its **free text**, a list of segments (what the failing steps and the answer
    say, without the document's own leads, and without snake_case identifiers, which name a function or a column
    of one run, not a cause), which of them is the final answer, and its **structure** (where it failed, the answer against the reference, the trajectory's and the
    status's hints, each a token). A text not written by ``failure_documents`` is all free text."""
    free: list[str] = []
    answer: list[bool] = []
    struct: list[str] = []
    for raw in doc.split(SEGMENT_SEP):
        seg = raw.strip()
        if seg.startswith("failed: "):
            free.append(seg[len("failed: ") :])
            answer.append(False)
            struct.append("failed")
        elif seg.startswith("final answer: "):
            body = seg[len("final answer: ") :]
            m = _VERSUS.search(body)
            if m:
                struct.append(m.group(1))
                body = body[: m.start()]
            if body.strip():
                free.append(body)
                answer.append(True)
                struct.append("answer")
        elif seg in _FLAGS:
            struct.append(seg)
        elif seg.startswith("repeated call"):
            struct.append("repeated call")
            free.append(seg[len("repeated call") :].lstrip(": "))
            answer.append(False)
        elif seg.startswith("last result: "):
            free.append(seg[len("last result: ") :])
            answer.append(False)
        elif seg.startswith("skipped "):
            struct += ["skipped " + t.strip() for t in seg[len("skipped ") :].split(",")]
        elif seg.startswith("status "):
            struct.append(seg)
        else:
            free.append(seg)
            answer.append(False)
    struct += sorted({"code " + (m.group(1) or m.group(2)) for f in free for m in _CODE.finditer(f)})
    texts = [" ".join(_IDENTIFIER.sub(" ", f).split()) for f in free]
    keep = [i for i, t in enumerate(texts) if t]
    return [texts[i] for i in keep], [answer[i] for i in keep], struct


def document_parts(doc: str) -> tuple[str, list[str]]:
    """``document_segments`` with the free text's segments joined by " ; "."""
    free, _, struct = document_segments(doc)
    return " ; ".join(free), struct


def cut_said_after_anything(docs: list[tuple[list[str], list[bool]]], *, ratio: float | None = None) -> list[list[str]]:
    """Each document's free segments without a final answer said after many different things: a segment is counted
    in the distinct documents with at least two free segments it appears in; a final answer counted more than
    ``ratio`` (``ANSWER_HUB_RATIO``) times as often as the document's least counted segment is cut (a closing line
    said after every kind of page, "I could not finish the task on the website", is a consequence; what the page
    said is why). The least counted segment always stays; a tool's result is never cut. None: unchanged."""
    ratio = ANSWER_HUB_RATIO if ratio is None else ratio
    if ratio is None:
        return [ss for ss, _ in docs]
    from collections import Counter

    count = Counter(s for ss, _ in docs if len(ss) > 1 for s in set(ss))
    out = []
    for ss, is_answer in docs:
        if len(ss) < 2:
            out.append(ss)
            continue
        low = min(count[s] for s in ss)
        out.append([s for s, a in zip(ss, is_answer, strict=True) if not (a and count[s] > ratio * low)])
    return out


@functools.lru_cache(maxsize=1)
def _sentence_model() -> Any:
    """The full all-MiniLM-L6-v2 in numpy (no torch), loaded once per process."""
    from analytics.embeddings.contextual import NumpyMiniLM

    return NumpyMiniLM()


@functools.lru_cache(maxsize=1)
def _static() -> Any:
    """The static model, loaded once per process."""
    from analytics.embeddings import StaticEmbedder

    return StaticEmbedder()


_SPAN_WORD = re.compile(r"[^\W\d_][\w'-]+")


def _grams(text: str, n: int) -> tuple[list[str], set[tuple[str, ...]]]:
    words = _SPAN_WORD.findall(text.lower())
    return words, {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _entropy(counts: Any) -> float:
    """Entropy in bits of a ``Counter``'s distribution."""
    p = np.fromiter(counts.values(), dtype=np.float64)
    p /= p.sum()
    return float(-(p * np.log2(p)).sum())


def frame_spans(words: list[list[str]], *, n: int, share: float | None = None) -> set[tuple[str, ...]]:
    """Runs of ``n`` words that are a **frame** around a variable part (a driver's envelope "failed …: <message>
    call log: waiting for selector"), found from the data like a log-template miner: a run whose texts before it,
    or after it, are so varied that their perplexity (2 to the entropy of the distinct word sequences on that side,
    one per text holding the run) reaches ``share`` (``FRAME_SHARE``) of the number of texts. A cause's own words
    sit beside a few frames of that cause; a frame sits beside every cause's message. None: no frame."""
    share = FRAME_SHARE if share is None else share
    if share is None:
        return set()
    from collections import Counter, defaultdict

    left: dict[tuple[str, ...], Counter[tuple[str, ...]]] = defaultdict(Counter)
    right: dict[tuple[str, ...], Counter[tuple[str, ...]]] = defaultdict(Counter)
    for w in words:
        seen = set()
        for i in range(len(w) - n + 1):
            g = tuple(w[i : i + n])
            if g not in seen:  # once per text
                seen.add(g)
                left[g][tuple(w[:i])] += 1
                right[g][tuple(w[i + n :])] += 1
    floor = float(np.log2(max(share * len(words), 2.0)))  # perplexity >= share * texts, in bits
    return {
        g
        for g, lc in left.items()
        if max(len(lc), len(right[g])) >= 2**floor and max(_entropy(lc), _entropy(right[g])) >= floor
    }


def cut_common_spans(
    texts: list[str],
    *,
    share: float | None = None,
    n: int | None = None,
    spans: set[tuple[str, ...]] | None = None,
    frames: bool = False,
) -> list[str]:
    """The free texts without the runs of ``n`` words (``SPAN_WORDS``) found in at least ``share`` (``SPAN_SHARE``)
    of them, and (``frames``) the runs ``frame_spans`` finds: boilerplate *inside* a segment (a driver's envelope
    around the message that differs), which the whole-segment cut of the document builder cannot see. A text is then its remaining words; one left with none
    keeps its words. None (the default share when ``SPAN_SHARE`` is None): the texts unchanged."""
    share = SPAN_SHARE if share is None else share
    n = n or SPAN_WORDS
    if (share is None and not spans) or len(texts) < 10:
        return texts
    words, grams = map(list, zip(*(_grams(t, n) for t in texts), strict=True))
    from collections import Counter

    df = Counter(g for gs in grams for g in gs)
    common = {g for g, k in df.items() if share is not None and k >= share * len(texts)} | (spans or set())
    if frames:
        common |= frame_spans(words, n=n)
    if not common:
        return texts
    out = []
    for text, w in zip(texts, words, strict=True):
        cut = np.zeros(len(w), dtype=bool)
        for i in range(len(w) - n + 1):
            if tuple(w[i : i + n]) in common:
                cut[i : i + n] = True
        kept = [x for x, c in zip(w, cut, strict=True) if not c]
        out.append(" ".join(kept) if kept and cut.any() else text)  # nothing cut: the text as it was
    return out


def document_features(texts: list[str], *, seed: int = SEED, spans: set[tuple[str, ...]] | None = None) -> np.ndarray:
    """The tree's features of distinct documents, side by side, each block unit length and weighted
    (``BLOCK_WEIGHTS``): ``meaning``, the static model's token vectors of the free text weighted by their inverse
    document frequency among these documents (``StaticEmbedder.encode_idf``), centred; ``sentence``, for at most
    ``SENTENCE_MAX`` documents, the full all-MiniLM-L6-v2's vector of the free text (``NumpyMiniLM``), centred;
    ``words``, a TF-IDF of the
    free text's words and word pairs reduced by SVD (``text_features``); ``structure``, a one-hot of the
    structure's tokens, light: it tips documents whose words are neither alike nor apart, it never joins or splits
    causes by itself."""
    segs = [document_segments(t) for t in texts]
    kept = cut_said_after_anything([(f, a) for f, a, _ in segs])
    parts = [(" ; ".join(f), st) for f, (_, _, st) in zip(kept, segs, strict=True)]
    has_text = np.array([_LETTER.search(f) is not None for f, _ in parts], dtype=bool)
    blocks: list[tuple[float, np.ndarray]] = []
    if has_text.sum() >= 2:  # a document without words has zeros there: its structure alone places it
        plain = [f for (f, _), keep in zip(parts, has_text, strict=True) if keep]
        free = cut_common_spans(plain, spans=spans)
        framed = cut_common_spans(plain, spans=spans, frames=True) if FRAME_SHARE is not None else free
        meaning = np.zeros((len(texts), STATIC_DIMS), dtype=np.float32)
        meaning[has_text] = centred(_static().encode_idf(framed))  # frames cut from the meaning only
        blocks.append((BLOCK_WEIGHTS["meaning"], meaning))
        if SENTENCE_MAX is not None and len(texts) <= SENTENCE_MAX:  # the full model, where it is affordable
            sentence = np.zeros((len(texts), SENTENCE_DIMS), dtype=np.float32)
            sentence[has_text] = centred(_sentence_model().encode(plain))
            blocks.append((BLOCK_WEIGHTS["sentence"], sentence))
        words = text_features(free, seed=seed)
        if words is not None:
            block = np.zeros((len(texts), words[0].shape[1]), dtype=np.float32)
            block[has_text] = words[0]
            blocks.append((BLOCK_WEIGHTS["words"], block))
        context = context_features(free, seed=seed)
        if context is not None:
            block = np.zeros((len(texts), context.shape[1]), dtype=np.float32)
            block[has_text] = context
            blocks.append((BLOCK_WEIGHTS["context"], block))
    vocab = sorted({tok for _, st in parts for tok in st})
    if vocab:
        index = {tok: i for i, tok in enumerate(vocab)}
        onehot = np.zeros((len(texts), len(vocab)), dtype=np.float32)
        for i, (_, st) in enumerate(parts):
            onehot[i, [index[tok] for tok in st]] = 1.0
        norms = np.linalg.norm(onehot, axis=1, keepdims=True)
        blocks.append((BLOCK_WEIGHTS["structure"], onehot / np.where(norms > 0, norms, 1.0)))
    if not blocks:
        return np.zeros((len(texts), 1), dtype=np.float32)
    total = sum(w for w, _ in blocks)
    out = np.hstack([np.sqrt(w / total) * b for w, b in blocks]).astype(np.float32)
    empty = np.asarray(~(np.abs(out) > 0).any(axis=1))  # nothing at all: a point of its own (cosine needs a direction)
    return np.hstack([out, empty.reshape(-1, 1).astype(np.float32)]) if empty.any() else out


def stable_cut(
    features: np.ndarray, tree: np.ndarray, cut: float, *, seed: int = SEED, condensed: np.ndarray | None = None
) -> float:
    """``FINER_CUT`` when its clusters are more stable than ``cut``'s by more than ``STABILITY_MARGIN``, else
    ``cut``. Stability of a cut: the mean adjusted Rand index between the clusters of the tree of a seeded
    subsample (``STABILITY_SHARE`` of the rows, ``STABILITY_DRAWS`` times) and the whole tree's clusters of the same
    rows, both cut at that distance. A cut inside a group that is really one cause splits it differently in every
    subsample; a cut between causes does not. ``condensed``: the rows' cosine distances (``pdist``) when the caller
    has them already (the tree's)."""
    if FINER_CUT is None or cut <= FINER_CUT or len(features) < 20:
        return cut
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist, squareform
    from sklearn.metrics import adjusted_rand_score

    if condensed is None:  # the cosine distances the tree was built from
        condensed = pdist(features.astype(np.float64), "cosine")
    dist = squareform(condensed, checks=False)
    cuts = (FINER_CUT, cut)
    whole = [fcluster(tree, c, criterion="distance") for c in cuts]
    rng = np.random.default_rng(seed)
    score = np.zeros(len(cuts))
    for _ in range(STABILITY_DRAWS):
        rows = np.sort(rng.choice(len(features), int(STABILITY_SHARE * len(features)), replace=False))
        sub = linkage(squareform(dist[np.ix_(rows, rows)], checks=False), method="average")
        for j, c in enumerate(cuts):
            score[j] += adjusted_rand_score(fcluster(sub, c, criterion="distance"), whole[j][rows])
    score /= STABILITY_DRAWS
    return FINER_CUT if score[0] > score[1] + STABILITY_MARGIN else cut


def small_tree_cut(tree: np.ndarray, cut: float) -> float:
    """The cut of a **small tree** (at most ``SMALL_TREE`` rows): the middle of the widest gap between the tree's
    merge heights from ``cut`` up to ``GAP_CUT_MAX``, when that gap is at least ``GAP_MIN`` wide; else ``cut``.
    With few distinct documents each wording of a cause is seen in few frames, so the wordings stay apart a little
    above the cut chosen for larger sets, and then join well before the causes do: a wide gap between merge
    heights is a partition the tree keeps over a range of distances. Larger trees keep ``cut``."""
    if SMALL_TREE is None or len(tree) + 1 > SMALL_TREE:
        return cut
    heights = np.sort(tree[:, 2])
    edges = np.concatenate([[cut], heights[(heights > cut) & (heights < GAP_CUT_MAX)], [GAP_CUT_MAX]])
    gaps = np.diff(edges)
    i = int(np.argmax(gaps))
    return float((edges[i] + edges[i + 1]) / 2) if i > 0 and gaps[i] >= GAP_MIN else cut


def nearest(x: np.ndarray, centres: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Index of each row's nearest centre (cosine) and the similarity, in chunks (bounded memory). ``rows``: only
    these rows of ``x``, in this order (taken a chunk at a time: ``x[rows]`` whole would copy most of a million
    vectors)."""
    unit = centres / np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-9)
    n = len(x) if rows is None else len(rows)
    idx = np.empty(n, dtype=np.int64)
    sim = np.empty(n, dtype=np.float32)
    for s in range(0, n, CHUNK):
        block = (x[s : s + CHUNK] if rows is None else x[rows[s : s + CHUNK]]) @ unit.T.astype(np.float32)
        idx[s : s + CHUNK] = block.argmax(axis=1)
        sim[s : s + CHUNK] = block.max(axis=1)
    return idx, sim


def renumber(labels: np.ndarray, *, min_size: int) -> np.ndarray:
    """Clusters numbered 0.. from the largest (ties by first member); those under ``min_size`` (and -1) become -1."""
    ids, first, counts = np.unique(labels, return_index=True, return_counts=True)
    order = sorted(range(len(ids)), key=lambda i: (-counts[i], first[i]))
    mapping, next_id = {}, 0
    for i in order:
        if counts[i] >= min_size and ids[i] >= 0:
            mapping[ids[i]] = next_id
            next_id += 1
        else:
            mapping[ids[i]] = -1
    lut = np.vectorize(mapping.get, otypes=[int])
    return lut(labels) if len(labels) else labels.astype(int)


def distinct_rows(texts: list[str] | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct text and, for every row, the index of its distinct text (without texts, every
    row is its own). Exact duplicates are one point of the tree: a wording's frequency does not make it a cluster."""
    if texts is None:
        return np.arange(n), np.arange(n)
    import pandas as pd

    codes, _ = pd.factorize(pd.Series(texts, dtype=object))
    first = np.full(int(codes.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n))
    return first, codes


def cluster_vectors(
    vectors: np.ndarray,
    texts: list[str] | None = None,
    *,
    min_size: int = MIN_SIZE,
    seed: int = SEED,
    max_points: int = MAX_POINTS,
    cut_distance: float = CUT_DISTANCE,
    choose_cut: bool = True,
    is_centred: bool = False,
) -> np.ndarray:
    """Cluster labels (0.. by size, -1 unclustered) of the rows of ``vectors`` (and their documents ``texts``, in
    the same order, when given); see the module docstring. ``is_centred``: the rows are ``centred`` already (no
    second copy of a million vectors)."""
    n = len(vectors)
    if n == 0:
        return np.zeros(0, dtype=int)
    if n < max(2 * min_size, 4):
        return np.full(n, 0 if n >= min_size else -1)
    x = vectors if is_centred else centred(vectors)
    first, codes = distinct_rows(texts, n)
    m = len(first)
    rng = np.random.default_rng(seed)
    fit_u = np.sort(rng.choice(m, max_points, replace=False)) if m > max_points else np.arange(m)
    if texts is not None:
        feats = document_features([texts[i] for i in first[fit_u]], seed=seed)
    else:  # vectors only: centred again over the distinct rows
        feats = centred(x[first[fit_u]])
    if len(fit_u) >= 2:
        from scipy.cluster.hierarchy import fcluster, linkage
        from scipy.spatial.distance import pdist

        condensed = pdist(feats.astype(np.float64), "cosine")  # once, for the tree and its stability
        tree = linkage(condensed, method="average")
        if choose_cut:
            cut_distance = stable_cut(feats, tree, cut_distance, seed=seed, condensed=condensed)
            cut_distance = small_tree_cut(tree, cut_distance)
        fitted = fcluster(tree, cut_distance, criterion="distance") - 1
    else:
        fitted = np.zeros(len(fit_u), dtype=np.int64)
    by_distinct = np.full(m, -1, dtype=np.int64)
    by_distinct[fit_u] = fitted
    if len(fit_u) < m:  # the other distinct texts join the nearest cluster centre of the centred vectors
        gids = np.unique(fitted)
        reps = x[first[fit_u]]
        centres_x = np.stack([reps[fitted == g].mean(axis=0) for g in gids])
        rest = np.setdiff1d(np.arange(m), fit_u)
        idx, sim = nearest(x, centres_x, first[rest])
        by_distinct[rest] = np.where(sim < MIN_SIMILARITY, -1, gids[idx])
    labels = by_distinct[codes]
    return renumber(absorb_small(x, labels, min_size=min_size), min_size=min_size)


def absorb_small(x: np.ndarray, labels: np.ndarray, *, min_size: int) -> np.ndarray:
    """``labels`` with the members of clusters under ``min_size`` failures moved to the nearest centre (centred
    vectors) of a cluster that has at least ``min_size``, when that centre's similarity is above
    ``ABSORB_SIMILARITY``; the others keep their small cluster (``renumber`` makes them -1, unclustered)."""
    ids, counts = np.unique(labels[labels >= 0], return_counts=True)
    big, small = ids[counts >= min_size], ids[counts < min_size]
    if not len(big) or not len(small):
        return labels
    out = labels.copy()
    rows = np.flatnonzero(np.isin(labels, small))
    from scipy import sparse

    rows_big = np.flatnonzero(np.isin(labels, big))
    which = np.searchsorted(big, labels[rows_big])
    onehot = sparse.csr_matrix((np.ones(len(rows_big), dtype=np.float32), (which, rows_big)), shape=(len(big), len(x)))
    centres = np.asarray(onehot @ x)  # sums: ``nearest`` compares directions only
    idx, sim = nearest(x, centres, rows)
    out[rows] = np.where(sim > ABSORB_SIMILARITY, big[idx], labels[rows])
    return out

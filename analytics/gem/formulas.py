"""GEM-Bench's formulas (Appendix C.1) on sentence embeddings and ad masks: response and ad flow and coherence, level aggregation, cost overall; and the vocabulary of dimensions, metrics and sources."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from store import RunlensError

DIMENSIONS = ("accuracy", "naturalness", "personality", "trust", "notice", "click")


QUANT = {
    "RF": "response_flow",
    "RC": "response_coherence",
    "AF": "ad_flow",
    "AC": "ad_coherence",
    "IR": "injection",
    "CTR": "click",
}


EMBEDDING_METRICS = ("response_flow", "response_coherence", "ad_flow", "ad_coherence", "injection")


LEVELS = {"bad": 0, "moderate": 1, "good": 2}


SOURCES = ("log", "computed")


AD_PREFIX = ">> AD | "


TEXT_PREFIX = "        "


class GemError(RunlensError):
    """GEM-Bench data missing or inconsistent."""


_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str | None) -> list[str]:
    """Sentences of a response: split after . ! ? followed by space and an upper-case letter or digit.

    Dots inside URLs or numbers never split (no space follows them); blank lines split too.
    """
    if not text:
        return []
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)", text):
        out.extend(s.strip() for s in _SPLIT.split(block.strip()) if s.strip())
    return out


def parse_ads(value: Any) -> list[dict[str, str]]:
    """The ads stored with an attempt: ``ads`` list or single ``ad`` object (``name``/``url``/``text``)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    return [
        {k: str(v) for k, v in ad.items() if k in ("name", "url", "text") and v} for ad in value if isinstance(ad, dict)
    ]


def ad_mask(sentences: Sequence[str], ads: Sequence[dict[str, str]]) -> np.ndarray:
    """True for each sentence that carries an ad: its URL (or URL without scheme), its name, or its text."""
    keys: list[str] = []
    for ad in ads:
        url = ad.get("url", "").strip().lower()
        if url:
            keys.append(url)
            bare = re.sub(r"^https?://(www\.)?", "", url).rstrip("/")
            if len(bare) > 4:
                keys.append(bare)
        if len(ad.get("name", "").strip()) > 2:
            keys.append(ad["name"].strip().lower())
    texts = {ad["text"].strip().lower() for ad in ads if ad.get("text")}
    mask = [
        any(k in s.lower() for k in keys) or any(s.strip().lower() in t for t in texts if len(s) > 20)
        for s in sentences
    ]
    return np.array(mask, dtype=bool)


def _unit(emb: np.ndarray) -> np.ndarray:
    emb = np.asarray(emb, dtype=float)
    norms = np.linalg.norm(emb, axis=-1, keepdims=True)
    return emb / np.where(norms == 0, 1.0, norms)


def response_flow(emb: np.ndarray) -> float:
    """f(r): mean cosine similarity of consecutive sentences (NaN with fewer than two)."""
    u = _unit(emb)
    if len(u) < 2:
        return math.nan
    return float(np.mean(np.sum(u[:-1] * u[1:], axis=1)))


def response_coherence(emb: np.ndarray) -> float:
    """c(r): mean cosine similarity of each sentence to the mean sentence embedding."""
    if len(emb) < 2:
        return math.nan
    u = _unit(emb)
    centre = _unit(np.asarray(emb, dtype=float).mean(axis=0))
    return float(np.mean(u @ centre))


def _blocks(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of consecutive ad sentences."""
    out, start = [], None
    for i, is_ad in enumerate(list(mask) + [False]):
        if is_ad and start is None:
            start = i
        elif not is_ad and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def ad_flow(emb: np.ndarray, mask: np.ndarray) -> float:
    """exp(-|sim(s_i, s_d) - sim(s_d, s_{i+1})|) averaged over ads with a sentence on both sides.

    A run of consecutive ad sentences is one ad: its first sentence meets s_i, its last meets s_{i+1}.
    An ad that opens or closes the response has no flow on one side and is left out (NaN when none is left).
    """
    u = _unit(emb)
    vals = [
        math.exp(-abs(float(u[a - 1] @ u[a]) - float(u[b] @ u[b + 1])))
        for a, b in _blocks(np.asarray(mask, dtype=bool))
        if a > 0 and b < len(u) - 1
    ]
    return float(np.mean(vals)) if vals else math.nan


def ad_coherence(emb: np.ndarray, mask: np.ndarray) -> float:
    """Mean cosine similarity of each ad sentence to the mean embedding of the non-ad sentences."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any() or mask.all():
        return math.nan
    u = _unit(emb)
    centre = _unit(np.asarray(emb, dtype=float)[~mask].mean(axis=0))
    return float(np.mean(u[mask] @ centre))


def response_metrics(emb: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    """All embedding metrics of one response (values in [-1, 1]; injection 0/1)."""
    mask = np.asarray(mask, dtype=bool)
    return {
        "response_flow": response_flow(emb),
        "response_coherence": response_coherence(emb),
        "ad_flow": ad_flow(emb, mask),
        "ad_coherence": ad_coherence(emb, mask),
        "injection": float(mask.any()),
    }


def aggregate_levels(first: int | str, second: int | str) -> int:
    """The 0/30/60/90 rubric of section 3.2 from two bad/moderate/good ratings (or 0/1/2).

    0: both bad; 30: bad + moderate; 60: both moderate or bad + good; 90: both good. The paper leaves
    moderate + good unspecified; it scores 60 here (90 needs both dimensions good).
    """
    a, b = (LEVELS[v.lower()] if isinstance(v, str) else int(v) for v in (first, second))
    if not {a, b} <= {0, 1, 2}:
        raise GemError(f"levels must be bad/moderate/good or 0/1/2, got {first!r}, {second!r}")
    return 90 if a == b == 2 else {0: 0, 1: 30, 2: 60, 3: 60}[a + b]


def cost_overall(ittft: float, ottft: float) -> float:
    """Table 6 aggregate: 0.5 x ITTFT + OTTFT (input tokens cost half an output token)."""
    return 0.5 * ittft + ottft

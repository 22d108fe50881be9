"""Inspect AI scores -> numbers, by Inspect's own rules, one score per scorer and per key of a dict value.

Split from ``ingest/inspect_log.py`` by record kind. ``value_to_float`` is Inspect's (inspect_ai.scorer
``value_to_float()`` with its defaults, 0.3.285): ``C`` = 1, ``P`` = 0.5, ``I`` = ``N`` = 0 (compared with ``==``,
so case-sensitive); numbers and booleans cast to float on their own scale (never clipped); the strings ``yes`` /
``true`` = 1 and ``no`` / ``false`` = 0 (any case); a string holding a finite number is that number; anything
else (other text, a list, a nested dict) Inspect reads as 0 with a warning, and so does Runlens (the raw value is
kept beside it). NaN is Inspect's "no score" and stays empty.

A dict value is one score per key, named ``scorer/key`` (Inspect's ``results.scores`` names it by the key alone,
which ``--scorer`` also accepts when no other score has that name).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


def _finite_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def value_to_float(value: Any) -> tuple[float | None, bool]:
    """``(number, is_read_as_zero)``: Inspect's ``value_to_float`` of one scalar score value.

    ``number`` is None only for a missing value or NaN (no score); ``is_read_as_zero`` is True where Inspect
    could not read the value and takes it as 0 (its "Unable to convert value to float" warning).
    """
    if value is None:
        return None, False
    if isinstance(value, str) and value in LETTERS:
        return LETTERS[value], False
    if isinstance(value, (bool, int, float)):
        number = float(value)
        return (None, False) if math.isnan(number) else (number, False)
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in WORDS:
            return WORDS[lowered], False
        parsed = _finite_number(lowered)
        if parsed is not None:
            return parsed, False
    return 0.0, True


@dataclass(frozen=True)
class ScoreEntry:
    """One score of one sample: a scorer's value, or one key of a scorer's dict value."""

    name: str  # ``scorer`` or ``scorer/key``
    scorer: str  # the scorer that gave it
    key: str | None  # the dict key, or None
    value: float | None  # Inspect's number (None: no score)
    raw: Any  # the value as the log wrote it
    answer: str | None
    explanation: str | None
    is_read_as_zero: bool

    def as_record(self, *, is_headline: bool) -> dict[str, Any]:
        """The native ``scores`` item."""
        item: dict[str, Any] = {"scorer": self.name, "value": self.value, "raw_value": self.raw}
        if self.answer is not None:
            item["answer"] = self.answer
        if self.explanation is not None:
            item["explanation"] = self.explanation
        if is_headline:
            item["is_headline"] = True
        return item


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def sample_scores(scores: Any) -> list[ScoreEntry]:
    """Every score of a sample's ``scores`` (``{scorer: {value, answer, explanation, ...}}``), in log order."""
    out: list[ScoreEntry] = []
    if not isinstance(scores, dict):
        return out
    for scorer, entry in scores.items():
        if not isinstance(entry, dict):
            continue
        raw = entry.get("value")
        answer, explanation = _text(entry.get("answer")), _text(entry.get("explanation"))
        parts = raw.items() if isinstance(raw, dict) else [(None, raw)]
        for key, value in parts:
            number, is_zero = value_to_float(value)
            name = str(scorer) if key is None else f"{scorer}/{key}"
            out.append(ScoreEntry(name, str(scorer), key, number, value, answer, explanation, is_zero))
    return out


def score_names(samples: Iterable[Any], header: dict[str, Any]) -> list[str]:
    """Every score name the log has, in first-seen order: the samples' scorers (and dict keys), then the header's
    ``results.scores`` and ``eval.scorers`` (a log written before scoring names its scorers there only)."""
    names: dict[str, None] = {}
    for sample in samples:
        if isinstance(sample, dict):
            for entry in sample_scores(sample.get("scores")):
                names.setdefault(entry.name, None)
    results = _obj(header.get("results"))
    for entry in results.get("scores") or []:
        if isinstance(entry, dict) and entry.get("name"):
            name, scorer = str(entry["name"]), entry.get("scorer")
            key = f"{scorer}/{name}" if scorer and scorer != name else name
            if key not in names and name not in names and not any(n.startswith(f"{name}/") for n in names):
                names.setdefault(key, None)
    spec = _obj(header.get("eval"))
    for entry in spec.get("scorers") or []:
        if isinstance(entry, dict) and entry.get("name"):
            name = str(entry["name"])
            if name not in names and not any(n.startswith(f"{name}/") for n in names):
                names.setdefault(name, None)
    return list(names)


def default_score_name(header: dict[str, Any], names: list[str]) -> str | None:
    """Inspect's headline: ``results.headline``'s score, else the first of ``results.scores``, else the first name
    (a dict scorer's first key)."""
    results = _obj(header.get("results"))
    headline = results.get("headline")
    wanted: list[tuple[Any, Any]] = []
    if isinstance(headline, dict) and headline.get("score"):
        wanted.append((headline.get("scorer"), headline.get("score")))
    wanted += [
        (e.get("scorer"), e.get("name")) for e in results.get("scores") or [] if isinstance(e, dict) and e.get("name")
    ]
    for scorer, name in wanted:
        found = resolve_score_name(str(name), names, scorer=None if scorer is None else str(scorer))
        if found is not None:
            return found
    return names[0] if names else None


def resolve_score_name(wanted: str, names: list[str], *, scorer: str | None = None) -> str | None:
    """The stored name ``wanted`` means: itself, ``scorer/wanted`` (Inspect names a dict key by the key alone), or
    the one ``*/wanted``; None when it names nothing, or several keys of different scorers."""
    if wanted in names:
        return wanted
    if scorer is not None and f"{scorer}/{wanted}" in names:
        return f"{scorer}/{wanted}"
    keyed = [n for n in names if n.split("/", 1)[-1] == wanted and "/" in n]
    return keyed[0] if len(keyed) == 1 else None

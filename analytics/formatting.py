"""How numbers, intervals and dates read on a page, in a caption or a hover: one place, so no table shows ``None``,
``nan``, ``-0.0``, ``2025-12-15 00:00:00`` or ``0.30000000000000004``.

Every function takes what analytics returns (floats that may be NaN or None, NumPy scalars, dates or timestamps)
and gives text; a missing value is ``MISSING`` (an en dash), never the word None.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from typing import Any

MISSING = "–"


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None (None, NaN, NaT, infinities, text that is not a number)."""
    if value is None or isinstance(value, bool):
        return None if value is None else float(value)
    if str(value) in ("<NA>", "NaT"):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _clean(text: str) -> str:
    """No negative zero: ``-0.0`` reads ``0.0``."""
    stripped = text.lstrip("-−")
    return stripped if stripped != text and not any(c in "123456789" for c in stripped) else text


def text(value: Any) -> str:
    """A value from a log as a cell: itself as text, ``–`` when missing (None, NaN, NA, an empty string)."""
    if value is None or str(value) in ("", "nan", "NaN", "<NA>", "NaT", "None"):
        return MISSING
    return str(value)


def number(value: Any, digits: int = 1) -> str:
    """A plain number with ``digits`` decimals and thousands separators: ``1,234.5``."""
    x = _number(value)
    return MISSING if x is None else _clean(f"{x:,.{digits}f}")


def count(value: Any) -> str:
    """A whole count with thousands separators: ``12,345``."""
    x = _number(value)
    return MISSING if x is None else f"{round(x):,}"


def pct(value: Any, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage: ``0.621`` -> ``62.1%``."""
    x = _number(value)
    return MISSING if x is None else _clean(f"{100 * x:.{digits}f}") + "%"


def interval(value: Any, ci: Sequence[Any] | None, *, scale: float = 100.0, digits: int = 1) -> str:
    """An estimate with its interval: ``62.1 [55.0 to 69.0]`` (fractions times ``scale``: percentages by default;
    thousands separated, ``15,942 [15,010 to 16,874]``); the estimate alone when the interval is missing."""
    x = _number(value)
    if x is None:
        return MISSING
    head = _clean(f"{scale * x:,.{digits}f}")
    lo, hi = (_number(v) for v in ci) if ci is not None and len(ci) == 2 else (None, None)
    if lo is None or hi is None:
        return head
    return f"{head} [{_clean(f'{scale * lo:,.{digits}f}')} to {_clean(f'{scale * hi:,.{digits}f}')}]"


def signed(value: Any, *, scale: float = 100.0, digits: int = 1, unit: str = " pp") -> str:
    """A difference with its sign: ``+4.3 pp``, ``−2.0 pp``, ``0.0 pp`` (never ``-0.0``), ``+1,769`` tokens."""
    x = _number(value)
    if x is None:
        return MISSING
    text = _clean(f"{scale * x:+,.{digits}f}")
    if text.lstrip("+") and float(text.replace(",", "")) == 0:
        text = text.lstrip("+-")
    return text.replace("-", "−") + unit


def signed_interval(value: Any, ci: Sequence[Any] | None, *, scale: float = 100.0, digits: int = 1) -> str:
    """A difference with its interval: ``−4.3 [−12.3 to +3.7] pp``."""
    x = _number(value)
    if x is None:
        return MISSING
    lo, hi = (_number(v) for v in ci) if ci is not None and len(ci) == 2 else (None, None)
    head = signed(x, scale=scale, digits=digits, unit="")
    if lo is None or hi is None:
        return head + " pp"
    bounds = " to ".join(signed(v, scale=scale, digits=digits, unit="") for v in (lo, hi))
    return f"{head} [{bounds}] pp"


def p_value(value: Any) -> str:
    """A p-value to two significant figures, ``<0.0001`` below that; ``1`` reads ``1.00``."""
    x = _number(value)
    if x is None:
        return MISSING
    if x < 1e-4:
        return "<0.0001"
    return f"{x:.2f}" if x >= 0.01 else f"{x:.2g}"


def usd(value: Any, digits: int | None = None) -> str:
    """Dollars with enough decimals to tell small costs apart: ``$12.30``, ``$0.0123``, ``$0.000045``; with
    ``digits``, exactly that many (a column's one format, from ``usd_digits``: ``$0.85`` beside ``$1.40``)."""
    x = _number(value)
    if x is None:
        return MISSING
    if digits is not None:
        return _clean(f"${x:,.{digits}f}")
    if x == 0:
        return "$0"
    if abs(x) >= 1:
        return _clean(f"${x:,.2f}")
    digits = min(8, 2 - math.floor(math.log10(abs(x))))  # three significant figures
    text = f"{x:.{digits}f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return _clean(f"${whole}.{frac.ljust(2, '0')}")


def signed_usd(value: Any, digits: int | None = None) -> str:
    """A cost difference with its sign: ``+$0.0123``, ``−$1.20``, ``$0`` (``digits``: as for ``usd``)."""
    x = _number(value)
    if x is None:
        return MISSING
    if x == 0 or usd(abs(x), digits).strip("$0.,") == "":
        return "$0" if digits is None else usd(0.0, digits)
    return ("+" if x > 0 else "−") + usd(abs(x), digits)


def usd_column(values: Any, *, is_signed: bool = False) -> list[str]:
    """A column of dollars as text, every cell with the column's decimals (``usd_digits``)."""
    items = list(values)
    digits = usd_digits(items)
    return [signed_usd(v, digits) if is_signed else usd(v, digits) for v in items]


def usd_digits(values: Any) -> int:
    """The decimals one column of dollars reads with, every cell alike: cents (2) when no amount is below ten
    cents, else three significant figures of the smallest amount (at most 6): ``$0.85`` and ``$1.40``, or
    ``$0.0123`` and ``$7.3700``, never ``$0.848`` beside ``$1.40``."""
    amounts = [abs(x) for x in map(_number, values) if x]
    least = min(amounts, default=1.0)
    return 2 if least >= 0.1 else min(6, 2 - math.floor(math.log10(least)))


def date(value: Any) -> str:
    """A calendar date ``2025-12-15`` (timestamps lose their midnight time; missing dates read ``–``)."""
    text = str(value)
    if value is None or text in ("NaT", "nan", "None", "<NA>", "inf", "-inf", ""):
        return MISSING
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return text[:10]


def minute(value: Any) -> str:
    """A time to the minute, ``2026-01-15 09:30`` (UTC as stored); ``–`` when missing."""
    if value is None or str(value) in ("NaT", "nan", "None", "<NA>", ""):
        return MISSING
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)[:16]


def slice_label(name: str) -> str:
    """A slice as people read it: ``category=pacing`` -> ``category: pacing``; ``all`` -> ``all tasks``."""
    if name == "all":
        return "all tasks"
    kind, _, value = name.partition("=")
    return f"{kind}: {value}" if value else name


def plural(n: Any, word: str, words: str | None = None) -> str:
    """A count with its noun in the right number: ``1 task``, ``2 tasks``, ``1,234 runs`` (``words`` for an
    irregular plural: ``plural(2, "reply", "replies")``)."""
    x = _number(n)
    if x is None:
        return f"{MISSING} {words or word + 's'}"
    return f"{round(x):,} {word if round(x) == 1 else (words or word + 's')}"


def span(lo: Any, hi: Any, *, scale: float = 1.0, digits: int = 1, is_signed: bool = False, unit: str = "") -> str:
    """An interval as people read it: ``55.0 to 69.0``, ``−7.0 to +7.0 pp`` (signed), ``–`` when a bound is
    missing. Bounds that round to zero read ``0.0``, never ``−0.0``."""
    a, b = _number(lo), _number(hi)
    if a is None or b is None:
        return MISSING
    if is_signed:
        return f"{signed(a, scale=scale, digits=digits, unit='')} to {signed(b, scale=scale, digits=digits, unit='')}{unit}"
    return f"{_clean(f'{scale * a:,.{digits}f}')} to {_clean(f'{scale * b:,.{digits}f}')}{unit}"


def flag(value: Any, *, yes: str = "✓", no: str = "✗") -> str:
    """A yes/no value as a mark (``✓``/``✗``); missing reads ``–``."""
    if value is None or str(value) in ("<NA>", "nan", "NaN", "None", ""):
        return MISSING
    if isinstance(value, str):
        return yes if value.strip().lower() in ("true", "1", "yes") else no
    return yes if bool(value) else no


def undefined_reason(n: Any, needed: int, what: str) -> str:
    """Why a statistic is not shown: ``needs at least 2 reviews (has 1)``."""
    x = _number(n)
    have = 0 if x is None else round(x)
    return f"needs at least {plural(needed, what)} (has {have:,})"


KINDS = (
    "text",
    "shown",
    "count",
    "number",
    "pct",
    "pp",
    "usd",
    "signed_usd",
    "p",
    "date",
    "flag",
    "id",
    "link",
    "signed",
)


def cell(value: Any, kind: str, *, digits: int = 1) -> str:
    """One value as a cell of a column of ``kind`` (one of ``KINDS``): ``pct`` takes fractions, ``pp`` and
    ``signed`` take differences of fractions, ``number`` keeps ``digits`` decimals; ``–`` when missing."""
    if kind in ("text", "id", "link"):
        return text(value)
    if kind == "shown":
        return tidy(value)
    if kind == "count":
        return count(value)
    if kind == "number":
        return number(value, digits)
    if kind == "pct":
        return pct(value, digits)
    if kind in ("pp", "signed"):
        return signed(value, digits=digits, unit=" pp" if kind == "pp" else "")
    if kind == "usd":
        return usd(value)
    if kind == "signed_usd":
        return signed_usd(value)
    if kind == "p":
        return p_value(value)
    if kind == "date":
        return date(value)
    if kind == "datetime":
        return minute(value)
    if kind == "flag":
        return flag(value)
    raise ValueError(f"unknown column kind {kind!r}; one of {', '.join(KINDS)}")


_NEG_ZERO = re.compile(r"(?<![\w.])[-−]0(\.0+)?(?![\d.])")
_ASCII_MINUS = re.compile(r"(^|[\s\[(])-(?=\d)")


def tidy(value: Any) -> str:
    """Text analytics already formatted (``-0.7``, ``−34.7 to −0.0``) as the rest of a page reads: a dash when
    missing, no negative zero, a real minus sign. Not for log text, which is shown as it was (``text``)."""
    out = text(value)
    if out == MISSING:
        return out
    out = _NEG_ZERO.sub(lambda m: "0" + (m.group(1) or ""), out)
    return _ASCII_MINUS.sub(lambda m: m.group(1) + "−", out)


def items(value: Any) -> str:
    """A list (of codes, tags) as ``HAL, PE``; ``–`` when empty or missing."""
    if isinstance(value, str):
        return text(value)
    try:
        parts = [str(v) for v in value if v is not None]
    except TypeError:
        return text(value)
    return ", ".join(parts) or MISSING

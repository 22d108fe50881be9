"""search, computed: the query's patterns per mode, and snippets around each hit (pure)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import pandas as pd

from store import RunlensError

MODES = ("phrase", "words", "regex")
MAX_QUERY_CHARS = 200
MAX_WORDS = 8
SNIPPET_CONTEXT = 60
DEFAULT_LIMIT = 100
HIT_COLUMNS = ["run_id", "task_id", "sample", "step", "field", "snippet", "match_start", "match_len", "passed"]


class SearchError(RunlensError):
    """A query the search refuses: empty, too long, or an invalid regular expression."""


@dataclass(frozen=True)
class SearchResult:
    """What a search found: the distinct attempts hit, and the first ``limit`` hits with snippets."""

    query: str
    mode: str
    n_attempts: int
    n_hits: int
    hits: pd.DataFrame
    is_indexed: bool = False  # read through the search index (store/search_index.py), else a scan of every text
    n_unindexed: int = 0  # attempts the index did not cover yet, scanned
    scan_reason: str = ""  # why a store with an index was scanned all the same (empty: it was not)
    # False: the search stopped once its page was full, so ``n_attempts`` and ``n_hits`` count only what it read
    # (a lower bound: "at least"), and ``n_attempts_estimate`` extrapolates (labelled "about" wherever shown)
    is_count_exact: bool = True
    n_attempts_estimate: int | None = None
    n_checked: int = 0  # candidate attempts whose texts were read to check them (0: none needed or a scan)


# an indexed search stops counting once its page is full and it has counted this many attempts ("at least")
COUNT_CAP = 10_000
FIRST_WINDOW_HITS = 2  # the first window of runs is sized to hold about this many times the page's hits
MIN_WINDOW = 1_000  # attempts: no window of runs is planned smaller than this (each costs a statement)
MAX_WINDOW_CANDIDATES = 1_000_000  # a window of runs is sized to hold about this many candidate texts at most
FIRST_CHUNK = 256  # candidate attempts checked on their texts in a chunk at least
MAX_CHUNK = 4_000  # and at most this many in one chunk (their ids travel to the scans as a list of constants)
MAX_RUNS = 3  # at most this many runs intersected (the rarest); the others are checked on the text
RUN_SPREAD = 20  # a run with more than this many times the rarest run's postings is checked on the text instead
MAX_RANGES = 16  # a statement reads its attempts as at most this many ranges of ids (the zone maps skip the rest)


@dataclass(frozen=True)
class WindowPart:
    """What one window statement reads: runs (whole), or a slice of one run's tasks ``t0..t1`` (page order)."""

    runs: list[str]
    ranges: list[tuple[int, int]]  # attempt ids (every attempt read lies in one)
    t0: str | None  # a slice's first and last task (None: the runs whole)
    t1: str | None
    n: int  # attempts read (for the estimate)


def run_windows(
    runs: list[tuple[str, int, int, int]], *, per_attempt: float, first_hits: int, count_all: bool
) -> list[list[tuple[str, int, int, int]]]:
    """The runs ``(run_id, lowest attempt id, highest, attempts)`` (in run_id order) cut into consecutive windows
    that an indexed search reads one at a time, in that order, until its page is full.

    The first window is sized to hold about ``first_hits`` candidates at ``per_attempt`` candidate texts per
    attempt (at least ``MIN_WINDOW`` attempts), each next one twice the last, none planned past
    ``MAX_WINDOW_CANDIDATES`` candidates (memory) unless one run alone holds more. A window is whole runs, so it
    always holds at least one.
    """
    size, most = window_sizes(per_attempt=per_attempt, first_hits=first_hits, count_all=count_all)
    windows: list[list[tuple[str, int, int, int]]] = []
    current: list[tuple[str, int, int, int]] = []
    n = 0
    for run in runs:
        if current and _is_sparse(current, run, n):
            windows.append(current)  # a run far from the window's ids: a window of its own (see _is_sparse)
            current, n = [], 0
        current.append(run)
        n += run[3]
        if n >= size:
            windows.append(current)
            current, n = [], 0
            size = min(size * 2, most)
    if current:
        windows.append(current)
    return windows


def window_sizes(*, per_attempt: float, first_hits: int, count_all: bool) -> tuple[float, float]:
    """The first window's planned attempts and the most any window is planned to hold (see ``run_windows``)."""
    rate = max(per_attempt, 1e-9)
    most = max(MAX_WINDOW_CANDIDATES / rate, MIN_WINDOW)
    return (most if count_all else min(max(first_hits / rate, MIN_WINDOW), most)), most


def slice_end(task_starts: list[int], n: int, start: int, size: float) -> int:
    """The end (excluded) of the slice of whole tasks from position ``start`` planned to hold ``size`` attempts: the
    first task starting at or past ``start + size``, or ``n``."""
    i = bisect.bisect_left(task_starts, start + max(size, 1.0))
    return task_starts[i] if i < len(task_starts) else n


def next_slice(size: float, most: float, *, listed: int, walked: int, need: int) -> float:
    """The next slice's planned attempts: twice the last, or, once hits were listed, enough for the ``need`` hits
    still missing at the rate seen so far (``listed`` hits over ``walked`` attempts) with a margin; at most
    ``most``."""
    grow = size * 2
    if listed and walked:
        grow = max(grow, 1.5 * need * walked / listed)
    return min(grow, max(most, 1.0))


def id_ranges(ids: list[int], most: int | None = None) -> list[tuple[int, int]]:
    """``ids`` (any order, repeats allowed) as ranges of consecutive ids, the smallest gaps closed until at most
    ``most`` (default ``MAX_RANGES``) remain: every id lies in a range; a range may hold ids that are not in
    ``ids`` only once gaps are closed (the statement then selects its attempts by more than the ranges)."""
    most = MAX_RANGES if most is None else most
    values = sorted(set(ids))
    if not values:
        return []
    cuts = [i for i in range(1, len(values)) if values[i] - values[i - 1] > 1]
    if len(cuts) >= most:  # keep the ``most - 1`` widest gaps
        widest = sorted(cuts, key=lambda i: (values[i] - values[i - 1], -i), reverse=True)[: max(most - 1, 0)]
        cuts = sorted(widest)
    bounds = [0, *cuts, len(values)]
    return [(values[a], values[b - 1]) for a, b in zip(bounds, bounds[1:], strict=False)]


def _is_sparse(window: list[tuple[str, int, int, int]], run: tuple[str, int, int, int], n: int) -> bool:
    """True when adding ``run`` would make the window's range of attempt ids more than twice its attempts: a
    window reads the postings and attempts of its whole range (a run ingested later, sorted first by its name,
    made the first window's range the whole store)."""
    lo, hi = min(run[1], *(r[1] for r in window)), max(run[2], *(r[2] for r in window))
    return hi - lo + 1 > 2 * (n + run[3])


def next_chunk(found: int, checked: int, need: int) -> int:
    """How many candidate attempts to check next: enough for the ``need`` hits still missing at the rate seen so
    far (``found`` of ``checked``; before any check, one hit a candidate: a matching candidate gives at least one),
    with a margin, between ``FIRST_CHUNK`` and ``MAX_CHUNK``."""
    rate = max(found, 1) / checked if checked else 1.0
    return int(min(max(1.5 * need / rate, FIRST_CHUNK), MAX_CHUNK))


def choose_runs(runs: list[tuple[str, str]], postings: list[int]) -> list[int]:
    """The runs whose postings are intersected: the rarest, and up to MAX_RUNS - 1 more within RUN_SPREAD times its
    count (a run far more common filters little and costs a long read; the text check covers it)."""
    order = sorted(range(len(runs)), key=lambda i: postings[i])
    rarest = postings[order[0]]
    return [i for i in order if postings[i] <= max(rarest, 1) * RUN_SPREAD][:MAX_RUNS]


def match_pattern(query: str, mode: str) -> tuple[str, list[str]]:
    """The predicate kind and its patterns for ``query`` in ``mode``.

    Returns:
        ``("contains", [lowered phrase])`` for phrases, ``("regex", [RE2 pattern])`` for regular expressions,
        ``("words", [lowered word, ...])`` for words.

    Raises:
        SearchError: empty or too long a query, an unknown mode, or too many words.
    """
    if mode not in MODES:
        raise SearchError(f"unknown search mode {mode!r}; choose from {', '.join(MODES)}")
    if not query.strip():
        raise SearchError("the query is empty")
    text = query if mode == "regex" else " ".join(query.split())
    if len(text) > MAX_QUERY_CHARS:
        raise SearchError(f"the query has {len(text)} characters; at most {MAX_QUERY_CHARS} are allowed")
    if mode == "phrase":
        return "contains", [text.lower()]
    if mode == "regex":
        return "regex", [text]
    words = list(dict.fromkeys(text.lower().split()))
    if len(words) > MAX_WORDS:
        raise SearchError(f"at most {MAX_WORDS} words; use a phrase or a regular expression")
    return "words", words


# a token of the search index (store/search_index.py): a maximal run of these characters in lower-cased text
_TOKEN = re.compile(r"[a-z0-9_]+")
RUN_KINDS = ("whole", "prefix", "suffix", "infix")


def query_runs(pattern: str) -> list[tuple[str, str]]:
    """The tokens a text must hold for the lower-cased ``pattern`` to be one of its substrings.

    The pattern is cut like the index cuts texts (runs of ``a-z``, ``0-9``, ``_``). A run with other characters on
    both sides within the pattern is a ``whole`` token of the text; one with such a character only before it is the
    start of a token (``prefix``), only after it the end of one (``suffix``), neither (the pattern is one run) a part
    of one (``infix``).

    Returns:
        ``[(run, kind), ...]`` in the pattern's order, without repeats; empty when the pattern has no letter or
        digit of a-z, 0-9 (it then cannot use the index).
    """
    runs: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(pattern):
        before, after = m.start() > 0, m.end() < len(pattern)
        kind = "whole" if before and after else "prefix" if before else "suffix" if after else "infix"
        if (m.group(), kind) not in runs:
            runs.append((m.group(), kind))
    return runs


def query_pairs(pattern: str) -> list[tuple[str, str]]:
    """The word pairs a text must hold for the lower-cased ``pattern`` to be one of its substrings: each two runs
    next to each other in the pattern are two tokens next to each other in the text, the index's entry
    ``"first second"``; its kind is the one ``query_runs`` gives the span from the first run to the second (the
    first may be the end of a token, the second the start of one).

    Returns:
        ``[("first second", kind), ...]`` in the pattern's order, without repeats.
    """
    pairs: list[tuple[str, str]] = []
    for pair, _ in pair_offsets(pattern):
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def pair_offsets(pattern: str) -> list[tuple[tuple[str, str], int]]:
    """Every word pair of ``pattern`` (``query_pairs``, repeats kept) with its offset: the ``i``-th pair's first
    token is ``i`` tokens after the first pair's in any text holding the pattern (the pattern's inner runs are whole
    tokens of the text, one after the other)."""
    found = list(_TOKEN.finditer(pattern))
    out: list[tuple[tuple[str, str], int]] = []
    for i, (a, b) in enumerate(zip(found, found[1:], strict=False)):
        before, after = a.start() > 0, b.end() < len(pattern)
        kind = "whole" if before and after else "prefix" if before else "suffix" if after else "infix"
        out.append(((f"{a.group()} {b.group()}", kind), i))
    return out


def is_exact_by_tokens(pattern: str) -> bool:
    """True when holding a token that contains ``pattern`` is the same as containing ``pattern``: the pattern is
    one run of token characters (any occurrence of it lies inside one token)."""
    return _TOKEN.fullmatch(pattern) is not None


def _snippet(win: str, lead: int, mlen: int, *, is_cut_left: bool, is_cut_right: bool) -> tuple[str, int, int]:
    """One line around a match: ``win`` holds the match at 0-based ``lead``; whitespace runs fold to a space.

    Returns:
        ``(snippet, match start in the snippet, match length in the snippet)``.
    """
    before, match, after = win[:lead], win[lead : lead + mlen], win[lead + mlen :]

    def fold(text: str) -> str:
        return re.sub(r"\s+", " ", text)

    head = ("…" if is_cut_left else "") + fold(before)
    body = fold(match)
    return head + body + fold(after) + ("…" if is_cut_right else ""), len(head), len(body)


def result_of(query: str, mode: str, df: pd.DataFrame) -> SearchResult:
    """Snippets for the hits the statement returned (every row also carries the totals)."""
    if df.empty:
        return SearchResult(query, mode, 0, 0, pd.DataFrame(columns=HIT_COLUMNS))
    n_attempts, n_hits = int(df["n_attempts"].iloc[0]), int(df["n_hits"].iloc[0])
    hits = df.dropna(subset=["run_id"]).copy()
    if hits.empty:
        return SearchResult(query, mode, n_attempts, n_hits, pd.DataFrame(columns=HIT_COLUMNS))
    parts = [
        _snippet(
            win or "",
            int(pos) - int(w0),
            int(mlen),
            is_cut_left=int(w0) > 1,
            is_cut_right=int(w0) + len(win or "") - 1 < int(n_chars),
        )
        for win, pos, w0, mlen, n_chars in zip(
            hits["win"], hits["pos"], hits["w0"], hits["mlen"], hits["n_chars"], strict=True
        )
    ]
    hits["snippet"] = [p[0] for p in parts]
    hits["match_start"] = [p[1] for p in parts]
    hits["match_len"] = [p[2] for p in parts]
    hits["step"] = hits["step"].astype("Int64")
    hits["sample"] = hits["sample"].astype(int)
    return SearchResult(query, mode, n_attempts, n_hits, hits[HIT_COLUMNS].reset_index(drop=True))

"""search, scanned: the search statement (search.sql) per mode, and the scan of the attempts the filters keep, in
windows of whole runs that stop once the page is full (the part of the feature that reads every text)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import duckdb
import pandas as pd

from analytics.search.compute import COUNT_CAP, MAX_RANGES, SearchResult, result_of
from analytics.search.index_sql import in_ranges, ints
from analytics.sqlfiles import load_sql
from store import QueryError, RunFilter, query_df, query_rows


def sql_params(kind: str, patterns: list[str]) -> dict[str, str]:
    """SQL parameters of the patterns: ``$q`` (the phrase or regex), or ``$w0``.. and ``$r0``.. per word."""
    if kind != "words":
        return {"q": patterns[0]}
    out = {f"w{i}": w for i, w in enumerate(patterns)}
    # a whole word: RE2 \b around the escaped word, case-insensitive; the substring test runs first (cheap)
    return out | {f"r{i}": r"(?i)\b" + re.escape(w) + r"\b" for i, w in enumerate(patterns)}


def predicate(kind: str, column: str, n_words: int = 0) -> str:
    """SQL that is true when ``column`` matches (the patterns are parameters, see ``sql_params``)."""
    if kind == "contains":
        return f"contains(lower({column}), $q)"
    if kind == "regex":
        return f"regexp_matches({column}, $q)"
    low = f"lower({column})"
    parts = [f"contains({low}, $w{i}) AND regexp_matches({column}, $r{i})" for i in range(n_words)]
    return "(" + " AND ".join(parts) + ")"


def locate(kind: str, column: str) -> str:
    """SQL for the 1-based position (``pos``) and the length (``mlen``) of the first match in ``column``."""
    if kind == "contains":
        return f"strpos(lower({column}), $q) AS pos, length($q) AS mlen"
    pattern = "$q" if kind == "regex" else "$r0"
    found = f"regexp_extract({column}, {pattern}, 0)"
    return f"strpos({column}, {found}) AS pos, length({found}) AS mlen"


STEP_FIELDS = {"content": "s.content", "args": "s.args::VARCHAR", "result": "s.result", "error": "s.error"}


def statement(
    kind: str, n_words: int, attempts: str | None = None, steps: str = "true", *, long_once: bool | None = None
) -> str:
    """The search statement (search.sql): every field of every attempt the filters keep, matched by ``kind``; with
    ``attempts`` (SQL on the attempts ``a``, and ``steps`` on their steps ``s``, the same attempts: integers of the
    store, never user input) only those. Long texts are matched once each by a scan of them (``long_once``; the
    default without ``attempts``), else joined to the attempts' steps first (a few attempts, a window of a scan)."""
    preds = {name: predicate(kind, col, n_words) for name, col in STEP_FIELDS.items()}
    field_case = " ".join(f"WHEN {p} THEN '{name}'" for name, p in preds.items())
    text_case = " ".join(f"WHEN {preds[name]} THEN {col}" for name, col in STEP_FIELDS.items())
    parts = {
        "match_answer": predicate(kind, "a.answer", n_words),
        "match_step": " OR ".join(f"coalesce({p}, false)" for p in preds.values()),
        "match_text": predicate(kind, "t.text", n_words),
        "field_case": f"CASE {field_case} END",
        "text_case": f"CASE {text_case} END",
        "locate": locate(kind, "text"),
        "only_attempts": attempts or "true",
        "only_answers": attempts or "true",
        "only_steps": steps,
    }
    long_steps = "FROM steps s {join} SEMI JOIN kept k ON k.attempt_id = s.attempt_id WHERE {only_steps} AND {match}"
    if attempts is None if long_once is None else long_once:  # each long text matched once; its window joined
        long = {
            "long_text_branch": "",
            "long_branch": "UNION ALL SELECT s.attempt_id, s.step, 'result', t.pos, t.mlen, t.w0, t.n_chars, t.win "
            + long_steps.format(join="JOIN long_windows t ON t.text_hash = s.result_hash", only_steps=steps,
                                match="true"),
        }  # fmt: skip
    else:  # their long texts joined, then matched (an empty string that depends on the step)
        long = {
            "long_text_branch": "UNION ALL SELECT s.attempt_id, s.step, 'result', t.text "
            + long_steps.format(
                join="JOIN texts t ON t.text_hash = s.result_hash", only_steps=steps,
                match=predicate(kind, "t.text || left(s.step::VARCHAR, 0)", n_words),
            ),
            "long_branch": "",
        }  # fmt: skip
    return load_sql("search").format(**parts, **long)


def uncovered_statement(kind: str, n_words: int, uncovered: list[int]) -> str:
    """The search statement over the attempts no segment of the index covers (files of ``uncovered``, or none)."""
    return statement(
        kind, n_words,
        f"a.attempt_id >= $min_unindexed AND (a.file_id IN ({ints(uncovered)}) OR ($no_file AND a.file_id IS NULL))",
        "s.attempt_id >= $min_unindexed",
    )  # fmt: skip


# A scan that may stop (not --count-all) reads the runs kept in windows of whole runs, in the order hits are listed:
# the first of about SCAN_FIRST attempts, each next twice the last, none planned past SCAN_MOST; it stops once its
# page is full and it has counted COUNT_CAP attempts (the counts are then "at least", with an estimate), so a common
# pattern is answered from its first window and no statement holds more than a window's matches: one statement over
# ten million attempts held 19.9 GB for a regular expression most attempts match (BENCHMARKS.md)
SCAN_FIRST = 50_000
SCAN_MOST = 1_000_000
# once the attempts with a hit so far, extrapolated to the runs not read yet, are fewer than this, the rest is one
# statement (its memory: the attempts kept and those with a hit, not the texts)
SCAN_REST = 200_000


def scan(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter, kind: str, patterns: list[str], params: dict[str, Any],
    query: str, mode: str, *, limit: int, count_all: bool,
) -> SearchResult:  # fmt: skip
    """Scan the attempts ``run_filter`` keeps: one statement when ``count_all`` or when they are few, else window by
    window (see ``SCAN_FIRST``) until the page is full and ``COUNT_CAP`` attempts are counted."""
    runs = [] if count_all else query_rows(con, load_sql("search_runs"), run_filter.params())
    n_kept = sum(int(r[3]) for r in runs)
    if count_all or n_kept <= SCAN_FIRST:
        return result_of(query, mode, query_df(con, statement(kind, len(patterns)), params))
    windows: list[list[tuple[Any, ...]]] = [[]]
    size, n = float(SCAN_FIRST), 0
    for run in runs:
        if n >= size:
            windows.append([])
            size, n = min(size * 2, SCAN_MOST), 0
        windows[-1].append(run)
        n += int(run[3])
    n_attempts = n_hits = walked = 0
    pages: list[pd.DataFrame] = []
    listed = 0
    may_rest = True
    for i in range(len(windows)):
        window = windows[i]
        # few matches so far: the rest is read in one statement, each long text matched once (window by window, a
        # rare pattern probed every long text once a window: 56 s against 28 at 10M); window by window again when
        # that statement needs more memory than DuckDB may take here
        is_rest = may_rest and 0 < i < len(windows) - 1 and listed < limit
        is_rest = is_rest and n_attempts * (n_kept - walked) < SCAN_REST * walked
        if is_rest:
            rest = [run for later in windows[i:] for run in later]
            try:
                found = _read(con, kind, patterns, params, rest, long_once=True)
                window = rest
            except QueryError as exc:
                if not isinstance(exc.__cause__, duckdb.OutOfMemoryException):
                    raise
                is_rest = may_rest = False
        if not is_rest:
            found = _read(con, kind, patterns, params, window, long_once=False)
        walked += sum(int(r[3]) for r in window)
        if len(found):
            n_attempts += int(found["n_attempts"].iloc[0])
            n_hits += int(found["n_hits"].iloc[0])
            hits = found.dropna(subset=["run_id"])
            if listed < limit and len(hits):
                pages.append(hits.head(limit - listed))
                listed += min(len(hits), limit - listed)
        if is_rest:
            break
        if listed >= limit and n_attempts >= COUNT_CAP and i + 1 < len(windows):
            estimate = max(n_attempts, round(n_attempts * n_kept / max(walked, 1)))
            return dataclasses.replace(
                result_of(query, mode, pd.concat(pages, ignore_index=True) if pages else pd.DataFrame()),
                n_attempts=n_attempts, n_hits=n_hits, is_count_exact=False, n_attempts_estimate=estimate,
            )  # fmt: skip
    page = pd.concat(pages, ignore_index=True) if pages else pd.DataFrame()
    return dataclasses.replace(result_of(query, mode, page), n_attempts=n_attempts, n_hits=n_hits)


def _read(
    con: duckdb.DuckDBPyConnection, kind: str, patterns: list[str], params: dict[str, Any],
    runs: list[tuple[Any, ...]], *, long_once: bool,
) -> pd.DataFrame:  # fmt: skip
    """The search statement over ``runs`` (``(run_id, lowest attempt id, highest, attempts)``)."""
    spans = merged_spans([(int(r[1]), int(r[2])) for r in runs])
    sql = statement(
        kind, len(patterns), f"list_contains($window_runs, a.run_id) AND {in_ranges('a.attempt_id', spans)}",
        in_ranges("s.attempt_id", spans), long_once=long_once,
    )  # fmt: skip
    return query_df(con, sql, params | {"window_runs": [str(r[0]) for r in runs]})


def merged_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges of attempt ids (each run's lowest and highest) merged where they overlap or touch, ascending, at most
    ``MAX_RANGES`` (the smallest gaps closed: ``id_ranges`` over their ends)."""
    out: list[list[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    if len(out) <= MAX_RANGES:
        return [(lo, hi) for lo, hi in out]
    gaps = sorted(range(1, len(out)), key=lambda i: (out[i][0] - out[i - 1][1], -i), reverse=True)[: MAX_RANGES - 1]
    bounds = [0, *sorted(gaps), len(out)]
    return [(out[a][0], out[b - 1][1]) for a, b in zip(bounds, bounds[1:], strict=False)]

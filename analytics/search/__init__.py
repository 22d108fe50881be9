"""search: transcript search across answers, step contents, tool arguments and tool results.

Definitions (docs/failure_analysis.md):
    * ``phrase`` (default): the query, case-insensitively, as one substring (``"rate limit"`` finds
      ``Rate limit exceeded``); every character is literal, so ``50%``, ``a_b`` and quotes need no escaping;
    * ``words``: every word of the query, as a whole word (RE2 ``\\b``), in any order, in the same field;
    * ``regex``: an RE2 regular expression (DuckDB's regexp functions use RE2, which runs in linear time, so a
      user's pattern cannot backtrack catastrophically); at most ``MAX_QUERY_CHARS`` characters;
      case-sensitive unless it starts with ``(?i)``.
    * fields: the attempt's final ``answer`` (``step`` is null), and per step ``content``, ``args`` (the JSON
      text), ``result`` (inline, or the long result stored once in ``texts``) and ``error``;
    * ``n_attempts``: distinct attempts with at least one hit (all of them, not only the hits listed);
      ``hits``: one row per (attempt, step, field), ordered by run, task, sample, step, at most ``limit``.

A phrase search reads the search index when the store has one (``python -m analytics search-index``: a file
beside a DuckDB file store or a local lake, store/search_index.py; analytics/sql/search_indexed.sql) and scans only
the attempts it does not cover; the result is the scan's (search.sql), hit for hit. Words, regular expressions, team
stores and Parquet folders always scan.

``python -m analytics search [--benchmark B] [--regex|--words] "QUERY" --json`` prints
``{"query", "n_attempts", "hits": [{"run_id", "task_id", "sample", "step", "snippet"}]}``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

from analytics.sqlfiles import load_sql
from store import QueryError, RunlensError, attach_search_index, query_df, query_rows, run_filter_params

MODES = ("phrase", "words", "regex")
MAX_QUERY_CHARS = 200
MAX_WORDS = 8
SNIPPET_CONTEXT = 60
DEFAULT_LIMIT = 100
# the catalog name store/search_index.py gives the attached index (checked before it goes into SQL)
INDEX_CATALOG = re.compile(r"rl_search_[0-9a-f]+_[0-9a-f]+")
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


def _params(kind: str, patterns: list[str]) -> dict[str, str]:
    """SQL parameters of the patterns: ``$q`` (the phrase or regex), or ``$w0``.. and ``$r0``.. per word."""
    if kind != "words":
        return {"q": patterns[0]}
    out = {f"w{i}": w for i, w in enumerate(patterns)}
    # a whole word: RE2 \b around the escaped word, case-insensitive; the substring test runs first (cheap)
    return out | {f"r{i}": r"(?i)\b" + re.escape(w) + r"\b" for i, w in enumerate(patterns)}


def _predicate(kind: str, column: str, n_words: int = 0) -> str:
    """SQL that is true when ``column`` matches (the patterns are parameters, see ``_params``)."""
    if kind == "contains":
        return f"contains(lower({column}), $q)"
    if kind == "regex":
        return f"regexp_matches({column}, $q)"
    low = f"lower({column})"
    parts = [f"contains({low}, $w{i}) AND regexp_matches({column}, $r{i})" for i in range(n_words)]
    return "(" + " AND ".join(parts) + ")"


def _locate(kind: str, column: str) -> str:
    """SQL for the 1-based position (``pos``) and the length (``mlen``) of the first match in ``column``."""
    if kind == "contains":
        return f"strpos(lower({column}), $q) AS pos, length($q) AS mlen"
    pattern = "$q" if kind == "regex" else "$r0"
    found = f"regexp_extract({column}, {pattern}, 0)"
    return f"strpos({column}, {found}) AS pos, length({found}) AS mlen"


STEP_FIELDS = {"content": "s.content", "args": "s.args::VARCHAR", "result": "s.result", "error": "s.error"}


def _sql(kind: str, n_words: int) -> str:
    """The search statement: every field of every attempt the filters keep, matched by ``kind``."""
    return load_sql("search").format(**_scan_parts(kind, n_words))


def _scan_parts(kind: str, n_words: int) -> dict[str, str]:
    """The fixed SQL fragments of the scan (search.sql, and the unindexed branch of search_indexed.sql)."""
    preds = {name: _predicate(kind, col, n_words) for name, col in STEP_FIELDS.items()}
    field_case = " ".join(f"WHEN {p} THEN '{name}'" for name, p in preds.items())
    text_case = " ".join(f"WHEN {preds[name]} THEN {col}" for name, col in STEP_FIELDS.items())
    return {
        "match_text": _predicate(kind, "t.text", n_words),
        "match_answer": _predicate(kind, "k.answer", n_words),
        "match_step": " OR ".join(f"coalesce({p}, false)" for p in preds.values()),
        "field_case": f"CASE {field_case} END",
        "text_case": f"CASE {text_case} END",
        "locate": _locate(kind, "text"),
    }


def _indexed_sql(index: str, *, has_unindexed: bool) -> str:
    """The phrase search through the index catalog ``index`` (search_indexed.sql); the scan's branch only if some
    attempt needs it."""
    return load_sql("search_indexed").format(
        **_scan_parts("contains", 0),
        covered=_covered_cte(index),
        idx=index,
        if_unindexed="true" if has_unindexed else "false",
        # the long text with an empty string that depends on the step (see search_indexed.sql)
        match_long=_predicate("contains", "t.text || left(s.step::VARCHAR, 0)"),
    )


def _covered_cte(index: str) -> str:
    if not INDEX_CATALOG.fullmatch(index):  # an identifier in SQL: only the store's own names
        raise ValueError(f"not a search index catalog: {index!r}")
    return load_sql("search_covered").format(idx=index)


def index_coverage(con: duckdb.DuckDBPyConnection, run_filter: dict[str, Any]) -> tuple[str, int, int | None] | None:
    """The search index of the store ``con`` reads, and what it does not cover of the attempts ``run_filter``
    (``run_filter_params``) keeps.

    Returns:
        ``(index catalog, attempts not covered, the smallest id among them)``, or None when the store has no index
        (never built, dropped, a team store or a Parquet folder): search then scans.
    """
    index = attach_search_index(con)
    if index is None:
        return None
    sql = load_sql("search_unindexed").format(covered=_covered_cte(index))
    try:
        n, lowest = query_rows(con, sql, run_filter)[0]
    except QueryError:
        return None  # an index file from an older layout: scan
    return index, int(n), None if lowest is None else int(lowest)


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


def search(
    con: duckdb.DuckDBPyConnection,
    *,
    query: str,
    mode: str = "phrase",
    benchmark: str | None = None,
    agents: Sequence[str] | None = None,
    date_from: dt.date | None = None,
    date_to: dt.date | None = None,
    run_ids: Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    use_index: bool = True,
) -> SearchResult:
    """Search the transcripts of the attempts the filters keep.

    A phrase search reads the search index (``python -m analytics search-index``) when the store has one, and scans
    only the attempts it does not cover; words, regular expressions and stores without an index are scanned. Both
    paths give the same result.

    Args:
        con: a read connection.
        query: the phrase, words or RE2 pattern.
        mode: ``phrase``, ``words`` or ``regex`` (see the module docstring).
        benchmark: only this benchmark (None: all).
        agents: only these agents (None: all).
        date_from: only runs evaluated on or after this date.
        date_to: only runs evaluated on or before this date.
        run_ids: only these runs (None: all).
        limit: at most this many hits are returned (``n_attempts`` and ``n_hits`` count all).
        use_index: False scans even when an index exists (for comparisons).

    Raises:
        SearchError: the query is refused (empty, too long, invalid regular expression).
    """
    kind, patterns = match_pattern(query, mode)
    run_filter = run_filter_params(benchmark, agents, date_from, date_to, run_ids=run_ids)
    params: dict[str, Any] = _params(kind, patterns) | run_filter | {"limit": int(limit), "context": SNIPPET_CONTEXT}
    if kind == "regex":
        check_regex(con, patterns[0])
    coverage = index_coverage(con, run_filter) if use_index and kind == "contains" else None
    if coverage is None:
        return _result(query, mode, query_df(con, _sql(kind, len(patterns)), params))
    index, n_unindexed, lowest = coverage
    params["min_unindexed"] = lowest if lowest is not None else 0
    result = _result(query, mode, query_df(con, _indexed_sql(index, has_unindexed=n_unindexed > 0), params))
    return dataclasses.replace(result, is_indexed=True, n_unindexed=n_unindexed)


def how_searched(result: SearchResult) -> str:
    """One sentence on how the result was computed, and what would make it faster."""
    if result.is_indexed:
        rest = f"; {result.n_unindexed:,} attempts ingested since were scanned" if result.n_unindexed else ""
        return f"Read through the search index{rest} (refresh it with `python -m analytics search-index`)."
    if result.mode != "phrase":
        return "Scanned every transcript (word and regular-expression searches always scan)."
    return (
        "Scanned every transcript: this store has no search index. On a file store or a local lake, "
        "`python -m analytics search-index` builds one beside the database; phrase searches then read it."
    )


def check_regex(con: duckdb.DuckDBPyConnection, pattern: str) -> None:
    """Compile ``pattern`` with DuckDB's RE2 once, so a bad pattern is a clear error before any scan.

    RE2 has no backreferences or lookaround, the constructs that make backtracking engines exponential.

    Raises:
        SearchError: RE2 refuses the pattern.
    """
    try:
        query_rows(con, "SELECT regexp_matches('', ?)", [pattern])
    except QueryError as exc:
        raise SearchError(f"invalid regular expression: {exc.reason.splitlines()[0]}") from exc


def _result(query: str, mode: str, df: pd.DataFrame) -> SearchResult:
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


def marked(snippet: str, start: int, length: int) -> str:
    """The snippet with its match between ``⟦`` and ``⟧``: a plain-text highlight (no markup from the log)."""
    return snippet[:start] + "⟦" + snippet[start : start + length] + "⟧" + snippet[start + length :]


# ---------------------------------------------------------------------------------------------
# CLI: python -m analytics search
# ---------------------------------------------------------------------------------------------


def to_json(result: SearchResult) -> dict[str, Any]:
    """The JSON document of ``python -m analytics search --json``."""
    hits = [
        {
            "run_id": r.run_id,
            "task_id": r.task_id,
            "sample": int(r.sample),
            "step": None if pd.isna(r.step) else int(r.step),
            "field": r.field,
            "snippet": r.snippet,
        }
        for r in result.hits.itertuples()
    ]
    return {
        "query": result.query,
        "mode": result.mode,
        "n_attempts": result.n_attempts,
        "n_hits": result.n_hits,
        "hits": hits,
    }


def text_report(result: SearchResult) -> str:
    """One line per hit (tab-separated), after a count line."""
    lines = [f"{result.n_attempts} attempts, {result.n_hits} hits ({len(result.hits)} listed)"]
    for r in result.hits.itertuples():
        step = "answer" if pd.isna(r.step) else f"step {int(r.step)}"
        lines.append(f"{r.run_id}\t{r.task_id}\t{int(r.sample)}\t{step} {r.field}\t{r.snippet}")
    return "\n".join(lines)

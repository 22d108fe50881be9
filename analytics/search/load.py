"""search, loaded: the search statement (a scan, or the index and a scan of what it does not cover) and the
regular expression's check, run on the store (the only module of the feature that queries)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import duckdb

from analytics.search.compute import DEFAULT_LIMIT, SNIPPET_CONTEXT, SearchError, SearchResult, match_pattern, result_of
from analytics.sqlfiles import load_sql
from store import ALL_RUNS, QueryError, RunFilter, attach_search_index, query_df, query_rows

# the catalog name store/search_index.py gives the attached index (checked before it goes into SQL)
INDEX_CATALOG = re.compile(r"rl_search_[0-9a-f]+_[0-9a-f]+")


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


def index_coverage(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS
) -> tuple[str, int, int | None] | None:
    """The search index of the store ``con`` reads, and what it does not cover of the attempts ``run_filter`` keeps.

    Returns:
        ``(index catalog, attempts not covered, the smallest id among them)``, or None when the store has no index
        (never built, dropped, a team store or a Parquet folder): search then scans.
    """
    index = attach_search_index(con)
    if index is None:
        return None
    sql = load_sql("search_unindexed").format(covered=_covered_cte(index))
    try:
        n, lowest = query_rows(con, sql, run_filter.params())[0]
    except QueryError:
        return None  # an index file from an older layout: scan
    return index, int(n), None if lowest is None else int(lowest)


def search(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    query: str,
    mode: str = "phrase",
    limit: int = DEFAULT_LIMIT,
    use_index: bool = True,
) -> SearchResult:
    """Search the transcripts of the attempts the filters keep.

    A phrase search reads the search index (``python -m analytics search-index``) when the store has one, and scans
    only the attempts it does not cover; words, regular expressions and stores without an index are scanned. Both
    paths give the same result.

    Args:
        con: a read connection.
        run_filter: only the runs it keeps (its benchmark, agents, dates and run ids).
        query: the phrase, words or RE2 pattern.
        mode: ``phrase``, ``words`` or ``regex`` (see the module docstring).
        limit: at most this many hits are returned (``n_attempts`` and ``n_hits`` count all).
        use_index: False scans even when an index exists (for comparisons).

    Raises:
        SearchError: the query is refused (empty, too long, invalid regular expression).
    """
    kind, patterns = match_pattern(query, mode)
    params: dict[str, Any] = (
        _params(kind, patterns) | run_filter.params() | {"limit": int(limit), "context": SNIPPET_CONTEXT}
    )
    if kind == "regex":
        check_regex(con, patterns[0])
    coverage = index_coverage(con, run_filter) if use_index and kind == "contains" else None
    if coverage is None:
        return result_of(query, mode, query_df(con, _sql(kind, len(patterns)), params))
    index, n_unindexed, lowest = coverage
    params["min_unindexed"] = lowest if lowest is not None else 0
    result = result_of(query, mode, query_df(con, _indexed_sql(index, has_unindexed=n_unindexed > 0), params))
    return dataclasses.replace(result, is_indexed=True, n_unindexed=n_unindexed)


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

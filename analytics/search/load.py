"""search, loaded: the search statement (a scan, or the index and a scan of what it does not cover) and the
regular expression's check, run on the store (the only module of the feature that queries)."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import duckdb
import pandas as pd

from analytics.search.compute import (
    DEFAULT_LIMIT,
    SNIPPET_CONTEXT,
    SearchError,
    SearchResult,
    is_exact_by_tokens,
    match_pattern,
    query_runs,
    result_of,
)
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


# how a query run matches a token of a segment's vocabulary (compute.query_runs); the run is the parameter $t<i>
_RUN_MATCH = {
    "whole": "v.token = $t{i}",
    "prefix": "starts_with(v.token, $t{i})",
    "suffix": "ends_with(v.token, $t{i})",
    "infix": "contains(v.token, $t{i})",
}
OR_FILTER_THRESHOLD = 2 * DEFAULT_LIMIT + 56  # see _or_filter_threshold
MAX_RUNS = 3  # at most this many runs intersected (the rarest); the others are checked on the text
RUN_SPREAD = 20  # a run with more than this many times the rarest run's postings is checked on the text instead
# a phrase whose candidates must be checked on the text is scanned instead when its rarest run is in more texts than
# this share of the attempts covered: checking nearly every text through a join costs more than the scan (at 100k
# generated attempts, 0.79 CPU s instead of 0.31 for "budget week growth", whose words are in every text)
SCAN_SHARE = 0.25
SCAN_MIN = 50_000  # and in more than this many texts (below, either path takes a few milliseconds)


def _segments_checked(segments: list[str]) -> list[str]:
    for seg in segments:
        if not INDEX_CATALOG.fullmatch(seg):  # an identifier in SQL: only the store's own names
            raise ValueError(f"not a search index catalog: {seg!r}")
    return segments


def _run_vocab(seg: str, i: int, kind: str) -> str:
    return f"SELECT v.token_id, v.n_postings FROM {seg}.vocab v WHERE " + _RUN_MATCH[kind].format(i=i)


def _postings_per_run(con: duckdb.DuckDBPyConnection, segments: list[str], runs: list[tuple[str, str]]) -> list[int]:
    """How many postings (texts holding a matching token) each run has over every segment."""
    parts = [
        f"SELECT {i} AS run, coalesce(sum(n_postings), 0) AS n FROM ({_run_vocab(seg, i, kind)})"
        for seg in _segments_checked(segments)
        for i, (_, kind) in enumerate(runs)
    ]
    params = {f"t{i}": run for i, (run, _) in enumerate(runs)}
    rows = query_rows(con, f"SELECT run, sum(n) FROM ({' UNION ALL '.join(parts)}) GROUP BY run", params)
    totals = dict(rows)
    return [int(totals.get(i, 0)) for i in range(len(runs))]


def _n_covered(con: duckdb.DuckDBPyConnection, segments: list[str]) -> int:
    """Attempts the segments hold (gone ones included: an estimate of the size the postings are compared with)."""
    parts = " UNION ALL ".join(
        f"SELECT count(*) AS n FROM {seg}.search_attempts" for seg in _segments_checked(segments)
    )
    return int(query_rows(con, f"SELECT sum(n) FROM ({parts})")[0][0] or 0)


def choose_runs(runs: list[tuple[str, str]], postings: list[int]) -> list[int]:
    """The runs whose postings are intersected: the rarest, and up to MAX_RUNS - 1 more within RUN_SPREAD times its
    count (a run far more common filters little and costs a long read; the text check covers it)."""
    order = sorted(range(len(runs)), key=lambda i: postings[i])
    rarest = postings[order[0]]
    return [i for i in order if postings[i] <= max(rarest, 1) * RUN_SPREAD][:MAX_RUNS]


def _candidates_sql(segments: list[str], runs: list[tuple[str, str]], chosen: list[int]) -> str:
    """Every (attempt, step, field, file) of the segments whose text holds a token of each chosen run."""
    per_segment = []
    for seg in _segments_checked(segments):
        postings = " INTERSECT ".join(
            f"SELECT DISTINCT p.attempt_id, p.step, p.field FROM {seg}.postings p "
            f"WHERE p.token_id IN (SELECT token_id FROM ({_run_vocab(seg, i, runs[i][1])}))"
            for i in chosen
        )
        per_segment.append(load_sql("search_candidates").format(postings=postings, seg=seg))
    return " UNION ALL ".join(per_segment)


def _segment_files(segments: list[str]) -> str:
    return " UNION ALL ".join(
        f"SELECT file_id, content_hash FROM {seg}.search_files" for seg in _segments_checked(segments)
    )


def _indexed_sql(
    segments: list[str], *, kind: str, n_words: int, runs: list[tuple[str, str]], chosen: list[int],
    is_exact: bool, has_unindexed: bool,
) -> str:  # fmt: skip
    """The search through the index's segments (search_indexed.sql): candidates from the chosen runs' postings,
    checked on the text unless ``is_exact``; the scan's branch only if some attempt is not covered."""
    field_text = "CASE f.field WHEN 1 THEN s.content WHEN 2 THEN s.args::VARCHAR WHEN 3 THEN s.result ELSE s.error END"
    scan = _scan_parts(kind, n_words)
    return load_sql("search_indexed").format(
        covered=_covered_cte(segments),
        candidates=_candidates_sql(segments, runs, chosen),
        if_verify="false" if is_exact else "true",
        if_unindexed="true" if has_unindexed else "false",
        match_answer=_predicate(kind, "k.answer", n_words),
        match_field=_predicate(kind, field_text, n_words),
        match_text=_predicate(kind, "t.text", n_words),
        match_unindexed_answer=scan["match_answer"],
        match_step=scan["match_step"],
        field_case=scan["field_case"],
        text_case=scan["text_case"],
        # the long text with an empty string that depends on the step (see search_indexed.sql)
        match_long=_predicate(kind, "t.text || left(s.step::VARCHAR, 0)", n_words),
        locate=scan["locate"],
    )


def _covered_cte(segments: list[str]) -> str:
    return load_sql("search_covered").format(segment_files=_segment_files(segments))


def index_coverage(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS
) -> tuple[list[str], int, int | None] | None:
    """The search index of the store ``con`` reads, and what it does not cover of the attempts ``run_filter`` keeps.

    Returns:
        ``(the index's segment catalogs, attempts not covered, the smallest id among them)``, or None when the store
        has no index (never built, dropped, of another layout, a team store or a Parquet folder): search then scans.
    """
    segments = attach_search_index(con)
    if segments is None:
        return None
    sql = load_sql("search_unindexed").format(covered=_covered_cte(segments))
    try:
        n, lowest = query_rows(con, sql, run_filter.params())[0]
    except QueryError:
        return None  # a segment without the index's tables: scan
    return segments, int(n), None if lowest is None else int(lowest)


def _index_runs(kind: str, patterns: list[str]) -> list[tuple[str, str]]:
    """The runs a text must hold for ``patterns`` to match: the phrase's, or every word's (all in one field)."""
    runs: list[tuple[str, str]] = []
    for pattern in patterns:
        runs += [r for r in query_runs(pattern) if r not in runs]
    return runs


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

    A phrase or words search reads the search index (``python -m analytics search-index``) when the store has one,
    and scans only the attempts it does not cover; regular expressions, queries without a letter or digit and
    stores without an index are scanned. Both paths give the same result.

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
    coverage = index_coverage(con, run_filter) if use_index and kind != "regex" else None
    runs = _index_runs(kind, patterns)
    if coverage is None or not runs:
        result = result_of(query, mode, query_df(con, _sql(kind, len(patterns)), params))
        if coverage is not None:
            return dataclasses.replace(result, scan_reason="the query has no letter or digit to look up")
        return result
    segments, n_unindexed, lowest = coverage
    postings = _postings_per_run(con, segments, runs)
    chosen = choose_runs(runs, postings)
    is_exact = kind == "contains" and is_exact_by_tokens(patterns[0])
    rarest = postings[chosen[0]]
    if kind == "contains" and not is_exact and rarest > max(SCAN_MIN, SCAN_SHARE * _n_covered(con, segments)):
        result = result_of(query, mode, query_df(con, _sql(kind, len(patterns)), params))
        reason = f"its rarest word is in {rarest:,} texts (a check of each would cost more than a scan)"
        return dataclasses.replace(result, scan_reason=reason)
    if postings[chosen[0]] == 0 and n_unindexed == 0:  # no text holds a token the query needs, none to scan
        return dataclasses.replace(result_of(query, mode, pd.DataFrame()), is_indexed=True)
    params |= {"min_unindexed": lowest if lowest is not None else 0}
    params |= {f"t{i}": runs[i][0] for i in chosen}
    sql = _indexed_sql(
        segments, kind=kind, n_words=len(patterns) if kind == "words" else 0, runs=runs, chosen=chosen,
        is_exact=is_exact, has_unindexed=n_unindexed > 0,
    )  # fmt: skip
    with _or_filter_threshold(con, OR_FILTER_THRESHOLD):
        df = query_df(con, sql, params)
    return dataclasses.replace(result_of(query, mode, df), is_indexed=True, n_unindexed=n_unindexed)


@contextlib.contextmanager
def _or_filter_threshold(con: duckdb.DuckDBPyConnection, value: int) -> Iterator[None]:
    """DuckDB's ``dynamic_or_filter_threshold`` raised for one statement, then put back: the listed hits (up to
    ``limit``) reach the scans of ``steps`` and ``texts`` that fetch their texts as a list of ids, which the zone
    maps prune to the row groups holding them; by default (50) only their min and max arrive, and hits from runs
    far apart made that fetch read every step (`a77` at 1M: 0.8 -> 0.22 CPU s)."""
    before = query_rows(con, "SELECT current_setting('dynamic_or_filter_threshold')")[0][0]
    con.execute(f"SET dynamic_or_filter_threshold = {int(value)}")
    try:
        yield
    finally:
        con.execute(f"SET dynamic_or_filter_threshold = {int(before)}")


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

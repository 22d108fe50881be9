"""search: transcript search across answers, step contents, tool arguments and tool results.

Definitions (docs/failure_analysis.md):
    * ``phrase`` (default): the query, case-insensitively, as one substring (``"rate limit"`` finds
      ``Rate limit exceeded``); every character is literal, so ``50%``, ``a_b`` and quotes need no escaping;
    * ``words``: every word of the query, as a whole word (RE2 ``\b``), in any order, in the same field;
    * ``regex``: an RE2 regular expression (DuckDB's regexp functions use RE2, which runs in linear time, so a
      user's pattern cannot backtrack catastrophically); at most ``MAX_QUERY_CHARS`` characters;
      case-sensitive unless it starts with ``(?i)``.
    * fields: the attempt's final ``answer`` (``step`` is null), and per step ``content``, ``args`` (the JSON
      text), ``result`` (inline, or the long result stored once in ``texts``) and ``error``;
    * ``n_attempts``: distinct attempts with at least one hit (all of them, not only the hits listed), or, when
      ``is_count_exact`` is false (a search that stopped once its page was full), those it found before it
      stopped, with ``n_attempts_estimate`` extrapolating (shown as "at least" and "about");
      ``hits``: one row per (attempt, step, field), ordered by run, task, sample, step, at most ``limit``.

A phrase or words search reads the search index when the store has one (``python -m analytics search-index``: an
inverted index of tokens in a folder beside a DuckDB file store or a local lake, store/search_index.py;
analytics/sql/search_window.sql, search_chunk.sql, search_page.sql): candidates from the postings of the query's
rarest runs of letters, digits and ``_`` (``compute.query_runs``), checked on the real text unless the query is one
such run, run by run in the order hits are listed until the page is full; it scans only the attempts the index
does not cover; the hits listed are the scan's (search.sql), hit for hit. Regular expressions, queries
without a letter or digit, team stores and Parquet folders always scan, and the result says so (``how_searched``).
A scan reads the runs kept in windows of whole runs in the same order and stops the same way (``load_scan.scan``),
unless ``count_all``.

``python -m analytics search [--benchmark B] [--regex|--words] "QUERY" --json`` prints
``{"query", "n_attempts", "hits": [{"run_id", "task_id", "sample", "step", "snippet"}]}``.

Modules by role: ``compute`` (patterns and snippets, pure), ``load_scan`` (the search statement and the scan),
``load`` (the index's statements and the walk) and ``report`` (how it was searched, JSON, text). This package
re-exports their public names: ``from analytics import search``.
"""

from __future__ import annotations

from analytics.search.compute import (
    DEFAULT_LIMIT,
    HIT_COLUMNS,
    MAX_QUERY_CHARS,
    MAX_WORDS,
    MODES,
    SNIPPET_CONTEXT,
    SearchError,
    SearchResult,
    match_pattern,
    query_runs,
    result_of,
)
from analytics.search.index_sql import INDEX_CATALOG
from analytics.search.load import (
    check_regex,
    index_coverage,
    search,
)
from analytics.search.load_scan import STEP_FIELDS
from analytics.search.report import (
    count_text,
    how_searched,
    marked,
    text_report,
    to_json,
)

__all__ = [
    "DEFAULT_LIMIT",
    "HIT_COLUMNS",
    "INDEX_CATALOG",
    "MAX_QUERY_CHARS",
    "MAX_WORDS",
    "MODES",
    "SNIPPET_CONTEXT",
    "STEP_FIELDS",
    "SearchError",
    "SearchResult",
    "check_regex",
    "count_text",
    "how_searched",
    "index_coverage",
    "marked",
    "query_runs",
    "match_pattern",
    "result_of",
    "search",
    "text_report",
    "to_json",
]

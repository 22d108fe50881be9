"""search, loaded: the search statement (a scan, or the index and a scan of what it does not cover) and the
regular expression's check, run on the store (the only module of the feature that queries)."""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import duckdb
import pandas as pd

from analytics.search.compute import (
    COUNT_CAP,
    DEFAULT_LIMIT,
    FIRST_WINDOW_HITS,
    MAX_CHUNK,
    RUN_SPREAD,
    SNIPPET_CONTEXT,
    SearchError,
    SearchResult,
    WindowPart,
    choose_runs,
    id_ranges,
    is_exact_by_tokens,
    match_pattern,
    next_chunk,
    next_slice,
    pair_offsets,
    query_pairs,
    query_runs,
    result_of,
    run_windows,
    slice_end,
    window_sizes,
)
from analytics.search.index_sql import (
    ONE_TOKEN,
    RUN_MATCH,
    candidates_sql,
    in_ranges,
    ints,
    segments_checked,
)
from analytics.search.load_scan import locate, predicate, scan, sql_params, statement, uncovered_statement
from analytics.sqlfiles import load_sql
from store import (
    ALL_RUNS,
    QueryError,
    RunFilter,
    attach_search_index_runs,
    memory_limit,
    query_df,
    query_rows,
)

# a query checked on the text that has checked this share of the attempts kept (and at least SCAN_MIN) without
# filling its page is finished by a scan: its words are common and it is rare (with word pairs, seldom: their
# postings narrow such a phrase first). Checking a candidate through the index costs about five times scanning its
# attempt at 100k generated attempts (50k checked in 1.8 CPU s, the scan of all 100k in 0.34) and about a hundred
# times at 1M (20,479 checked in about 6 CPU s, the scan 2-3), so past 0.5 % a rare phrase costs at most about half
# a scan more than the scan alone
SCAN_SHARE = 0.005
SCAN_MIN = 2_000


@dataclasses.dataclass(frozen=True)
class Coverage:
    """The index of the store a connection reads, and what it does not cover (found from files, not attempts)."""

    segments: list[str]  # the segments' catalogs
    files: list[list[int]]  # per segment, the files it covers with the content they still have
    uncovered: list[int]  # files of ingest_log no segment covers (their attempts are scanned)
    no_file: bool  # some attempt has no file (always scanned)
    n_unindexed: int  # attempts of the runs kept that no segment covers
    lowest: int | None  # the smallest id among them
    runs: list[list[tuple[str, int, int, int, int]]] | None  # per segment, the manifest's runs (None: not kept)
    long_rows: list[bool]  # per segment, whether it keeps the rows of its long results (search_long)
    pairs: list[bool]  # per segment, whether its vocabulary holds the word pairs of every text (search_pairs)
    positions: list[bool]  # per segment, whether its pairs' postings hold where they occur (search_positions)


def _token_ids(
    con: duckdb.DuckDBPyConnection, segments: list[str], runs: list[tuple[str, str]]
) -> tuple[list[list[list[int]]], list[int]]:
    """Per segment and run, the ids of the tokens the run matches; and per run its postings (texts holding such a
    token) over every segment."""
    parts = [
        f"SELECT {s} AS seg, {i} AS run, v.token_id, v.n_postings FROM {seg}.vocab v WHERE "
        + RUN_MATCH[kind].format(i=i)
        + ("" if " " in run or kind == "whole" else ONE_TOKEN)
        for s, seg in enumerate(segments_checked(segments))
        for i, (run, kind) in enumerate(runs)
    ]
    params = {f"t{i}": run for i, (run, _) in enumerate(runs)}
    ids: list[list[list[int]]] = [[[] for _ in runs] for _ in segments]
    postings = [0] * len(runs)
    for seg, run, token_id, n in query_rows(con, " UNION ALL ".join(parts), params):
        ids[seg][run].append(int(token_id))
        postings[run] += int(n or 0)
    return ids, postings


def _n_covered(con: duckdb.DuckDBPyConnection, segments: list[str]) -> int:
    """Attempts the segments hold (gone ones included: an estimate of the size the postings are compared with)."""
    parts = " UNION ALL ".join(f"SELECT count(*) AS n FROM {seg}.search_attempts" for seg in segments_checked(segments))
    return int(query_rows(con, f"SELECT sum(n) FROM ({parts})")[0][0] or 0)


def _coverage(con: duckdb.DuckDBPyConnection, run_filter: RunFilter) -> Coverage | None:
    attached = attach_search_index_runs(con)
    if attached is None:
        return None
    segments = attached.catalogs
    files: list[list[int]] = [[] for _ in segments]
    segment_files = " UNION ALL ".join(
        f"SELECT {s} AS seg, file_id, content_hash FROM {seg}.search_files"
        for s, seg in enumerate(segments_checked(segments))
    )
    try:
        for seg, file_id in query_rows(con, load_sql("search_covered").format(segment_files=segment_files)):
            files[seg].append(int(file_id))
    except QueryError:
        return None  # a segment without the index's tables: scan
    covered = {f for fs in files for f in fs}
    uncovered = sorted({int(f) for (f,) in query_rows(con, "SELECT DISTINCT file_id FROM ingest_log")} - covered)
    no_file = bool(query_rows(con, "SELECT count(*) FROM attempts WHERE file_id IS NULL")[0][0])
    n, lowest = 0, None
    if uncovered or no_file:
        sql = load_sql("search_unindexed").format(uncovered=ints(uncovered))
        n, lowest = query_rows(con, sql, run_filter.params() | {"no_file": no_file})[0]
    tables = query_rows(
        con,
        "SELECT database_name, table_name FROM duckdb_tables() "
        "WHERE table_name IN ('search_long', 'search_pairs', 'search_positions') "
        "AND list_contains(?, database_name)",
        [segments],
    )
    with_long = {str(d) for d, t in tables if t == "search_long"}
    with_pairs = {str(d) for d, t in tables if t == "search_pairs"}
    with_positions = {str(d) for d, t in tables if t == "search_positions"}
    return Coverage(
        segments, files, uncovered, no_file, int(n), None if lowest is None else int(lowest), attached.runs,
        [s in with_long for s in segments], [s in with_pairs for s in segments],
        [s in with_pairs and s in with_positions for s in segments],
    )  # fmt: skip


def index_coverage(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter = ALL_RUNS
) -> tuple[list[str], int, int | None] | None:
    """The search index of the store ``con`` reads, and what it does not cover of the attempts ``run_filter`` keeps.

    Returns:
        ``(the index's segment catalogs, attempts not covered, the smallest id among them)``, or None when the store
        has no index (never built, dropped, of another layout, a team store or a Parquet folder): search then scans.
    """
    cov = _coverage(con, run_filter)
    return None if cov is None else (cov.segments, cov.n_unindexed, cov.lowest)


def _index_runs(kind: str, patterns: list[str]) -> list[tuple[str, str]]:
    """The runs a text must hold for ``patterns`` to match: the phrase's, or every word's (all in one field); a
    phrase's word pairs after them (compute.query_pairs)."""
    runs: list[tuple[str, str]] = []
    for pattern in patterns:
        runs += [r for r in query_runs(pattern) if r not in runs]
    if kind == "contains":
        runs += [r for r in query_pairs(patterns[0]) if r not in runs]
    return runs


def search(
    con: duckdb.DuckDBPyConnection,
    run_filter: RunFilter = ALL_RUNS,
    *,
    query: str,
    mode: str = "phrase",
    limit: int = DEFAULT_LIMIT,
    use_index: bool = True,
    count_all: bool = False,
) -> SearchResult:
    """Search the transcripts of the attempts the filters keep.

    A phrase or words search reads the search index (``python -m analytics search-index``) when the store has one:
    it walks the runs kept in the order the hits are listed and stops once its page is full and, when the postings
    decide alone, it has counted ``COUNT_CAP`` attempts; the counts are then a lower bound with an estimate
    (``is_count_exact`` False). It scans only the attempts the index does not cover; regular expressions, queries
    without a letter or digit and stores without an index are scanned (``load_scan.scan``: in windows of whole runs
    in the same order, stopping once the page is full and ``COUNT_CAP`` attempts are counted). The hits listed are
    the first of every attempt kept, always.

    Args:
        con: a read connection.
        run_filter: only the runs it keeps (its benchmark, agents, dates and run ids).
        query: the phrase, words or RE2 pattern.
        mode: ``phrase``, ``words`` or ``regex`` (see the module docstring).
        limit: at most this many hits are returned.
        use_index: False scans even when an index exists (for comparisons).
        count_all: read every candidate (through the index) or every attempt (a scan) so the counts are exact
            (slower on common words).

    Raises:
        SearchError: the query is refused (empty, too long, invalid regular expression), or it needed more memory
            than DuckDB may take in this process (``store.limit_memory``: the dashboard's share of its budget).
    """
    try:
        return _search(con, run_filter, query, mode, limit, use_index=use_index, count_all=count_all)
    except QueryError as exc:
        if not isinstance(exc.__cause__, duckdb.OutOfMemoryException):
            raise
        raise SearchError(
            f"This search needed more memory than the server gives its reads ({memory_limit() or 'DuckDB default'}). "
            "Narrow the sidebar's filters, search a phrase or words (read through the search index when the store "
            "has one), or raise RUNLENS_SERVER_DUCKDB_MB."
        ) from exc


def _search(
    con: duckdb.DuckDBPyConnection, run_filter: RunFilter, query: str, mode: str, limit: int, *, use_index: bool,
    count_all: bool,
) -> SearchResult:  # fmt: skip
    kind, patterns = match_pattern(query, mode)
    params: dict[str, Any] = (
        sql_params(kind, patterns) | run_filter.params() | {"limit": int(limit), "context": SNIPPET_CONTEXT}
    )
    if kind == "regex":
        check_regex(con, patterns[0])
    cov = _coverage(con, run_filter) if use_index and kind != "regex" else None
    runs = _index_runs(kind, patterns)
    if cov is None or not runs:
        result = scan(con, run_filter, kind, patterns, params, query, mode, limit=limit, count_all=count_all)
        if cov is not None:
            return dataclasses.replace(result, scan_reason="the query has no letter or digit to look up")
        return result
    ids, postings = _token_ids(con, cov.segments, runs)
    alone = [i for i, (run, _) in enumerate(runs) if " " not in run]
    # a pair's postings count only in segments with pairs: compared with the others' where every segment has them
    chosen = (
        choose_runs(runs, postings)
        if all(cov.pairs)
        else [alone[i] for i in choose_runs([runs[i] for i in alone], [postings[i] for i in alone])]
    )
    chosen_alone = [alone[i] for i in choose_runs([runs[i] for i in alone], [postings[i] for i in alone])]
    if postings[chosen[0]] == 0 and cov.n_unindexed == 0:  # no text holds a token the query needs, none to scan
        return dataclasses.replace(result_of(query, mode, pd.DataFrame()), is_indexed=True)
    walk = _Walk(
        con, cov, run_filter, kind=kind, patterns=patterns, params=params, ids=ids, chosen=chosen,
        chosen_alone=chosen_alone, aligned=_aligned(kind, patterns, runs, postings),
        is_exact=kind == "contains" and is_exact_by_tokens(patterns[0]), limit=int(limit), count_all=count_all,
    )  # fmt: skip
    if postings[chosen[0]] == 0:  # no indexed text holds a token the query needs: only what is not covered
        return walk.run(query, mode, 0.0, has_postings=False)
    per_attempt = postings[chosen[0]] / max(_n_covered(con, cov.segments), 1)
    return walk.run(query, mode, per_attempt)


def _aligned(kind: str, patterns: list[str], runs: list[tuple[str, str]], postings: list[int]) -> list[tuple[int, int]]:
    """A phrase's word pairs (their index in ``runs``) with their offsets (``compute.pair_offsets``) that must occur
    one after the other in a candidate's text, where a segment keeps the pairs' positions: those within
    ``RUN_SPREAD`` times the rarest run's postings (a far more common pair costs a long read and filters little);
    none when fewer than two (one pair alone is already a chosen run)."""
    if kind != "contains":
        return []
    rarest = max(min(postings), 1)
    at = [(runs.index(pair), offset) for pair, offset in pair_offsets(patterns[0])]
    at = sorted((x for x in at if postings[x[0]] <= rarest * RUN_SPREAD), key=lambda x: (postings[x[0]], x[1]))
    return at if len(at) > 1 else []


class _Walk:
    """One indexed search: the runs kept, window by window in the order hits are listed, until the page is full."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, cov: Coverage, run_filter: RunFilter, *, kind: str,
        patterns: list[str], params: dict[str, Any], ids: list[list[list[int]]], chosen: list[int],
        chosen_alone: list[int], aligned: list[tuple[int, int]], is_exact: bool, limit: int, count_all: bool,
    ) -> None:  # fmt: skip
        self.con, self.cov, self.run_filter, self.kind, self.patterns = con, cov, run_filter, kind, patterns
        self.n_words = len(patterns) if kind == "words" else 0
        self.params = params | {f"f{s}": fs for s, fs in enumerate(cov.files)}
        self.is_exact, self.limit, self.count_all = is_exact, limit, count_all
        self._cand_args = (cov.segments, ids, chosen, chosen_alone, cov.pairs, aligned, cov.positions)
        self.hits: list[pd.DataFrame] = []
        self.n_listed = self.n_attempts = self.n_hits = self.checked = self.walked = self.seen = 0
        self.is_partial = False  # a window's candidates were left unchecked once the page was full
        self._long_unmatched: set[str] = set()  # long results read that do not match (a hash names one text)
        self._slice_size = 0.0  # the planned size of the next slice of the run being read in slices
        self._long_matched: dict[str, dict[str, Any]] = {}  # long results found to match, with their windows
        # candidates read before any was checked, waiting until they could fill the page (see ``_read``)
        self._pending: list[pd.DataFrame] = []
        self._n_pending = 0

    def _candidates(self, ranges: list[tuple[int, int]]) -> str:
        return candidates_sql(*self._cand_args, ranges)

    def _window_sql(self, ranges: list[tuple[int, int]], *, is_slice: bool) -> str:
        return load_sql("search_window").format(
            candidates=self._candidates(ranges),
            in_ids=in_ranges("a.attempt_id", ranges),
            in_tasks="a.task_id BETWEEN $t0 AND $t1" if is_slice else "true",
        )

    def _chunk(self, attempts: pd.DataFrame) -> pd.DataFrame:
        """The hits of ``attempts`` (a slice of a window, in page order), with their attempt's columns."""
        field_text = (
            "CASE c.field WHEN 1 THEN s.content WHEN 2 THEN s.args::VARCHAR WHEN 3 THEN s.result ELSE s.error END"
        )
        aids = [int(a) for a in attempts["attempt_id"]]
        ranges = id_ranges(aids)
        sql = load_sql("search_chunk").format(
            candidates=self._candidates(ranges),
            if_verify="false" if self.is_exact else "true",
            match_answer=predicate(self.kind, "k.answer", self.n_words),
            match_field=predicate(self.kind, field_text, self.n_words),
            field_text=field_text,
            locate=locate(self.kind, "text"),
            ids_a=in_ranges("a.attempt_id", ranges),
            ids_k=in_ranges("k.attempt_id", ranges),
            ids_s=in_ranges("s.attempt_id", ranges),
        )
        with _or_filter_threshold(self.con, len(aids) + 1):
            found = _run(self.con, sql, self.params | {"aids": aids})
        is_long = found["src"] == 5
        if not self.is_exact and is_long.any():  # long results checked on their texts, read by hash
            matched = set(self._long(found.loc[is_long], check=True)["text_hash"])
            found = found[~is_long | found["result_hash"].isin(matched)].copy()
            is_long = found["src"] == 5
            for col in ["pos", "mlen", "w0", "n_chars", "win"]:  # their windows, for the page
                found[col] = found[col].astype(object)
                found.loc[is_long, col] = [self._long_matched[h][col] for h in found.loc[is_long, "result_hash"]]
        keys = attempts[["attempt_id", "run_id", "task_id", "sample", "passed"]].assign(order=range(len(attempts)))
        found = found.drop(columns=["result_hash"]).merge(keys, on="attempt_id")
        found["step_key"] = found["step"].fillna(-1)
        return found.sort_values(["order", "step_key", "field"]).drop(columns=["order", "step_key"])

    def _long(self, keys: pd.DataFrame, *, check: bool) -> pd.DataFrame:
        """Long results of ``keys`` (``attempt_id``, ``step``, ``result_hash``; search_long.sql): those that match
        when ``check``, each with its window. Their rows of ``texts`` come from the segments' ``search_long``; a row
        whose hash is not the step's (a segment without the table, a row renumbered) is looked up by hash. A text
        this walk already found to match is not read again (the page's windows of the hits its chunks checked)."""
        wanted = set(keys["result_hash"])
        if not all(_HASH.fullmatch(h) for h in wanted):  # the store's own sha256 hex digests, checked
            raise ValueError("not a text hash of the store")
        known = [self._long_matched[h] for h in sorted(wanted) if h in self._long_matched]
        wanted -= self._long_matched.keys()
        keys = keys[keys["result_hash"].isin(wanted)]
        out = self._long_by_rows(self._rows_of(keys) if wanted else [], wanted, check=check)
        missing = wanted - set(out["text_hash"]) - self._long_unmatched
        if missing:  # their rows by hash: a read of texts.text_hash alone
            listed = ", ".join(repr(h) for h in sorted(missing))
            rows = [int(r) for (r,) in query_rows(self.con, f"SELECT rowid FROM texts WHERE text_hash IN ({listed})")]
            out = pd.concat([out, self._long_by_rows(rows, missing, check=check)], ignore_index=True)
        out = out.drop(columns=["matched"])
        if check:  # matched, checked on their text: kept for the page
            self._long_matched |= {str(row["text_hash"]): row for row in out.to_dict("records")}
        if known:
            out = pd.concat([out, pd.DataFrame(known)], ignore_index=True) if len(out) else pd.DataFrame(known)
        return out

    def _rows_of(self, keys: pd.DataFrame) -> list[int]:
        """Rows of ``texts`` the segments keep for these (attempt, step): candidates, checked by hash on reading."""
        segs = [seg for seg, has in zip(self.cov.segments, self.cov.long_rows, strict=True) if has]
        if not segs:
            return []
        aids = sorted({int(a) for a in keys["attempt_id"]})
        in_ids = in_ranges("attempt_id", id_ranges(aids))
        sql = " UNION ".join(
            f"SELECT text_row FROM {seg}.search_long WHERE {in_ids} "
            "AND list_contains($aids, attempt_id) AND list_contains($steps, step)"
            for seg in segments_checked(segs)
        )
        steps = sorted({int(s) for s in keys["step"]})
        return [int(r) for (r,) in query_rows(self.con, sql, {"aids": aids, "steps": steps})]

    def _long_by_rows(self, rows: list[int], wanted: set[str], *, check: bool) -> pd.DataFrame:
        """The texts at ``rows`` whose hash is wanted (search_long.sql), read by ranges of rowid; a text read that
        does not match is remembered in ``_long_unmatched`` (found, not looked up again)."""
        cols = ["text_hash", "matched", "pos", "mlen", "w0", "n_chars", "win"]
        rows = sorted(set(rows))
        if not rows:
            return pd.DataFrame(columns=cols)
        ranges: list[list[int]] = []
        for row in rows:
            if ranges and row - ranges[-1][1] <= LONG_ROW_GAP:
                ranges[-1][1] = row
            else:
                ranges.append([row, row])
        listed = ", ".join(str(r) for r in rows)
        sql = load_sql("search_long").format(
            rows=" UNION ALL ".join(
                f"SELECT text_hash, text FROM texts WHERE rowid BETWEEN {int(a)} AND {int(b)} AND rowid IN ({listed})"
                for a, b in ranges
            ),
            match=predicate(self.kind, "text", self.n_words) if check else "true",
            locate=locate(self.kind, "text"),
        )
        found = _run(self.con, sql, sql_params(self.kind, self.patterns) | {"context": SNIPPET_CONTEXT})
        found = found[found["text_hash"].isin(wanted)].drop_duplicates("text_hash")
        self._long_unmatched |= set(found.loc[~found["matched"].astype(bool), "text_hash"])
        return found[found["matched"].astype(bool)].reset_index(drop=True)

    def run(self, query: str, mode: str, per_attempt: float, *, has_postings: bool = True) -> SearchResult:
        scanned = self._scan_uncovered()
        runs = self._kept_runs() if has_postings else []
        n_kept = sum(r[3] for r in runs)
        complete = True
        first_hits = FIRST_WINDOW_HITS * max(self.limit, 1)
        size, most = window_sizes(per_attempt=per_attempt, first_hits=first_hits, count_all=self.count_all)
        for window in run_windows(runs, per_attempt=per_attempt, first_hits=first_hits, count_all=self.count_all):
            # a run far larger than the page needs, its candidates checked on their texts: read in slices of
            # whole tasks in the order hits are listed, so the page stops after the first (see search_order.sql)
            is_sliced = not self.is_exact and not self.count_all and len(window) == 1 and window[0][3] > 2 * size
            whole = WindowPart([r[0] for r in window], [(min(r[1] for r in window), max(r[2] for r in window))], None, None,
                          sum(r[3] for r in window))  # fmt: skip
            for part in self._slices(window[0], size, most) if is_sliced else [whole]:
                if self._is_done():
                    complete = False
                    break
                if self._read(part, n_kept):
                    return self._scanned_instead(query, mode)
            if not complete:
                break
            if is_sliced:  # the next run starts at the size this one's slices grew to (a rare phrase: whole runs)
                size = max(size, self._slice_size)
        if self._pending and self._check_window(self._take_pending(), n_kept):  # the last candidates read
            return self._scanned_instead(query, mode)
        return self._result(query, mode, scanned, complete=complete and not self.is_partial, n_kept=n_kept)

    def _scanned_instead(self, query: str, mode: str) -> SearchResult:
        result = result_of(query, mode, _run(self.con, statement(self.kind, len(self.patterns)), self.params))
        reason = (
            f"its words are in most texts and it is in few: {self.checked:,} candidate attempts checked "
            "through the index did not fill the page"
        )
        return dataclasses.replace(result, scan_reason=reason)

    def _slices(self, run: tuple[str, int, int, int], size: float, most: float) -> Iterator[WindowPart]:
        """The run's attempts in page order (search_order.sql, read when its first slice is needed) cut into slices
        of whole tasks (``compute.slice_end``), each with the few ranges of ids its attempts hold; after the first,
        each is sized from the hits the walk has listed so far, or before any check from the candidates it has read
        (``compute.next_slice``)."""
        order = _run(self.con, load_sql("search_order"), {"run": run[0], "lo": run[1], "hi": run[2]})
        aids = order["attempt_id"].to_numpy()
        is_start = order["task_start"].notna().to_numpy()
        starts = [int(i) for i in is_start.nonzero()[0]]
        tasks = [str(t) for t in order["task_start"].to_numpy()[is_start]]
        lo = 0
        self._slice_size = size
        while lo < len(aids):
            hi = slice_end(starts, len(aids), lo, size)
            last = bisect.bisect_right(starts, hi - 1) - 1
            ranges = id_ranges([int(a) for a in aids[lo:hi]])
            yield WindowPart([run[0]], ranges, tasks[bisect.bisect_right(starts, lo) - 1], tasks[last], hi - lo)
            # resumed once the slice was read: its hits size the next
            # before any check, the candidates read stand for the hits (each that matches gives at least one)
            listed = self.n_listed if self.checked else self._n_pending
            lo, size = hi, next_slice(size, most, listed=listed, walked=self.walked, need=self.limit - self.n_listed)
            self._slice_size = size

    def _read(self, part: WindowPart, n_kept: int) -> bool:
        """One window or slice: its candidate attempts in page order, counted or checked; True when the scan rule
        says to scan instead."""
        params = self.params | {"runs": part.runs}
        if part.t0 is not None:
            params |= {"t0": part.t0, "t1": part.t1}
        wdf = _run(self.con, self._window_sql(part.ranges, is_slice=part.t0 is not None), params)
        self.walked += part.n
        self.seen += len(wdf)
        if self.is_exact:
            self._exact_window(wdf)
            return False
        if not self.checked and not self.count_all:
            # nothing checked yet: candidates wait until they could fill the page (as many as the hits it needs, a
            # matching candidate giving at least one), then are checked together (``next_chunk``), so a phrase
            # whose first slice holds few candidates costs one check of their texts, not one a slice
            self._pending.append(wdf)
            self._n_pending += len(wdf)
            if self._n_pending < self.limit - self.n_listed:
                return False
            wdf = self._take_pending()
        return self._check_window(wdf, n_kept)

    def _take_pending(self) -> pd.DataFrame:
        frames, self._pending, self._n_pending = self._pending, [], 0
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def _kept_runs(self) -> list[tuple[str, int, int, int]]:
        """The runs kept with the range and count of their covered attempts, in page order: from the manifest's
        runs of the files each segment covers (a few rows), else a group-by over the attempts (search_runs.sql)."""
        if self.cov.runs is None:
            kept = query_rows(self.con, load_sql("search_runs"), self.run_filter.params())
            return [(str(r), int(lo), int(hi), int(n)) for r, lo, hi, n in kept]
        ranges: dict[str, list[int]] = {}
        for seg_runs, files in zip(self.cov.runs, self.cov.files, strict=True):
            covered = set(files)
            for run, file_id, lo, hi, n in seg_runs:
                if file_id in covered:
                    r = ranges.setdefault(run, [lo, hi, 0])
                    r[0], r[1], r[2] = min(r[0], lo), max(r[1], hi), r[2] + n
        names = query_rows(self.con, load_sql("search_kept_runs"), self.run_filter.params())
        return [(str(r), *ranges[str(r)]) for (r,) in names if str(r) in ranges]  # type: ignore[misc]

    def _is_done(self) -> bool:
        if self.count_all or self.n_listed < self.limit:
            return False
        return not self.is_exact or self.n_attempts >= COUNT_CAP

    def _scan_instead(self, n_kept: int) -> bool:
        return not self.count_all and self.n_listed < self.limit and self.checked >= max(SCAN_MIN, SCAN_SHARE * n_kept)

    def _exact_window(self, wdf: pd.DataFrame) -> None:
        """The postings decide: the window's counts are its candidates'; the hits of the first attempts fill the
        page."""
        self.n_attempts += len(wdf)
        self.n_hits += int(wdf["n_units"].sum()) if len(wdf) else 0
        need = self.limit - self.n_listed
        if need <= 0 or wdf.empty:
            return
        upto = int((wdf["n_units"].cumsum() < need).sum()) + 1
        hits = self._chunk(wdf.iloc[:upto])
        self.hits.append(hits)
        self.n_listed += len(hits)

    def _check_window(self, wdf: pd.DataFrame, n_kept: int) -> bool:
        """Candidates checked on their texts, chunk by chunk in page order, until the page is full; True when the
        scan rule says to scan instead (see ``SCAN_SHARE``)."""
        pos = 0
        while pos < len(wdf) and (self.count_all or self.n_listed < self.limit):
            if self._scan_instead(n_kept):
                return True
            size = (
                MAX_CHUNK if self.count_all else next_chunk(self.n_attempts, self.checked, self.limit - self.n_listed)
            )
            chunk = wdf.iloc[pos : pos + size]
            pos += len(chunk)
            hits = self._chunk(chunk)
            self.checked += len(chunk)
            self.n_attempts += hits["attempt_id"].nunique()
            self.n_hits += len(hits)
            self.hits.append(hits)
            self.n_listed += len(hits)
        self.is_partial = self.is_partial or pos < len(wdf)
        return False

    def _scan_uncovered(self) -> pd.DataFrame | None:
        """Hits of the attempts no segment covers, scanned (their totals on every row, the first ``limit``)."""
        if not self.cov.n_unindexed:
            return None
        sql = uncovered_statement(self.kind, len(self.patterns), self.cov.uncovered)
        return _run(self.con, sql, self.params | {"no_file": self.cov.no_file, "min_unindexed": self.cov.lowest or 0})

    def _result(
        self, query: str, mode: str, scanned: pd.DataFrame | None, *, complete: bool, n_kept: int
    ) -> SearchResult:
        walked = pd.concat(self.hits, ignore_index=True) if self.hits else pd.DataFrame()
        page = self._page(walked.head(self.limit)) if len(walked) else pd.DataFrame()
        n_attempts, n_hits = self.n_attempts, self.n_hits
        if scanned is not None and len(scanned):
            n_attempts += int(scanned["n_attempts"].iloc[0])
            n_hits += int(scanned["n_hits"].iloc[0])
            page = pd.concat([page, scanned.dropna(subset=["run_id"])], ignore_index=True)
        if len(page):
            page = (
                page.assign(_step=page["step"].fillna(-1))
                .sort_values(["run_id", "task_id", "sample", "_step", "field"], kind="stable")
                .drop(columns=["_step"])
                .head(self.limit)
            )
        page = page.assign(n_attempts=n_attempts, n_hits=n_hits) if len(page) else pd.DataFrame()
        result = result_of(query, mode, page)
        estimate = None
        if not complete:
            estimate = self._estimate(n_kept)
            estimate += n_attempts - self.n_attempts  # the scanned part is exact
        return dataclasses.replace(
            result, n_attempts=n_attempts, n_hits=n_hits, is_indexed=True, n_unindexed=self.cov.n_unindexed,
            is_count_exact=complete, n_attempts_estimate=estimate, n_checked=self.checked,
        )  # fmt: skip

    def _estimate(self, n_kept: int) -> int:
        """Attempts with a hit among all kept, extrapolated from the part read (labelled an estimate wherever
        shown): by the attempts walked when the postings decide; else by the share of candidates checked that
        matched, times the candidates per attempt walked."""
        if self.walked == 0:
            return self.n_attempts
        if self.is_exact:
            return max(self.n_attempts, round(self.n_attempts * n_kept / self.walked))
        per_candidate = self.n_attempts / max(self.checked, 1)
        return max(self.n_attempts, round(per_candidate * self.seen / self.walked * n_kept))

    def _page(self, listed: pd.DataFrame) -> pd.DataFrame:
        """The listed hits with a window of their text around the first match: the window a chunk gave a hit it
        checked on its text, else read (search_page.sql)."""
        cols = ["pos", "mlen", "w0", "n_chars", "win"]
        has = listed["win"].notna() if "win" in listed else pd.Series(False, index=listed.index)
        if has.all():
            return listed
        hits = listed.loc[~has].drop(columns=cols, errors="ignore")
        aids = [int(a) for a in hits["attempt_id"]]
        params = {k: v for k, v in sql_params(self.kind, self.patterns).items()} | {
            "aids": aids, "steps": [-1 if pd.isna(s) else int(s) for s in hits["step"]],
            "srcs": [int(s) for s in hits["src"]], "context": SNIPPET_CONTEXT,
        }  # fmt: skip
        ranges = id_ranges(aids)
        sql = load_sql("search_page").format(
            locate=locate(self.kind, "text"),
            ids_a=in_ranges("a.attempt_id", ranges),
            ids_s=in_ranges("s.attempt_id", ranges),
        )
        with _or_filter_threshold(self.con, len(aids) + 1):
            texts = _run(self.con, sql, params)
        is_long = texts["src"] == 5
        if is_long.any():  # the window of a long result, read by its hash
            windows = self._long(texts.loc[is_long], check=False).set_index("text_hash")
            for col in cols:
                texts[col] = texts[col].astype(object)
                texts.loc[is_long, col] = texts.loc[is_long, "result_hash"].map(windows[col]).to_numpy()
        keyed = hits.assign(step_key=[-1 if pd.isna(s) else int(s) for s in hits["step"]], src=hits["src"].astype(int))
        texts = texts.drop(columns=["result_hash"]).rename(columns={"step": "step_key"})
        texts = texts.astype({"step_key": int, "src": int})
        read = keyed.merge(texts, on=["attempt_id", "step_key", "src"], how="left").drop(columns=["step_key"])
        if not has.any():
            return read
        read.index = hits.index  # a left merge keeps the hits' order
        return pd.concat([listed.loc[has], read]).sort_index()


_HASH = re.compile(r"[0-9a-f]{64}")
LONG_ROW_GAP = 100_000  # rows of texts this close are read as one range (each range read costs about 0.3 s at 10M)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> pd.DataFrame:
    """``sql`` with the parameters it names (DuckDB refuses others)."""
    named = set(_PARAM.findall(re.sub(r"--[^\n]*", "", sql)))
    return query_df(con, sql, {k: v for k, v in params.items() if k in named})


@contextlib.contextmanager
def _or_filter_threshold(con: duckdb.DuckDBPyConnection, value: int) -> Iterator[None]:
    """DuckDB's ``dynamic_or_filter_threshold`` raised for one statement, then put back: the attempts of a chunk
    or the listed hits reach the scans of ``steps`` and ``texts`` that fetch their texts as a list of ids, which
    the zone maps prune to the row groups holding them; by default (50) only their min and max arrive, and hits
    from runs far apart made that fetch read every step (`a77` at 1M: 0.8 -> 0.22 CPU s). Only for those
    statements: a window's join given its 20,000 attempts as a list cost 1.5 CPU s instead of 0.1 at 1M."""
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

"""search, the index's SQL: the text of the statements that find a query's candidates in the index's segments
(vocabulary, postings, word pairs and where they occur). Pure string building over the store's own integers and
catalog names (checked), never user input: the query's runs are parameters ($t<i>); analytics/search/load.py runs them."""

from __future__ import annotations

import re

# the catalog name store/search_index.py gives the attached index (checked before it goes into SQL)
INDEX_CATALOG = re.compile(r"rl_search_[0-9a-f]+_[0-9a-f]+")

# how a query run matches a token of a segment's vocabulary (compute.query_runs); the run is the parameter $t<i>
RUN_MATCH = {
    "whole": "v.token = $t{i}",
    "prefix": "starts_with(v.token, $t{i})",
    "suffix": "ends_with(v.token, $t{i})",
    "infix": "contains(v.token, $t{i})",
}

# a run of one token never matches a word pair ("first second"); a pair run holds its space, so it matches pairs only
ONE_TOKEN = " AND NOT contains(v.token, ' ')"
# a query without candidates in any segment
NO_CANDIDATES = "SELECT NULL::BIGINT AS attempt_id, NULL::INTEGER AS step, NULL::UTINYINT AS field LIMIT 0"


def segments_checked(segments: list[str]) -> list[str]:
    for seg in segments:
        if not INDEX_CATALOG.fullmatch(seg):  # an identifier in SQL: only the store's own names
            raise ValueError(f"not a search index catalog: {seg!r}")
    return segments


def ints(values: list[int]) -> str:
    """Integers of the store or the index as a SQL list (never user input): constants the zone maps can use."""
    return ", ".join(str(int(v)) for v in values) or "NULL"


def in_ranges(column: str, ranges: list[tuple[int, int]]) -> str:
    """SQL true when ``column`` lies in one of ``ranges`` (ascending integers of the store, never user input):
    constants the zone maps use to skip the row groups between them."""
    if not ranges:
        return "false"
    whole = f"{column} BETWEEN {int(ranges[0][0])} AND {int(ranges[-1][1])}"
    if len(ranges) == 1:
        return whole
    # the whole span too: a lake prunes its files by a plain range, not by the ranges' OR
    return f"({whole} AND (" + " OR ".join(f"{column} BETWEEN {int(lo)} AND {int(hi)}" for lo, hi in ranges) + "))"


def candidates_sql(
    segments: list[str],
    ids: list[list[list[int]]],
    chosen: list[int],
    chosen_alone: list[int],
    pairs: list[bool],
    aligned: list[tuple[int, int]],
    positions: list[bool],
    ranges: list[tuple[int, int]],
) -> str:
    """Per segment, every (attempt, step, field) with its attempt id in ``ranges`` whose text holds a token of each chosen run
    (``chosen_alone``, runs of one token, in a segment without word pairs), for an attempt of ``win`` whose file
    that segment covers ($f<segment>). In a segment whose pairs keep their positions, the ``aligned`` pairs (run,
    offset in the phrase) must also occur at those offsets from one another (``aligned_sql``)."""
    parts = []
    in_ids = in_ranges("attempt_id", ranges)
    for s, seg in enumerate(segments_checked(segments)):
        lists = [ids[s][i] for i in (chosen if pairs[s] else chosen_alone)]
        if not all(lists):
            continue  # a run matches no token of this segment: none of its texts is a candidate
        sets = [
            f"SELECT DISTINCT attempt_id, step, field FROM {seg}.postings WHERE token_id IN ({ints(tokens)}) AND {in_ids}"
            for i, tokens in zip(chosen if pairs[s] else chosen_alone, lists, strict=True)
            if not (positions[s] and len(aligned) > 1 and any(i == r for r, _ in aligned))
        ]
        if positions[s] and len(aligned) > 1:
            at = [(ids[s][r], offset) for r, offset in aligned]
            if not all(tokens for tokens, _ in at):
                continue
            sets.insert(0, aligned_sql(seg, at, in_ids))
        sets_sql = " INTERSECT ".join(sets)
        parts.append(
            f"SELECT p.attempt_id, p.step, p.field FROM ({sets_sql}) p "
            f"SEMI JOIN win w ON w.attempt_id = p.attempt_id AND list_contains($f{s}, w.file_id)"
        )
    return " UNION ALL ".join(parts) or NO_CANDIDATES


def aligned_sql(seg: str, at: list[tuple[list[int], int]], in_ids: str) -> str:
    """The (attempt, step, field) of segment ``seg`` whose text holds, for some position p, a pair of each entry's
    tokens at p + its offset (``at``: token ids, offset in the phrase): the phrase's pairs one after the other, as
    in any text holding the phrase. ``in_ids``: the attempts read (fixed SQL of integer ranges)."""
    base = at[0][1]
    parts = [
        f"(SELECT attempt_id, step, field, pos FROM {seg}.postings WHERE token_id IN ({ints(tokens)}) AND {in_ids}) p{k}"
        for k, (tokens, _) in enumerate(at)
    ]
    joins = "".join(
        f" JOIN {part} ON p{k}.attempt_id = p0.attempt_id AND p{k}.step = p0.step AND p{k}.field = p0.field "
        f"AND p{k}.pos = p0.pos + {int(offset) - int(base)}"
        for k, (part, (_, offset)) in enumerate(zip(parts, at, strict=True))
        if k
    )
    return f"SELECT DISTINCT p0.attempt_id, p0.step, p0.field FROM {parts[0]}{joins}"

"""What transcript search's index keeps so a search pays no fixed cost over the whole store (store/search_index.py):
the runs each segment covers, in the manifest (the walk reads them instead of a group-by over every attempt), and
the rows of ``texts`` holding its long results (read by row, checked by hash, looked up by hash only when the row
does not hold it). Each is shown to be what is read, and results stay the scan's when it is missing or wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from analytics import search as sr
from analytics.search import load as search_load
from jobs.search_index import refresh
from store import reader
from store.search_index import MANIFEST, read_manifest
from tests.test_search_index import QUERIES, _assert_same, _both, _ingest, _write


@pytest.fixture
def db(tmp_path: Path) -> Path:
    out = tmp_path / "s.duckdb"
    _ingest(_write(tmp_path / "a.jsonl", [("r-a", "sb"), ("r-b", "sb"), ("r-o", "other")], seed=7), out)
    return out


def _manifest(db: Path) -> tuple[Path, dict[str, Any]]:
    path = db.with_name(db.name + ".search") / MANIFEST
    return path, json.loads(path.read_text(encoding="utf-8"))


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL statements the search's loader runs through query_rows."""
    seen: list[str] = []
    real = search_load.query_rows

    def spy(con: duckdb.DuckDBPyConnection, sql: str, params: Any = None) -> Any:
        seen.append(sql)
        return real(con, sql, params)

    monkeypatch.setattr(search_load, "query_rows", spy)
    return seen


def test_the_manifest_keeps_each_segments_runs_and_the_walk_reads_them(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh(db)
    _ingest(_write(tmp_path / "b.jsonl", [("r-n", "sb")], seed=8, n_tasks=3), db)
    refresh(db)
    path, doc = _manifest(db)
    assert sorted(doc["runs"]) == sorted(doc["segments"])
    kept = sorted(tuple(r) for rs in doc["runs"].values() for r in rs)
    with reader(db) as con:
        truth = con.execute(
            "SELECT run_id, file_id, min(attempt_id), max(attempt_id), count(*) FROM attempts GROUP BY ALL ORDER BY 1, 2"
        ).fetchall()
    assert kept == [tuple(r) for r in truth]
    seen = _spy(monkeypatch)
    n_indexed = 0
    with reader(db) as con:
        for query in QUERIES:
            seen.clear()
            indexed = sr.search(con, query=query)
            n_indexed += indexed.is_indexed
            if indexed.is_indexed:  # search_runs.sql's group-by was not run (a scan runs it: its windows' runs)
                assert not any("min(a.attempt_id)" in s for s in seen), query
            _assert_same(indexed, _both(con, query)[1])
    assert n_indexed >= len(QUERIES) // 2, n_indexed
    # proof that the manifest's runs are what the walk reads: without r-a's, its hits are not found
    doc["runs"] = {s: [r for r in rs if r[0] != "r-a"] for s, rs in doc["runs"].items()}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with reader(db) as con:
        hits = sr.search(con, query="rate limit", limit=1000).hits
        assert len(hits) and "r-a" not in set(hits["run_id"])


def test_a_manifest_without_runs_falls_back_and_the_next_refresh_adds_them(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = refresh(db)
    path, doc = _manifest(db)
    runs = doc.pop("runs")
    path.write_text(json.dumps(doc), encoding="utf-8")  # as a refresh before they were kept wrote it
    seen = _spy(monkeypatch)
    with reader(db) as con:
        for query in QUERIES[:6]:
            _assert_same(*_both(con, query))
    assert any("min(a.attempt_id)" in s for s in seen)  # read from the attempts instead
    (segment,) = read_manifest(Path(first.path)) or []
    stamp = (Path(first.path) / segment).stat().st_mtime_ns
    again = refresh(db)  # nothing new: the same segment, its runs added to the manifest
    assert again.attempts_added == 0 and again.segments == 1
    assert (Path(first.path) / segment).stat().st_mtime_ns == stamp
    assert _manifest(db)[1]["runs"] == runs


def _long_rows(db: Path) -> Path:
    (segment,) = read_manifest(db.with_name(db.name + ".search")) or []
    return db.with_name(db.name + ".search") / segment


def test_long_results_are_read_by_the_row_the_index_keeps(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refresh(db)
    with duckdb.connect(str(_long_rows(db)), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM search_long").fetchall()[0][0] > 0
    seen = _spy(monkeypatch)
    with reader(db) as con:
        a, b = _both(con, "needle zz9")
        _assert_same(a, b)
        assert (a.hits["field"] == "result").any() and a.hits["snippet"].str.contains("needle zz9").all()
    assert not any("WHERE text_hash IN" in s for s in seen)  # no lookup of a hash in texts


@pytest.mark.parametrize("damage", ["shifted", "dropped"])
def test_a_row_that_does_not_hold_the_text_is_looked_up_by_hash(
    db: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """Rows renumbered (each points at another text) or a segment written before the table: results stay the
    scan's, the texts found by hash."""
    refresh(db)
    with duckdb.connect(str(_long_rows(db))) as con:
        if damage == "shifted":
            con.execute("UPDATE search_long SET text_row = text_row + 1")
        else:
            con.execute("DROP TABLE search_long")
    seen = _spy(monkeypatch)
    with reader(db) as con:
        for query in ["needle zz9", "filler needle", "rate limit", "zz9 end"]:
            a, b = _both(con, query)
            _assert_same(a, b)
    assert any("WHERE text_hash IN" in s for s in seen)


def test_a_refresh_keeps_the_rows_of_an_older_segments_long_results(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment written before search_long: the next refresh, with nothing new to index, writes a segment holding
    their rows (the old one is not rewritten), and search reads them instead of looking hashes up."""
    refresh(db)
    old = _long_rows(db)
    with duckdb.connect(str(old)) as con:
        n = con.execute("SELECT count(*) FROM search_long").fetchall()[0][0]
        con.execute("DROP TABLE search_long")
    stamp = old.stat().st_mtime_ns
    done = refresh(db)
    assert done.attempts_added == 0 and done.segments == 2 and old.stat().st_mtime_ns == stamp
    new = next(p for p in _segments_of(db) if p != old)
    with duckdb.connect(str(new), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM search_long").fetchall()[0][0] == n
    seen = _spy(monkeypatch)
    with reader(db) as con:
        for query in ["needle zz9", "filler needle", "rate limit"]:
            _assert_same(*_both(con, query))
    assert not any("WHERE text_hash IN" in s for s in seen)


def _segments_of(db: Path) -> list[Path]:
    folder = db.with_name(db.name + ".search")
    return [folder / s for s in read_manifest(folder) or []]


def test_query_pairs_are_the_runs_next_to_each_other_with_the_spans_kind() -> None:
    from analytics.search.compute import query_pairs

    assert query_pairs("imit exce") == [("imit exce", "infix")]
    assert query_pairs("rate limit exceeded") == [("rate limit", "suffix"), ("limit exceeded", "prefix")]
    assert query_pairs('"hello (world)" [twice]') == [("hello world", "whole"), ("world twice", "whole")]
    assert query_pairs("a b a b") == [("a b", "suffix"), ("b a", "whole"), ("a b", "prefix")]
    assert query_pairs("one") == [] and query_pairs("%_o") == []


def test_word_pairs_narrow_a_phrase_of_common_words_and_older_segments_do_without(db: Path) -> None:
    """Every segment written now holds the texts' word pairs: a phrase's candidates are the texts holding its
    pairs, far fewer than those holding its words; a segment without them (written before) is searched by its
    words alone. Results are the scan's either way."""
    refresh(db)
    phrase = "exceeded at line 7 rate"  # common words, rarely in this order
    with reader(db) as con:
        a, b = _both(con, phrase, count_all=True)
        _assert_same(a, b)
        with_pairs = a.n_checked
        assert b.n_hits > 0 and with_pairs < 3 * b.n_attempts
    with duckdb.connect(str(_long_rows(db))) as con:
        con.execute("DROP TABLE search_pairs")  # as a segment written before pairs
    with reader(db) as con:
        a, b = _both(con, phrase, count_all=True)
        _assert_same(a, b)
        assert a.n_checked > 2 * with_pairs


def test_a_merge_keeps_the_long_results_rows_of_a_segment_written_before_them(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from store import search_index

    refresh(db)
    with duckdb.connect(str(_long_rows(db))) as con:
        con.execute("DROP TABLE search_long")
    _ingest(_write(tmp_path / "b.jsonl", [("r-n", "sb")], seed=8, n_tasks=3), db)
    monkeypatch.setattr(search_index, "MAX_SEGMENTS", 1)  # the old segment and the new one merge into one
    done = refresh(db)
    assert done.segments == 1 and done.attempts_added == 6
    (merged,) = _segments_of(db)
    with duckdb.connect(str(merged), read_only=True) as con:
        kept = con.execute("SELECT count(DISTINCT (attempt_id, step)) FROM search_long").fetchall()[0][0]
    with reader(db) as con:
        truth = con.execute("SELECT count(*) FROM steps WHERE result_hash IS NOT NULL").fetchall()[0][0]
    assert kept == truth > 0
    seen = _spy(monkeypatch)
    with reader(db) as con:
        for query in ["needle zz9", "filler needle", "rate limit"]:
            _assert_same(*_both(con, query))
    assert not any("WHERE text_hash IN" in s for s in seen)


def test_pair_offsets_keep_every_pair_and_its_place() -> None:
    from analytics.search.compute import pair_offsets

    assert pair_offsets("a b a b") == [(("a b", "suffix"), 0), (("b a", "whole"), 1), (("a b", "prefix"), 2)]
    assert pair_offsets("x-y") == [(("x y", "infix"), 0)]
    assert pair_offsets("one") == []


@pytest.mark.parametrize("merged", [False, True])
def test_pairs_at_consecutive_positions_narrow_a_phrase_to_its_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, merged: bool
) -> None:
    """Texts of four words in random order: every pair of a phrase is in many texts, rarely one after the other.
    A segment that keeps where each pair occurs gives as candidates only texts holding the phrase's pairs one after
    the other (partial first and last words, a pair twice in the phrase); without the positions (a segment written
    before them, or a merge with one) every text holding the pairs is checked. Results are the scan's either way."""
    from store import search_index
    from tests import test_search_index as tsi

    monkeypatch.setattr(tsi, "FRAGMENTS", ["one two", "two three", "three four", "four one", "one", "three"])
    monkeypatch.setattr(search_load, "SCAN_SHARE", float("inf"))
    db = tmp_path / "s.duckdb"
    _ingest(_write(tmp_path / "a.jsonl", [("r-a", "sb"), ("r-b", "sb")], seed=5, n_tasks=30), db)
    refresh(db)
    if merged:  # a second segment, merged with the first into one that keeps positions
        _ingest(_write(tmp_path / "b.jsonl", [("r-c", "sb")], seed=6, n_tasks=10), db)
        monkeypatch.setattr(search_index, "MAX_SEGMENTS", 1)
        assert refresh(db).segments == 1
    phrases = ["one two three", "ne two three fo", "two one two", "one two one two", "four one one", "three three"]
    checked = {}
    with reader(db) as con:
        for phrase in phrases:
            a, b = _both(con, phrase, count_all=True)
            _assert_same(a, b)
            assert a.is_indexed and a.n_checked == b.n_attempts, phrase  # every candidate holds the phrase
            checked[phrase] = a.n_checked
    assert checked["one two three"] > 0 and checked["one two one two"] > 0
    with duckdb.connect(str(_long_rows(db))) as con:
        con.execute("DROP TABLE search_positions")  # as a segment written before positions
    with reader(db) as con:
        wider = 0
        for phrase in phrases:
            a, b = _both(con, phrase, count_all=True)
            _assert_same(a, b)
            wider += a.n_checked > checked[phrase]
    assert wider >= 3


def test_a_page_checked_on_the_texts_reads_no_text_twice(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hits checked on their texts come back from the chunk with their windows, and a long result found to match
    is kept: the page reads neither again (search_page.sql is not run, search_long.sql once per chunk at most)."""
    refresh(db)
    seen: list[str] = []
    real = search_load._run

    def spy(con: duckdb.DuckDBPyConnection, sql: str, params: Any) -> Any:
        seen.append(sql)
        return real(con, sql, params)

    monkeypatch.setattr(search_load, "_run", spy)
    with reader(db) as con:
        for query in ["needle zz9", "filler needle", "rate limit", '"hello (world)"']:
            seen.clear()
            a, b = _both(con, query)
            _assert_same(a, b)
            assert a.is_indexed and a.n_checked > 0 and len(a.hits) > 0, query
            chunks = sum("the hits of a few attempts" in s for s in seen)
            assert chunks > 0 and not any("the texts of the hits listed" in s for s in seen), query
            assert sum("long results (stored once in texts)" in s for s in seen) <= chunks, query

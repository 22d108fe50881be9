"""Transcript search's index (store/search_index.py, analytics/sql/search_window.sql and its neighbours): a phrase or words search
through the index gives exactly the scan's result (counts, hits, snippets) on tricky texts and on many random
queries cut from them; data ingested after the index was built is found, deleted runs are gone (also when the next
ingest reuses their attempt ids); refreshes add segments without rewriting the old ones and merge them past a
count; regular expressions, queries without a letter or digit and stores without an index scan."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from analytics import search as sr
from analytics.plaintext import md_plain
from analytics.search import compute
from analytics.search import load as search_load
from ingest.records import INLINE_RESULT_CHARS
from jobs.search_index import drop, refresh
from store import ALL_RUNS, RunFilter, attach_search_index, delete_run, reader
from tests.conftest import ROOT

# fragments with punctuation, LIKE wildcards, quotes, non-ASCII, mixed case and words inside words
FRAGMENTS = [
    "Rate limit exceeded",
    "RATE-LIMIT: retry after 30s",
    "discount 50%_off (final)",
    'He said "hello (world)" [twice]',
    "naïve café ÜBER straße",
    "İstanbul ΣΊΣΥΦΟΣ",
    "a_b%c\\d 'quoted'",
    "QUOTA_EXCEEDED at line 7",
    "tab\tseparated  and   spaced",
    "limitless exceedance",
    "snake_case_identifier_42",
]
QUERIES = [
    "rate limit",
    "imit exce",
    "e",
    "50%",
    "%_o",
    '"hello (world)"',
    "café über",
    "naïve",
    "straße",
    "σίσυφος",
    "istanbul",
    "\\d 'quo",
    "quota_exceeded at",
    "tab separated and spaced",
    "needle zz9",
    "identifier_42",
    "ed",
    "not there at all",
]


def _text(rng: np.random.Generator, n: int) -> str:
    return " ".join(FRAGMENTS[i] for i in rng.integers(0, len(FRAGMENTS), n))


def _attempt(rng: np.random.Generator, run: str, task: str, sample: int) -> dict:
    steps = []
    for rnd in range(int(rng.integers(0, 5))):
        step: dict = {"round": rnd, "kind": "tool_call", "tool": "t", "args": {"q": _text(rng, 1), "n": rnd}}
        if rng.random() < 0.2:  # a long result, stored once in texts
            step["result"] = _text(rng, 2) + " " + "filler " * (INLINE_RESULT_CHARS // 6) + "needle zz9 end"
        elif rng.random() < 0.7:
            step["result"] = _text(rng, 2)
        else:
            step["error"] = _text(rng, 1)
        steps.append(step)
        if rng.random() < 0.5:
            steps.append({"round": rnd, "kind": "thought", "content": _text(rng, 3)})
    answer = _text(rng, 2) if rng.random() < 0.8 else None
    return {"record": "attempt", "run_id": run, "task_id": task, "sample": sample, "score": 0.0, "answer": answer,
            "steps": steps}  # fmt: skip


def _write(path: Path, runs: list[tuple[str, str]], *, seed: int, n_tasks: int = 12) -> Path:
    rng = np.random.default_rng(seed)
    lines: list[dict] = [{"record": "benchmark", "benchmark": b, "scoring": "binary"} for b in {b for _, b in runs}]
    lines += [
        {"record": "task", "benchmark": b, "task_id": f"T{i}"} for b in {b for _, b in runs} for i in range(n_tasks)
    ]
    for run, bench in runs:
        lines.append({"record": "run", "run_id": run, "benchmark": bench, "agent": run, "eval_date": "2026-01-10"})
        lines += [_attempt(rng, run, f"T{i}", s) for i in range(n_tasks) for s in range(2)]
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    return path


def _ingest(path: Path, db: Path | str) -> None:
    from ingest.pipeline import ingest_paths

    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]


@pytest.fixture(scope="module")
def db_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two benchmarks, three runs of generated tricky texts, ingested once for the module (read-only: ``db`` copies
    it)."""
    folder = tmp_path_factory.mktemp("search-master")
    out = folder / "s.duckdb"
    _ingest(_write(folder / "a.jsonl", [("r-a", "sb"), ("r-b", "sb"), ("r-o", "other")], seed=7), out)
    return out


@pytest.fixture
def db(db_master: Path, tmp_path: Path) -> Path:
    """A private copy of ``db_master`` (ingested but not indexed) that a test may change: the same store each test
    built by ingesting the same file, without the ingest."""
    assert not db_master.with_name(db_master.name + ".search").exists()  # no test indexed the master
    for src in db_master.parent.iterdir():
        if src.name.startswith(db_master.name):
            shutil.copyfile(src, tmp_path / src.name)
    return tmp_path / db_master.name


def _both(con: duckdb.DuckDBPyConnection, query: str, **kw: Any) -> tuple[sr.SearchResult, sr.SearchResult]:
    """The search through the index and the plain scan, one statement over every attempt (exact counts)."""
    scan = sr.search(con, query=query, use_index=False, **(kw | {"count_all": True}))
    return sr.search(con, query=query, use_index=True, **kw), scan


def _assert_same(a: sr.SearchResult, b: sr.SearchResult) -> None:
    """The hits listed are the scan's; the counts too when exact, else a lower bound with an estimate."""
    assert a.hits.to_dict("records") == b.hits.to_dict("records"), a.query
    if a.is_count_exact:
        assert (a.n_attempts, a.n_hits) == (b.n_attempts, b.n_hits), a.query
    else:
        assert a.n_attempts <= b.n_attempts and a.n_hits <= b.n_hits, a.query
        assert a.n_attempts_estimate is not None and a.n_attempts_estimate >= a.n_attempts, a.query
        assert len(a.hits) == len(b.hits), a.query  # it stopped with its page full, never before


@pytest.mark.parametrize("batch", [50_000, 5])
def test_index_gives_the_scans_result_for_every_query_and_filter(
    db: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    from store import search_index

    monkeypatch.setattr(search_index, "BATCH_ATTEMPTS", batch)  # 5: a refresh of 15 batches
    monkeypatch.setattr(search_index, "BATCH_LONG_TEXTS", batch)  # and of several ranges of long results
    monkeypatch.setattr(search_load, "SCAN_SHARE", float("inf"))  # every phrase through the index, even common ones
    done = refresh(db)
    assert done.attempts_added == 72 and done.attempts_covered == 72 and done.rows > 72
    used: list[Any] = []
    walk_run = search_load._Walk.run

    def spy(self: Any, *a: Any) -> sr.SearchResult:
        used.append(self)
        return walk_run(self, *a)

    monkeypatch.setattr(search_load._Walk, "run", spy)
    n_with_hits = 0
    with reader(db) as con:
        for query in QUERIES:
            for kw in (
                {},
                {"run_filter": RunFilter(benchmark="sb")},
                {"run_filter": RunFilter(run_ids=("r-b",)), "limit": 5},
                {"limit": 1000},
            ):
                used.clear()
                indexed, scanned = _both(con, query, **kw)
                # the index was read and no scan was needed (a query without a-z, 0-9 or _ scans; one whose
                # tokens are in no text is answered by the vocabulary alone)
                assert indexed.is_indexed == bool(sr.query_runs(query.lower()))
                assert indexed.n_unindexed == 0 and all(u.cov.n_unindexed == 0 for u in used)
                assert used or indexed.n_hits == 0
                _assert_same(indexed, scanned)
                n_with_hits += indexed.n_hits > 0
    assert n_with_hits >= 3 * (len(QUERIES) - 2)  # the queries do hit (the comparison is not of empty results)


def _random_queries(seed: int, n: int) -> list[tuple[str, str]]:
    """Phrases cut at random from the fragments (partial words, punctuation, quotes, spaces), in random case, and
    words queries of whole and partial words."""
    rng = np.random.default_rng(seed)
    text = " ".join(FRAGMENTS) + ' "hello (world)" snake_case_identifier_42 50%_off'
    out: list[tuple[str, str]] = []
    while len(out) < n:
        start, size = int(rng.integers(0, len(text))), int(rng.integers(1, 24))
        query = text[start : start + size]
        if rng.random() < 0.5:
            query = "".join(c.upper() if rng.random() < 0.5 else c for c in query)
        if rng.random() < 0.1:
            query = f'"{query}"'
        if query.strip():
            out.append((query, "phrase"))
        words = [w for w in text.split() if w.strip()]
        picks = [words[int(i)] for i in rng.integers(0, len(words), int(rng.integers(1, 4)))]
        picks = [w[: int(rng.integers(1, len(w) + 1))] if rng.random() < 0.3 else w for w in picks]
        out.append((" ".join(picks), "words"))
    return out


def test_random_queries_through_the_index_give_the_scans_result(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random phrases and words on an index of two segments (plus attempts not covered): hit for hit the scan's."""
    monkeypatch.setattr(search_load, "SCAN_SHARE", float("inf"))  # common phrases too through the index
    refresh(db)
    _ingest(_write(tmp_path / "more.jsonl", [("r-m", "sb")], seed=21, n_tasks=6), db)
    assert refresh(db).segments == 2
    _ingest(_write(tmp_path / "late.jsonl", [("r-l", "other")], seed=22, n_tasks=2), db)
    n_hit = n_indexed = 0
    with reader(db) as con:
        for query, mode in _random_queries(seed=3, n=120):
            indexed, scanned = _both(con, query, mode=mode, limit=40)
            _assert_same(indexed, scanned)
            n_hit += indexed.n_hits > 0
            n_indexed += indexed.is_indexed
    assert n_hit >= 50 and n_indexed >= 110  # the comparisons are of results (of 120), through the index


def test_a_rare_phrase_of_common_words_is_scanned_and_says_why(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidates checked without filling the page past the scan rule's share: the scan, with the reason; a phrase
    whose hits fill the page early and one word alone stay on the index."""
    monkeypatch.setattr(search_load, "SCAN_MIN", 1)  # the small store's common words count as common
    monkeypatch.setattr(search_load, "SCAN_SHARE", 0.0)
    monkeypatch.setattr(compute, "FIRST_CHUNK", 2)
    done = refresh(db)
    with reader(db) as con:  # its word pair "exceeded twice" is in no text: the index answers alone
        paired = sr.search(con, query="rate limit exceeded twice")
        assert paired.is_indexed and paired.n_hits == 0 and paired.n_checked == 0
    (segment,) = _segments(done)
    with duckdb.connect(str(segment)) as seg:
        seg.execute("DROP TABLE search_pairs")  # a segment written before word pairs: by its words alone
    with reader(db) as con:
        # common words, never in this order (a page of 2: the first check waits for 2 candidates, checks 3, and the
        # rule stops the walk before the next; on a page of the default size every candidate of this small store is
        # read before the first check, which then finds the result through the index, no scan needed)
        rare = sr.search(con, query="rate limit exceeded twice", limit=2)
        assert not rare.is_indexed and "did not fill the page" in sr.how_searched(rare)
        _assert_same(rare, sr.search(con, query="rate limit exceeded twice", use_index=False, limit=2))
        whole = sr.search(con, query="rate limit exceeded twice")
        assert whole.is_indexed and whole.is_count_exact and whole.n_hits == 0 and whole.n_checked > 3
        common = sr.search(con, query="rate limit", limit=1)  # the first chunk fills the page
        assert common.is_indexed and not common.is_count_exact and common.n_checked == 2
        _assert_same(common, sr.search(con, query="rate limit", use_index=False, limit=1))
        none = sr.search(con, query="identifier_42 qqqq")  # no token starts with qqqq: the postings say so
        assert none.is_indexed and none.n_hits == 0
        word = sr.search(con, query="rate")
        assert word.is_indexed and word.n_hits > 0
        _assert_same(word, sr.search(con, query="rate", use_index=False))


@pytest.mark.parametrize("limit", [1, 7])
def test_a_walk_in_small_windows_and_chunks_lists_the_scans_hits_and_counts_honestly(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """Windows of one run and chunks of a few attempts, so searches stop early: the hits listed are the scan's,
    under every filter; stopped counts are lower bounds with an estimate and say so; ``count_all`` gives the scan's
    counts exactly."""
    monkeypatch.setattr(search_load, "SCAN_SHARE", float("inf"))
    monkeypatch.setattr(compute, "MIN_WINDOW", 1)
    monkeypatch.setattr(search_load, "FIRST_WINDOW_HITS", 0)
    monkeypatch.setattr(compute, "FIRST_CHUNK", 1)
    monkeypatch.setattr(compute, "MAX_CHUNK", 3)
    monkeypatch.setattr(search_load, "MAX_CHUNK", 3)
    monkeypatch.setattr(search_load, "COUNT_CAP", 5)
    refresh(db)
    _ingest(_write(tmp_path / "late.jsonl", [("r-l", "sb")], seed=22, n_tasks=2), db)  # scanned, merged in
    n_stopped = 0
    with reader(db) as con:
        for query, mode in [(q, "phrase") for q in QUERIES] + _random_queries(seed=5, n=8):
            for flt in (ALL_RUNS, RunFilter(benchmark="sb"), RunFilter(run_ids=("r-b", "r-l"))):
                kw: dict[str, Any] = {"mode": mode, "limit": limit, "run_filter": flt}
                indexed, scanned = _both(con, query, **kw)
                _assert_same(indexed, scanned)
                n_stopped += not indexed.is_count_exact
                if not indexed.is_count_exact:
                    assert "at least" in sr.text_report(indexed) and "about" in sr.text_report(indexed)
                    full = sr.search(con, query=query, count_all=True, **kw)
                    assert full.is_count_exact and full.is_indexed
                    _assert_same(full, scanned)
    assert n_stopped >= 20  # the walks did stop early (the comparisons are not all of complete walks)


def test_the_count_stops_at_the_cap_when_the_postings_decide(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compute, "MIN_WINDOW", 1)
    monkeypatch.setattr(search_load, "FIRST_WINDOW_HITS", 0)
    refresh(db)
    with reader(db) as con:
        full = sr.search(con, query="rate", limit=3)
        assert full.is_count_exact and full.n_attempts > 10
        monkeypatch.setattr(search_load, "COUNT_CAP", 10)
        capped = sr.search(con, query="rate", limit=3)
        assert not capped.is_count_exact and 10 <= capped.n_attempts < full.n_attempts
        assert capped.hits.equals(full.hits) and capped.n_checked == 0  # the postings decide: nothing read
        doc = sr.to_json(capped)
        assert doc["n_attempts"] == capped.n_attempts and doc["is_count_exact"] is False
        assert doc["n_attempts_estimate"] == capped.n_attempts_estimate
        assert sr.to_json(full)["is_count_exact"] is True


def _segments(done: Any) -> list[Path]:
    from store.search_index import read_manifest

    return [Path(done.path) / s for s in read_manifest(Path(done.path)) or []]


def test_the_index_is_what_is_read(db: Path) -> None:
    """Emptying the postings but keeping what the segment covers makes the indexed search miss: proof that it
    reads them."""
    done = refresh(db)
    assert Path(done.path) == db.with_name(db.name + ".search") and done.index_bytes > 0
    with reader(db) as con:
        assert sr.search(con, query="rate limit").n_hits > 0
    (segment,) = _segments(done)
    con = duckdb.connect(str(segment))
    con.execute("DELETE FROM postings")
    con.close()
    with reader(db) as con:
        assert sr.search(con, query="rate limit").n_hits == 0
        assert sr.search(con, query="rate limit", use_index=False).n_hits > 0


def test_ingest_after_the_build_is_found_and_a_refresh_covers_it(db: Path, tmp_path: Path) -> None:
    refresh(db)
    _ingest(_write(tmp_path / "new.jsonl", [("r-new", "sb")], seed=11, n_tasks=3), db)
    extra = tmp_path / "x.jsonl"
    extra.write_text(
        json.dumps({"record": "run", "run_id": "r-x", "benchmark": "sb", "agent": "X", "eval_date": "2026-03-01"})
        + "\n"
        + json.dumps(
            {
                "record": "attempt",
                "run_id": "r-x",
                "task_id": "T0",
                "sample": 0,
                "score": 1.0,
                "answer": "the Brand-New sentinel phrase",
            }
        )  # fmt: skip
        + "\n",
        encoding="utf-8",
    )
    _ingest(extra, db)
    with reader(db) as con:
        _, n_unindexed, lowest = sr.index_coverage(con, ALL_RUNS) or ("", 0, None)
        assert n_unindexed == 3 * 2 + 1 and lowest is not None
        hit = sr.search(con, query="brand-new sentinel")
        assert (hit.n_attempts, list(hit.hits["run_id"])) == (1, ["r-x"])
        for query in QUERIES:
            _assert_same(*_both(con, query))
    done = refresh(db)
    assert (done.attempts_added, done.attempts_covered) == (7, 79)
    with reader(db) as con:
        assert (sr.index_coverage(con, ALL_RUNS) or ())[1:] == (0, None)
        assert sr.search(con, query="brand-new sentinel").n_attempts == 1


def _unindexed(db: Path) -> int:
    with reader(db) as con:
        return int((sr.index_coverage(con, ALL_RUNS) or ("", -1, None))[1])


def test_every_ingest_keeps_the_index_up_to_date(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once a store has an index, ``python -m ingest`` adds its files' attempts to it (``--no-search-index``: not),
    and the Upload page refreshes it in the background after an upload (its job, and what the page says of it)."""
    import time
    from types import SimpleNamespace

    from streamlit.testing.v1 import AppTest

    from cli.ingest import main
    from ingest.upload_worker import IngestSummary
    from ui import background
    from ui.index_refresh import start_index_refresh

    assert start_index_refresh([SimpleNamespace(outcome="ingested")], str(db)) is None  # no index: nothing to keep
    refresh(db)
    new = _write(tmp_path / "new.jsonl", [("r-new", "sb")], seed=11, n_tasks=3)
    assert main([str(new), "--db", str(db), "--no-progress"]) == 0
    assert "search index: adding the new attempts in the background" in capsys.readouterr().err
    deadline = time.monotonic() + 120
    while _unindexed(db):  # (the refresh runs on after the command; its lock keeps the next one apart)
        assert time.monotonic() < deadline
        time.sleep(0.2)
    later = _write(tmp_path / "later.jsonl", [("r-later", "sb")], seed=12, n_tasks=2)
    assert main([str(later), "--db", str(db), "--no-progress", "--no-search-index"]) == 0
    assert "search index" not in capsys.readouterr().err and _unindexed(db) == 4

    monkeypatch.setenv("RUNLENS_AUTO_FIT", "0")  # the tests' default: nothing starts by itself, the page says so
    assert start_index_refresh([SimpleNamespace(outcome="ingested")], str(db)) == ""
    monkeypatch.setenv("RUNLENS_AUTO_FIT", "1")
    assert start_index_refresh([SimpleNamespace(outcome="duplicate")], str(db)) is None
    key = start_index_refresh([SimpleNamespace(outcome="ingested")], str(db))
    assert key
    deadline = time.monotonic() + 120
    while not (job := background.get(key)) or not job.is_done:
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job.error is None and job.message.startswith("search index: 4 attempts added"), job
    assert _unindexed(db) == 0

    monkeypatch.setenv("RUNLENS_DB", str(db))
    monkeypatch.delenv("RUNLENS_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "views" / "upload.py"), default_timeout=120)
    at.session_state["up_done"] = [(IngestSummary("later.jsonl", "ingested", 1, 4, 8), (), ())]
    at.session_state["up_index"] = key
    at.run()
    assert not at.exception, at.exception
    said = md_plain("Search index: 4 attempts added")
    assert any(said in c.value for c in at.caption), [c.value for c in at.caption]


def test_a_deleted_run_is_gone_and_a_reused_attempt_id_finds_only_the_new_text(db: Path, tmp_path: Path) -> None:
    extra = tmp_path / "x.jsonl"
    extra.write_text(
        json.dumps({"record": "run", "run_id": "r-x", "benchmark": "sb", "agent": "X", "eval_date": "2026-03-01"})
        + "\n"
        + json.dumps(
            {"record": "attempt", "run_id": "r-x", "task_id": "T0", "sample": 0, "score": 0.0, "answer": "old sentinel"}
        )
        + "\n",
        encoding="utf-8",
    )
    _ingest(extra, db)
    refresh(db)
    with reader(db) as con:
        assert sr.search(con, query="old sentinel").n_attempts == 1
        old_id = con.execute("SELECT attempt_id FROM attempts WHERE run_id = 'r-x'").fetchall()
    delete_run("r-x", db=db)
    with reader(db) as con:
        assert sr.search(con, query="old sentinel").n_attempts == 0
        assert sr.search(con, query="sentinel").n_attempts == 0
    # the next ingest numbers its attempts from the top again: the same id, the same run, task and sample, new text
    extra.write_text(extra.read_text(encoding="utf-8").replace("old sentinel", "new sentinel"), encoding="utf-8")
    _ingest(extra, db)
    with reader(db) as con:
        assert con.execute("SELECT attempt_id FROM attempts WHERE run_id = 'r-x'").fetchall() == old_id
        assert sr.search(con, query="old sentinel").n_attempts == 0
        assert sr.search(con, query="new sentinel").n_attempts == 1
        _assert_same(*_both(con, "sentinel"))
    done = refresh(db)
    assert (done.attempts_added, done.attempts_removed, done.attempts_covered) == (1, 1, 73)
    with reader(db) as con:
        assert (sr.index_coverage(con, ALL_RUNS) or ())[1:] == (0, None)
        assert sr.search(con, query="old sentinel").n_attempts == 0
        assert sr.search(con, query="new sentinel").n_attempts == 1


def test_a_search_on_an_older_snapshot_never_reads_another_attempts_text(db: Path, tmp_path: Path) -> None:
    """A reader opened before a deletion, an id reuse and a refresh: the reused id's new text is not its hit."""
    extra = tmp_path / "x.jsonl"
    run = {"record": "run", "run_id": "r-x", "benchmark": "sb", "agent": "X", "eval_date": "2026-03-01"}
    attempt = {"record": "attempt", "run_id": "r-x", "task_id": "T0", "sample": 0, "score": 0.0, "answer": "old one"}
    extra.write_text(json.dumps(run) + "\n" + json.dumps(attempt) + "\n", encoding="utf-8")
    _ingest(extra, db)
    refresh(db)
    with reader(db) as old:
        delete_run("r-x", db=db)
        extra.write_text(extra.read_text(encoding="utf-8").replace("old one", "new one"), encoding="utf-8")
        _ingest(extra, db)
        assert refresh(db).attempts_removed == 1
        assert sr.search(old, query="new one").n_attempts == 0  # the old snapshot has no such text
        assert sr.search(old, query="new one", use_index=False).n_attempts == 0
        assert sr.search(old, query="rate limit").hits.equals(sr.search(old, query="rate limit", use_index=False).hits)


def test_another_store_at_the_same_path_is_not_read_through_the_old_index(db: Path, tmp_path: Path) -> None:
    """Same file ids and attempt ids, other content (a restored copy, say): nothing counts as covered."""
    refresh(db)
    other = tmp_path / "o" / "s.duckdb"
    other.parent.mkdir()
    _ingest(_write(tmp_path / "b.jsonl", [("r-a", "sb"), ("r-b", "sb"), ("r-o", "other")], seed=8), other)
    for suffix in ("", ".read"):
        shutil.copyfile(f"{other}{suffix}", f"{db}{suffix}")
    with reader(db) as con:
        coverage = sr.index_coverage(con, ALL_RUNS)
        assert coverage is not None and coverage[1] == 72
        for query in QUERIES[:8]:
            _assert_same(*_both(con, query))
    done = refresh(db)
    assert (done.attempts_added, done.attempts_removed, done.attempts_covered) == (72, 72, 72)
    with reader(db) as con:
        for query in QUERIES[:8]:
            _assert_same(*_both(con, query))


def test_regex_symbols_only_and_stores_without_an_index_scan(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with reader(db) as con:  # never built: the scan
        assert sr.index_coverage(con, ALL_RUNS) is None
        before = sr.search(con, query="rate limit")
    refresh(db)
    with reader(db) as con:
        words = _both(con, "limit rate", mode="words")
        assert words[0].is_indexed and words[0].n_hits > 0
        _assert_same(*words)
    monkeypatch.setattr(search_load._Walk, "run", lambda *a, **kw: pytest.fail("the index was used"))
    with reader(db) as con:
        assert sr.search(con, query=r"(?i)rate.limit", mode="regex").n_hits > 0
        symbols = sr.search(con, query="%")  # nothing to look up in the vocabulary
        assert symbols.n_hits > 0 and not symbols.is_indexed and "no letter or digit" in sr.how_searched(symbols)
        assert sr.search(con, query="rate limit", use_index=False).hits.equals(before.hits)
    assert drop(db) and not drop(db)
    with reader(db) as con:
        assert sr.search(con, query="rate limit").hits.equals(before.hits)
    # the single index file of the first layout, then a segment without the index's tables: the scan
    index = db.with_name(db.name + ".search")
    duckdb.connect(str(index)).close()
    with reader(db) as con:
        assert sr.index_coverage(con, ALL_RUNS) is None
        assert sr.search(con, query="rate limit").hits.equals(before.hits)
    index.unlink()
    index.mkdir()
    duckdb.connect(str(index / "seg-x.duckdb")).close()
    (index / "manifest.json").write_text(json.dumps({"layout": 2, "segments": ["seg-x.duckdb"]}), encoding="utf-8")
    with reader(db) as con:
        assert sr.index_coverage(con, ALL_RUNS) is None
        assert sr.search(con, query="rate limit").hits.equals(before.hits)
    with duckdb.connect(":memory:") as con:  # no file, no index
        assert attach_search_index(con) is None


def test_cli_builds_the_index_and_search_json_is_unchanged(db: Path) -> None:
    def run(*args: str) -> dict:
        cmd = [sys.executable, "-m", "analytics", *args, "--db", str(db), "--json"]
        return json.loads(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout)

    before = run("search", "imit exce")
    built = run("search-index")
    assert (built["attempts_added"], built["attempts_covered"], built["attempts_removed"]) == (72, 72, 0)
    assert built["rows"] > 0 and built["text_chars"] > 0
    assert run("search", "imit exce") == before and before["n_attempts"] > 0
    assert run("search-index", "--rebuild")["attempts_added"] == 72
    assert run("search-index", "--drop") == {"dropped": True}
    assert run("search", "imit exce") == before


def test_a_team_store_has_no_index_and_its_search_scans(lake: str, db: Path, tmp_path: Path) -> None:
    """DuckLake: search-index refuses with a clear error, and a phrase search gives the file store's result."""
    from store import RunlensError

    path = _write(tmp_path / "l.jsonl", [("r-a", "sb"), ("r-b", "sb"), ("r-o", "other")], seed=7)
    _ingest(path, lake)
    with pytest.raises(RunlensError, match="DuckDB file store"):
        refresh(lake)
    refresh(db)  # the same data in a file store, indexed
    with reader(lake) as con:
        assert sr.index_coverage(con, ALL_RUNS) is None
        on_lake = [sr.search(con, query=q) for q in QUERIES[:6]]
    with reader(db) as con:
        on_file = [sr.search(con, query=q) for q in QUERIES[:6]]
    for a, b in zip(on_lake, on_file, strict=True):
        _assert_same(a, b)


def test_the_result_says_how_it_was_searched(db: Path, tmp_path: Path) -> None:
    with reader(db) as con:
        before = sr.search(con, query="rate limit")
    assert not before.is_indexed and "no search index" in sr.how_searched(before)
    refresh(db)
    _ingest(_write(tmp_path / "late.jsonl", [("r-late", "sb")], seed=5, n_tasks=2), db)
    with reader(db) as con:
        after = sr.search(con, query="rate limit")
        words = sr.search(con, query="rate limit", mode="words")
    assert after.is_indexed and after.n_unindexed > 0
    assert "search index" in sr.how_searched(after) and f"{after.n_unindexed:,} attempts" in sr.how_searched(after)
    assert words.is_indexed and "search index" in sr.how_searched(words)
    with reader(db) as con:
        regex = sr.search(con, query="rate", mode="regex")
    assert not regex.is_indexed and "always scan" in sr.how_searched(regex)


def test_refreshes_add_segments_and_merge_them_past_the_limit(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each refresh writes one segment and leaves the others' files untouched; past MAX_SEGMENTS the smallest are
    merged, without the rows of a deleted run; results stay the scan's."""
    from store import search_index

    monkeypatch.setattr(search_index, "MAX_SEGMENTS", 3)
    first = refresh(db)
    (segment,) = _segments(first)
    stamp = segment.stat().st_mtime_ns
    for i in range(2):
        _ingest(_write(tmp_path / f"m{i}.jsonl", [(f"r-m{i}", "sb")], seed=30 + i, n_tasks=2), db)
        assert refresh(db).segments == 2 + i
    assert segment.stat().st_mtime_ns == stamp  # not copied nor rewritten
    delete_run("r-m0", db=db)
    _ingest(_write(tmp_path / "m9.jsonl", [("r-m9", "sb")], seed=39, n_tasks=2), db)
    done = refresh(db)  # a fourth segment: the three smallest are merged into one
    assert done.segments == 2 and done.attempts_removed == 4 and done.attempts_covered == 72 + 2 * 4
    assert segment in _segments(done)  # the largest stays as it was
    merged = next(s for s in _segments(done) if s != segment)
    with duckdb.connect(str(merged), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM search_attempts").fetchall() == [(8,)]  # r-m1 and r-m9
    with reader(db) as con:
        for query in QUERIES:
            _assert_same(*_both(con, query))

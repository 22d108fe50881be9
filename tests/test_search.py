"""Transcript search: phrase, words and RE2 regex over answers, contents, arguments, results (long ones stored
apart included) and errors; the global filters; refused queries; the CLI's JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analytics import search as sr
from store import RunFilter, reader
from tests.conftest import ROOT

LONG = ("lorem ipsum dolor " * 100) + "the needle QUOTA_EXCEEDED appears late" + (" tail" * 50)


def _attempt(run: str, task: str, sample: int, answer: str, steps: list[dict], passed: bool = False) -> dict:
    return {
        "record": "attempt",
        "run_id": run,
        "task_id": task,
        "sample": sample,
        "score": 1.0 if passed else 0.0,
        "answer": answer,
        "steps": steps,
    }


@pytest.fixture(scope="module")
def search_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of two agents on different dates, with texts placed in every searchable field."""
    from ingest.pipeline import ingest_paths

    folder = tmp_path_factory.mktemp("search")
    lines = [
        {"record": "benchmark", "benchmark": "sb", "scoring": "binary"},
        {"record": "benchmark", "benchmark": "other", "scoring": "binary"},
        {"record": "task", "benchmark": "sb", "task_id": "T1"},
        {"record": "task", "benchmark": "sb", "task_id": "T2"},
        {"record": "task", "benchmark": "other", "task_id": "O1"},
        {"record": "run", "run_id": "r-a", "benchmark": "sb", "agent": "A", "eval_date": "2026-01-10"},
        {"record": "run", "run_id": "r-b", "benchmark": "sb", "agent": "B", "eval_date": "2026-02-10"},
        {"record": "run", "run_id": "r-o", "benchmark": "other", "agent": "A", "eval_date": "2026-01-10"},
        _attempt(
            "r-a",
            "T1",
            0,
            "Final: the discount is 50%_off",
            [
                {
                    "round": 1,
                    "kind": "tool_call",
                    "tool": "search",
                    "args": {"query": "Rate Limit policy"},
                    "result": "ok",
                },
                {"round": 2, "kind": "tool_call", "tool": "fetch", "args": {"url": "x"}, "result": LONG},
                {"round": 3, "kind": "thought", "content": 'He said "hello (world)" [twice]\nthen stopped'},
            ],
        ),
        _attempt(
            "r-b",
            "T2",
            0,
            "no idea",
            [
                {"round": 1, "kind": "tool_call", "tool": "calc", "args": {"expr": "1+1"}, "error": "rate limit hit"},
                {"round": 2, "kind": "final", "content": "limit rate reached"},
            ],
        ),
        _attempt("r-o", "O1", 0, "rate limit elsewhere", []),
    ]
    path = folder / "runs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    db = folder / "s.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    return db


def _run(db: Path, **kwargs: object) -> sr.SearchResult:
    with reader(db) as con:
        return sr.search(con, **kwargs)  # type: ignore[arg-type]


def _where(result: sr.SearchResult) -> set[tuple[str, object, str]]:
    return {
        (r.run_id, None if r.step is None or str(r.step) == "<NA>" else int(r.step), r.field)
        for r in result.hits.itertuples()
    }


def test_phrase_is_case_insensitive_across_fields(search_db: Path) -> None:
    res = _run(search_db, query="RATE limit")
    assert _where(res) == {("r-a", 0, "args"), ("r-b", 0, "error"), ("r-o", None, "answer")}
    assert res.n_attempts == 3 and res.n_hits == 3


def test_long_result_stored_apart_is_found_with_a_snippet_around_the_match(search_db: Path) -> None:
    with reader(search_db) as con:
        stored_apart = con.execute("SELECT count(*) FROM steps WHERE result_hash IS NOT NULL").fetchall()[0][0]
    assert stored_apart == 1  # the fixture really exercises the texts table
    res = _run(search_db, query="quota_exceeded")
    (hit,) = res.hits.itertuples()
    assert (hit.run_id, int(hit.step), hit.field) == ("r-a", 1, "result")
    assert hit.snippet[hit.match_start : hit.match_start + hit.match_len] == "QUOTA_EXCEEDED"
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet) < 200


def test_special_characters_are_literal_in_a_phrase(search_db: Path) -> None:
    assert _where(_run(search_db, query="50%_off")) == {("r-a", None, "answer")}
    assert _run(search_db, query="50%%").n_hits == 0  # % is no wildcard
    assert _where(_run(search_db, query='"hello (world)" [twice]')) == {("r-a", 2, "content")}


def test_snippet_folds_newlines(search_db: Path) -> None:
    (hit,) = _run(search_db, query="stopped").hits.itertuples()
    assert "\n" not in hit.snippet and "[twice] then stopped" in hit.snippet


def test_words_match_whole_words_in_any_order(search_db: Path) -> None:
    assert _where(_run(search_db, query="limit rate", mode="words")) == {
        ("r-a", 0, "args"),
        ("r-b", 0, "error"),
        ("r-b", 1, "content"),
        ("r-o", None, "answer"),
    }
    assert _run(search_db, query="limi rate", mode="words").n_hits == 0  # a part of a word is no word


def test_regex_uses_re2(search_db: Path) -> None:
    assert _where(_run(search_db, query=r"\d+%_off")) == set()  # a phrase, not a pattern
    assert _where(_run(search_db, query=r"\d+%_off", mode="regex")) == {("r-a", None, "answer")}
    res = _run(search_db, query=r"(?i)quota_\w+", mode="regex")
    (hit,) = res.hits.itertuples()
    assert hit.snippet[hit.match_start : hit.match_start + hit.match_len] == "QUOTA_EXCEEDED"


@pytest.mark.parametrize("pattern", [r"(a", r"(?<=x)y", r"(a)\1"])
def test_invalid_or_backtracking_regex_is_refused(search_db: Path, pattern: str) -> None:
    with pytest.raises(sr.SearchError, match="invalid regular expression"):
        _run(search_db, query=pattern, mode="regex")


def test_queries_are_bounded() -> None:
    with pytest.raises(sr.SearchError, match="at most"):
        sr.match_pattern("a" * (sr.MAX_QUERY_CHARS + 1), "regex")
    with pytest.raises(sr.SearchError, match="empty"):
        sr.match_pattern("   ", "phrase")
    with pytest.raises(sr.SearchError, match="words"):
        sr.match_pattern(" ".join("w" * (i + 1) for i in range(sr.MAX_WORDS + 1)), "words")


def test_filters_and_limit(search_db: Path) -> None:
    assert {
        r.run_id for r in _run(search_db, run_filter=RunFilter(benchmark="sb"), query="rate limit").hits.itertuples()
    } == {"r-a", "r-b"}
    assert {
        r.run_id for r in _run(search_db, run_filter=RunFilter(agents=("B",)), query="rate limit").hits.itertuples()
    } == {"r-b"}
    import datetime as dt

    late = _run(search_db, run_filter=RunFilter(date_from=dt.date(2026, 2, 1)), query="rate limit")
    assert {r.run_id for r in late.hits.itertuples()} == {"r-b"}
    limited = _run(search_db, query="rate limit", limit=1)
    assert len(limited.hits) == 1 and limited.n_hits == 3 and limited.n_attempts == 3


def test_marked_highlights_without_markup() -> None:
    assert sr.marked("ab<b>cd", 2, 3) == "ab⟦<b>⟧cd"


def test_cli_json_shape(search_db: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "analytics",
            "search",
            "--db",
            str(search_db),
            "--benchmark",
            "sb",
            "--json",
            "rate limit",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    assert doc["query"] == "rate limit" and doc["n_attempts"] == 2
    assert {"run_id", "task_id", "sample", "step", "snippet"} <= set(doc["hits"][0])
    assert {(h["run_id"], h["step"]) for h in doc["hits"]} == {("r-a", 0), ("r-b", 0)}
    bad = subprocess.run(
        [sys.executable, "-m", "analytics", "search", "--db", str(search_db), "--regex", "(a"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "invalid regular expression" in bad.stderr


def test_a_scan_reads_runs_in_windows_and_stops_once_its_page_is_full(
    generated_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the index (a regular expression, a store without one) a scan reads the runs kept in windows of whole
    runs in the order hits are listed, and stops once its page is full and COUNT_CAP attempts are counted: the hits
    are the one statement's over every attempt (``count_all``), the counts too when it read everything, else a
    lower bound with an estimate, and the page says so. (One statement held 19.9 GB at ten million attempts.)"""
    from analytics.search import load_scan

    monkeypatch.setattr(load_scan, "SCAN_FIRST", 400)  # the generated store's runs: 500 attempts each
    monkeypatch.setattr(load_scan, "SCAN_MOST", 800)
    monkeypatch.setattr(load_scan, "COUNT_CAP", 100)
    statements: list[str] = []
    real = load_scan.query_df
    monkeypatch.setattr(
        load_scan, "query_df", lambda con, sql, params: statements.append(sql) or real(con, sql, params)
    )
    outcomes = []
    with reader(generated_db) as con:
        for rest in (load_scan.SCAN_REST, 0):  # few hits after the first window: the rest in one statement, or not
            monkeypatch.setattr(load_scan, "SCAN_REST", rest)
            for query, mode in [
                ("budget", "phrase"),
                ("[0-9]{3}", "regex"),
                ("zzz_none", "phrase"),
                ("total", "words"),
            ]:
                for run_filter in (RunFilter(), RunFilter(benchmark="bench-0")):
                    full = sr.search(con, run_filter, query=query, mode=mode, limit=20, use_index=False, count_all=True)
                    statements.clear()
                    part = sr.search(con, run_filter, query=query, mode=mode, limit=20, use_index=False)
                    assert part.hits.to_dict("records") == full.hits.to_dict("records"), (query, run_filter)
                    if part.is_count_exact:
                        assert (part.n_attempts, part.n_hits) == (full.n_attempts, full.n_hits), query
                    else:
                        assert 100 <= part.n_attempts <= full.n_attempts and part.n_hits <= full.n_hits, query
                        assert part.n_attempts_estimate is not None and part.n_attempts_estimate >= part.n_attempts
                        assert "stopped once its page was full" in sr.how_searched(part)
                    outcomes.append((rest, part.is_count_exact, len(statements)))
    assert (0, False, 1) in outcomes  # a common query: its first window filled the page
    assert (load_scan.SCAN_REST, True, 2) in outcomes  # a rare one: its first window, then the rest at once
    assert any(rest == 0 and exact and n > 2 for rest, exact, n in outcomes)  # or every window


def test_a_rest_read_at_once_that_runs_out_of_memory_is_read_window_by_window(
    generated_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rest of a rare pattern's scan in one statement needs memory for every attempt it reads: when DuckDB's
    share cannot hold it, the scan goes on window by window, with the same result."""
    import duckdb

    from analytics.search import load_scan
    from store import QueryError

    monkeypatch.setattr(load_scan, "SCAN_FIRST", 400)
    monkeypatch.setattr(load_scan, "SCAN_MOST", 800)
    real, reads = load_scan._read, []

    def tight(*args: object, long_once: bool) -> object:
        reads.append(long_once)
        if long_once:
            raise QueryError(
                "Out of Memory Error: could not allocate", "SELECT", None
            ) from duckdb.OutOfMemoryException()
        return real(*args, long_once=long_once)  # type: ignore[arg-type]

    monkeypatch.setattr(load_scan, "_read", tight)
    with reader(generated_db) as con:
        full = sr.search(con, query="zzz_none", limit=20, use_index=False, count_all=True)
        part = sr.search(con, query="zzz_none", limit=20, use_index=False)
    assert (part.n_attempts, part.n_hits, part.is_count_exact) == (full.n_attempts, full.n_hits, True)
    assert reads[:3] == [False, True, False] and reads.count(True) == 1 and len(reads) > 3, reads

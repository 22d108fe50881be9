"""Transcript search through its index in slices of a run (analytics/search/load.py ``_Walk._slices``): a run far
larger than its page needs is read in stretches of whole tasks in the order hits are listed, each by a few ranges
of attempt ids; the hits listed and the counts stay the scan's, whatever the ranges hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analytics.search import compute
from analytics.search import load as search_load
from analytics.search.compute import FIRST_CHUNK, id_ranges, next_chunk, next_slice, slice_end
from jobs.search_index import refresh
from store import ALL_RUNS, RunFilter, reader
from tests.test_search_index import QUERIES, _assert_same, _attempt, _both, _ingest, _random_queries, _write


def _write_by_sample(path: Path, runs: list[str], *, seed: int, n_tasks: int) -> Path:
    """Runs whose attempts come sample by sample (every task's first sample, then every second one), as the scale
    generator writes them: a run's attempt ids are then far from the order hits are listed in (by task)."""
    rng = np.random.default_rng(seed)
    lines: list[dict] = [{"record": "benchmark", "benchmark": "sb", "scoring": "binary"}]
    lines += [{"record": "task", "benchmark": "sb", "task_id": f"T{i}"} for i in range(n_tasks)]
    for run in runs:
        lines.append({"record": "run", "run_id": run, "benchmark": "sb", "agent": run, "eval_date": "2026-01-10"})
        lines += [_attempt(rng, run, f"T{i}", s) for s in range(3) for i in range(n_tasks)]
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    return path


def test_id_ranges_hold_every_id_in_at_most_the_ranges_asked() -> None:
    assert id_ranges([5, 1, 2, 3, 10, 11, 30]) == [(1, 3), (5, 5), (10, 11), (30, 30)]
    assert id_ranges([3, 3, 2]) == [(2, 3)]
    assert id_ranges([]) == []
    # the widest gaps stay open: 11 -> 30 (19) and 5 -> 10 (5), not 3 -> 5 (2)
    assert id_ranges([5, 1, 2, 3, 10, 11, 30], 3) == [(1, 5), (10, 11), (30, 30)]
    assert id_ranges([1, 3, 5, 7], 1) == [(1, 7)]
    ids = [int(i) for i in np.random.default_rng(1).integers(0, 10_000, 500)]
    for most in (1, 2, 16, 1000):
        ranges = id_ranges(ids, most)
        assert len(ranges) <= most and all(any(lo <= i <= hi for lo, hi in ranges) for i in ids)
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))  # ascending, apart


def test_slices_are_whole_tasks_sized_from_the_hits_seen() -> None:
    starts = [0, 3, 6, 9, 12]  # five tasks of three attempts
    assert slice_end(starts, 15, 0, 4) == 6  # the task starting at 3 is whole: the slice ends at the next start
    assert slice_end(starts, 15, 0, 1) == 3 and slice_end(starts, 15, 3, 3) == 6
    assert slice_end(starts, 15, 6, 100) == 15 and slice_end([0], 7, 0, 2) == 7  # one task is never cut
    assert next_slice(1_000, 10**6, listed=0, walked=1_000, need=100) == 2_000  # no hit yet: twice the last
    # 27 hits in 1,000 attempts, 73 missing: about 2,700 attempts more, with a margin of 1.5
    assert next_slice(1_000, 10**6, listed=27, walked=1_000, need=73) == pytest.approx(1.5 * 73 * 1_000 / 27)
    assert next_slice(1_000, 3_000, listed=1, walked=1_000, need=100) == 3_000  # never past the most
    # the first chunk: one hit a candidate, with the margin; then at the rate seen
    assert next_chunk(0, 0, 500) == 750 and next_chunk(0, 0, 10) == FIRST_CHUNK
    assert next_chunk(100, 1_000, 50) == 750 and next_chunk(10, 1_000, 50) == 4_000  # at most MAX_CHUNK


@pytest.mark.parametrize("most_ranges", [16, 2])
def test_a_walk_in_slices_lists_the_scans_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, most_ranges: int
) -> None:
    """Slices of a task or more (the runs' attempt ids come sample by sample, and tasks T0, T1, T10, T11, T2 ...
    are listed in that order), read by their ranges, also when ranges are merged past MAX_RANGES (2: ranges then hold attempts of other slices,
    which the slice's tasks leave out): hit for hit the scan's, counts honest."""
    db = tmp_path / "s.duckdb"
    _ingest(_write_by_sample(tmp_path / "a.jsonl", ["r-a", "r-b", "r-o"], seed=7, n_tasks=12), db)
    monkeypatch.setattr(search_load, "SCAN_SHARE", float("inf"))
    monkeypatch.setattr(compute, "MIN_WINDOW", 1)
    monkeypatch.setattr(search_load, "FIRST_WINDOW_HITS", 0)
    monkeypatch.setattr(compute, "FIRST_CHUNK", 2)
    monkeypatch.setattr(compute, "MAX_RANGES", most_ranges)
    refresh(db)
    _ingest(_write(tmp_path / "late.jsonl", [("r-l", "sb")], seed=22, n_tasks=3), db)  # scanned, merged in
    sliced: list[Any] = []
    slices = search_load._Walk._slices

    def spy(self: Any, *a: Any) -> Any:
        for part in slices(self, *a):
            sliced.append(part)
            yield part

    monkeypatch.setattr(search_load._Walk, "_slices", spy)
    n_stopped = 0
    with reader(db) as con:
        for query, mode in [(q, "phrase") for q in QUERIES] + _random_queries(seed=9, n=10):
            for flt in (ALL_RUNS, RunFilter(run_ids=("r-b", "r-l"))):
                for limit in (2, 100):
                    indexed, scanned = _both(con, query, mode=mode, limit=limit, run_filter=flt)
                    _assert_same(indexed, scanned)
                    n_stopped += not indexed.is_count_exact
    assert n_stopped >= 5
    assert len(sliced) > 30 and any(p.t0 != p.t1 for p in sliced)  # slices were read, some of several tasks
    assert any(len(p.ranges) > 1 for p in sliced)  # by several ranges of ids


def test_candidates_wait_until_they_could_fill_the_page_then_are_checked_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any check, a walk reads slices until their candidates are as many as the hits the page needs, then
    checks them in one chunk (a phrase whose first slice holds few candidates: one check of texts, not one a
    slice); the hits listed stay the scan's."""
    db = tmp_path / "s.duckdb"
    _ingest(_write_by_sample(tmp_path / "a.jsonl", ["r-a", "r-b"], seed=7, n_tasks=12), db)
    monkeypatch.setattr(search_load, "SCAN_SHARE", float("inf"))
    monkeypatch.setattr(compute, "MIN_WINDOW", 1)  # slices of one task (3 attempts)
    monkeypatch.setattr(search_load, "FIRST_WINDOW_HITS", 0)
    refresh(db)
    events: list[tuple[str, int]] = []
    read, chunk = search_load._Walk._read, search_load._Walk._chunk

    def spy_read(self: Any, part: Any, n_kept: int) -> bool:
        out = read(self, part, n_kept)
        events.append(("read", part.n))
        return bool(out)

    def spy_chunk(self: Any, attempts: Any) -> Any:
        events.append(("check", len(attempts)))
        return chunk(self, attempts)

    monkeypatch.setattr(search_load._Walk, "_read", spy_read)
    monkeypatch.setattr(search_load._Walk, "_chunk", spy_chunk)
    with reader(db) as con:
        for limit in (20, 100):
            events.clear()
            indexed, scanned = _both(con, "rate limit", limit=limit)
            _assert_same(indexed, scanned)
            first = next(i for i, (kind, _) in enumerate(events) if kind == "check")
            # a slice read whole before the first check (the check runs inside the read of the slice that completes
            # the candidates)
            assert [k for k, _ in events[:first]].count("read") >= 1, events
            assert events[first][1] >= min(limit, indexed.n_checked), events  # their candidates checked together
            assert [k for k, _ in events].count("check") < [k for k, _ in events].count("read"), events

"""The SQL page's result cache is bounded in bytes (issue 18), not only in entries."""

from __future__ import annotations

import pandas as pd

from analytics import sql_console as sb
from ui.budget_cache import ByteBudgetCache, size_of


def outcome(n_rows: int, width: int) -> sb.SqlOutcome:
    df = pd.DataFrame({"s": ["x" * width] * n_rows})
    return sb.SqlOutcome(sb.SqlResult("SELECT", df, n_rows, False, True, 0.0))


def test_size_of_sees_the_frame_inside_an_outcome() -> None:
    assert size_of(outcome(1_000, 1_000)) > 1_000_000
    assert size_of(outcome(10, 10)) < 10_000


def test_entries_are_evicted_once_the_byte_budget_is_passed() -> None:
    cache = ByteBudgetCache(3_500_000, max_entries=64)
    calls = []
    for i in range(8):  # eight "wide queries" of about 1 MB each
        cache.get_or_compute(("q", i), lambda i=i: calls.append(i) or outcome(1_000, 1_000))
        assert cache.n_bytes <= cache.max_bytes
    assert len(cache) == 3 and calls == list(range(8))
    cache.get_or_compute(("q", 7), lambda: calls.append("again") or outcome(1, 1))  # newest is still held
    assert calls[-1] == 7
    cache.get_or_compute(("q", 0), lambda: calls.append("recomputed") or outcome(1, 1))  # oldest was evicted
    assert calls[-1] == "recomputed"


def test_a_result_larger_than_the_budget_is_returned_but_not_kept() -> None:
    cache = ByteBudgetCache(100_000)
    value = cache.get_or_compute("big", lambda: outcome(1_000, 1_000))
    assert value.result is not None and len(value.result.df) == 1_000
    assert len(cache) == 0 and cache.n_bytes == 0


def test_entry_count_still_bounded() -> None:
    cache = ByteBudgetCache(10**9, max_entries=4)
    for i in range(10):
        cache.get_or_compute(i, lambda: outcome(1, 1))
    assert len(cache) == 4

"""The one run filter (store/filters.py, store/sql/run_filter.sql): each field restricts the runs it names."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import store
from store import RunFilter


def _runs(db: Path, flt: RunFilter) -> list[str]:
    sql = store.with_run_filter("SELECT r.run_id FROM runs r WHERE $run_filter ORDER BY 1")
    with store.reader(db) as con:
        return [r[0] for r in store.query_rows(con, sql, flt.params())]


@pytest.mark.parametrize(
    ("flt", "want"),
    [
        (RunFilter(), ["mini-a-v1", "mini-human"]),
        (RunFilter(benchmark="mini-bench"), ["mini-a-v1", "mini-human"]),
        (RunFilter(benchmark="other"), []),
        (RunFilter(agents=("Agent A",)), ["mini-a-v1"]),
        (RunFilter(agents=("Agent A",), with_humans=True), ["mini-a-v1", "mini-human"]),
        (RunFilter(agents=("Nobody",), with_humans=True), ["mini-human"]),
        (RunFilter(date_from=dt.date(2026, 1, 11)), ["mini-a-v1"]),
        (RunFilter(date_to=dt.date(2026, 1, 10)), ["mini-human"]),
        (RunFilter(date_from=dt.date(2026, 1, 10), date_to=dt.date(2026, 1, 15)), ["mini-a-v1", "mini-human"]),
        (RunFilter(run_ids=("mini-human",)), ["mini-human"]),
        (RunFilter(run_ids=()), []),
    ],
)
def test_each_field_restricts_the_runs(fixture_db: Path, flt: RunFilter, want: list[str]) -> None:
    assert _runs(fixture_db, flt) == want


def test_keyword_form_gives_the_same_parameters() -> None:
    flt = RunFilter(benchmark="b", agents=("x", "y"), date_to=dt.date(2026, 1, 1), run_ids=("r",), with_humans=True)
    kw = store.run_filter_params("b", ["x", "y"], None, dt.date(2026, 1, 1), run_ids=["r"], with_humans=True)
    assert kw == flt.params()
    assert store.run_filter_params("b", [])["agents"] is None  # an empty agent list means all agents


def test_a_query_without_the_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="run_filter"):
        store.with_run_filter("SELECT 1")


def test_every_filtered_analytics_query_uses_the_one_condition() -> None:
    """No copy of the filter's WHERE clause is left in analytics' SQL (the reason the filter got a home)."""
    root = Path(__file__).resolve().parent.parent
    texts = [p.read_text(encoding="utf-8") for p in (root / "analytics").rglob("*.sql")]
    texts += [p.read_text(encoding="utf-8") for p in (root / "analytics").rglob("*.py")]
    assert not [t for t in texts if "list_contains($agents" in t]
    assert sum("$run_filter" in t for t in texts) >= 8

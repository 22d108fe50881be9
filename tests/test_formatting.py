"""The formatting layer: no None, nan, -0.0, midnight times or float noise in anything a person reads."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from analytics import formatting as fmt

MISSING_VALUES = [None, float("nan"), np.nan, np.float64("nan"), float("inf"), pd.NA, pd.NaT]


@pytest.mark.parametrize("value", MISSING_VALUES)
def test_missing_values_read_as_a_dash(value: object) -> None:
    for fn in (fmt.number, fmt.count, fmt.pct, fmt.signed, fmt.p_value, fmt.usd):
        assert fn(value) == fmt.MISSING, fn.__name__
    assert fmt.interval(value, (0.1, 0.2)) == fmt.MISSING
    assert fmt.date(value) == fmt.MISSING


def test_no_negative_zero_and_no_float_noise() -> None:
    assert fmt.pct(-0.00001) == "0.0%"
    assert fmt.signed(-0.0000001) == "0.0 pp" and fmt.signed(0.0) == "0.0 pp"
    assert fmt.signed(1e-16) == "0.0 pp"  # a delta of .0000000000000001
    assert fmt.signed(-0.043) == "−4.3 pp" and fmt.signed(0.043) == "+4.3 pp"
    assert fmt.number(0.1 + 0.2, 2) == "0.30"
    assert fmt.interval(0.621, (0.55, 0.69)) == "62.1 [55.0 to 69.0]"
    assert fmt.interval(0.5, None) == "50.0" and fmt.interval(0.5, (None, 0.6)) == "50.0"
    assert fmt.interval(-0.0001, (-0.0002, 0.01)) == "0.0 [0.0 to 1.0]"
    assert fmt.signed_interval(-0.043, (-0.123, 0.037)) == "−4.3 [−12.3 to +3.7] pp"


def test_counts_costs_p_values_dates_and_slices() -> None:
    assert fmt.count(12345.0) == "12,345" and fmt.number(1234567.891) == "1,234,567.9"
    assert fmt.usd(12.3) == "$12.30" and fmt.usd(0.0123) == "$0.0123" and fmt.usd(0.000045) == "$0.000045"
    assert fmt.usd(0) == "$0" and fmt.usd(1e9) == "$1,000,000,000.00"
    assert fmt.p_value(1.0) == "1.00" and fmt.p_value(0.0084) == "0.0084" and fmt.p_value(1e-9) == "<0.0001"
    assert fmt.date(pd.Timestamp("2025-12-15 00:00:00")) == "2025-12-15"
    assert fmt.date(dt.date(2025, 1, 2)) == "2025-01-02" and fmt.date("2025-12-15 00:00:00") == "2025-12-15"
    assert fmt.slice_label("category=pacing") == "category: pacing" and fmt.slice_label("all") == "all tasks"


def test_plurals_spans_flags_and_tidy_text() -> None:
    assert fmt.plural(1, "task") == "1 task" and fmt.plural(2, "task") == "2 tasks"
    assert fmt.plural(1234, "run") == "1,234 runs" and fmt.plural(1, "reply", "replies") == "1 reply"
    assert fmt.span(0.55, 0.69, scale=100) == "55.0 to 69.0"
    assert fmt.span(-0.347, -0.0001, scale=100, is_signed=True) == "−34.7 to 0.0"
    assert fmt.span(None, 1) == fmt.MISSING
    assert fmt.flag(True) == "✓" and fmt.flag(False) == "✗" and fmt.flag(None) == fmt.MISSING
    assert fmt.tidy("−34.7 to −0.0") == "−34.7 to 0.0" and fmt.tidy("-0.7") == "−0.7"
    assert fmt.tidy("adb-o3-2026-01") == "adb-o3-2026-01" and fmt.tidy(None) == fmt.MISSING
    assert fmt.items(["HAL", "PE"]) == "HAL, PE" and fmt.items([]) == fmt.MISSING
    assert fmt.undefined_reason(1, 2, "review") == "needs at least 2 reviews (has 1)"


def test_a_column_of_dollars_has_one_format() -> None:
    """Costs a table shows (the leaderboard's cost per task, the diff's cost change per task) share their decimals."""
    assert fmt.usd_column([0.00123, 0.000588, None]) == ["$0.001230", "$0.000588", "–"]
    assert fmt.usd_column([-0.00123, 0.0], is_signed=True) == ["−$0.00123", "$0.00000"]
    assert fmt.usd_column([0.85, 12.5]) == ["$0.85", "$12.50"]

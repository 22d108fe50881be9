"""The presentation layer for tables (ui/tables.py): readable headers, values by kind, ids hidden, fitting."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ui.tables import MAX_COL_PX, Col, column_px, decimals_needed, display_frame, fit, plan, user_columns


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": ["r1", "r2"],
            "pass_rate": [0.3333333, np.nan],
            "lo": [0.2, None],
            "hi": [0.45, None],
            "delta": [1e-16, -0.0667],
            "cost_usd": [0.00123, None],
            "p_value": [1e-9, 0.5],
            "n_tasks": [1, 2],
            "passed": [True, None],
        }
    )


def test_cells_read_by_kind_with_a_dash_for_missing_values() -> None:
    cols = [
        Col("pass_rate", "Pass rate [95% CI]", "pct", lo="lo", hi="hi", scale=100),
        Col("delta", "Δ (pp)", "signed"),
        Col("cost_usd", "Cost", "usd"),
        Col("p_value", "p", "p"),
        Col("n_tasks", "Tasks", "count"),
        Col("passed", "Passed", "flag"),
    ]
    shown = display_frame(frame(), cols)
    assert shown.iloc[0].tolist() == ["33.3% [20.0 to 45.0]", "0.0", "$0.00123", "<0.0001", "1", "✓"]
    assert shown.iloc[1].tolist() == ["–", "−6.7", "–", "0.50", "2", "–"]
    text = shown.to_string()
    assert "nan" not in text and "None" not in text and "-0.0" not in text


def test_ids_are_hidden_and_undescribed_columns_go_to_the_chooser() -> None:
    everything, defaults = plan(frame(), [Col("pass_rate", "Pass rate", "pct")])
    assert [c.header for c in defaults] == ["Pass rate"]
    headers = [c.header for c in everything]
    assert "Run id" in headers and "Cost ($)" in headers and "N tasks" in headers
    _, guessed = plan(frame(), None)
    assert "Run id" not in [c.header for c in guessed] and "Cost ($)" in [c.header for c in guessed]
    _, with_ids = plan(frame(), None, show_ids=True)
    assert "Run id" in [c.header for c in with_ids]


def test_a_header_is_never_used_twice() -> None:
    df = pd.DataFrame({"slice": ["all"], "slice_label": ["all tasks"]})
    everything, _ = plan(df, [Col("slice_label", "Slice")])
    assert [c.header for c in everything] == ["Slice", "Slice (slice)"]


def test_default_columns_fit_the_width() -> None:
    widths = {"a": 300, "b": 300, "c": 300}
    assert fit(["a", "b", "c"], widths, 700) == ["a", "b"]
    assert fit(["a", "b", "c"], widths, 100) == ["a"]  # the first column always


def test_a_users_own_result_keeps_its_names_and_values() -> None:
    """The SQL console's result: headers as written, every column shown (ids too), NULL a dash while a string
    that reads ``None`` stays itself, float noise gone, dollars and counts by their names, other integers as is."""
    df = pd.DataFrame(
        {
            "run_id": ["r1", None],
            "Weird Name": ["None", "x"],
            "rate": [37.99999999999999, 0.55],
            "third": [1 / 3, np.nan],
            "cost_usd": [0.5, 12.0],
            "n_attempts": [12345, 7],
            "year": [2026, 2025],
        }
    )
    cols = user_columns(df)
    everything, defaults = plan(df, cols)
    assert [c.header for c in defaults] == list(df.columns)
    shown = display_frame(df, everything)
    assert list(shown.columns) == list(df.columns)
    assert shown["run_id"].tolist() == ["r1", "–"] and shown["Weird Name"].tolist() == ["None", "x"]
    assert shown["rate"].tolist() == ["38.00", "0.55"]
    assert shown["third"].tolist() == ["0.333333", "–"]
    assert shown["cost_usd"].tolist() == ["$0.50", "$12.00"]
    assert shown["n_attempts"].tolist() == ["12,345", "7"] and shown["year"].tolist() == ["2026", "2025"]
    assert decimals_needed(pd.Series([1.0, 2.0])) == 0 and decimals_needed(pd.Series([np.nan])) == 0


def test_one_money_format_per_column() -> None:
    """Every cell of a dollar column has the same decimals: cents when no amount is below ten cents (TMF's over-time
    table read $0.848 beside $1.40), else three significant figures of the smallest amount."""
    df = pd.DataFrame({"a": [0.8485, 1.4, None], "b": [0.0123, 7.37, 0.0], "d": [-0.0004, 0.25, 0.0]})
    shown = display_frame(df, [Col("a", "A", "usd"), Col("b", "B", "usd"), Col("d", "D", "signed_usd")])
    assert shown["A"].tolist() == ["$0.85", "$1.40", "–"]
    assert shown["B"].tolist() == ["$0.0123", "$7.3700", "$0.0000"]
    assert shown["D"].tolist() == ["−$0.000400", "+$0.250000", "$0.000000"]


def test_a_column_of_long_text_may_be_drawn_wider_when_asked() -> None:
    """Text is cut at MAX_COL_PX unless the column asks for more (TMF's frontier of runs reads whole at 1280 px)."""
    frontier = ["Qwen3-235B → DeepSeek-V3.2 → GPT-5.1 → Gemini-3-Pro"]
    assert column_px("Frontier", frontier) == MAX_COL_PX
    assert MAX_COL_PX < column_px("Frontier", frontier, most=440) < 440

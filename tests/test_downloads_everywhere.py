"""Downloads everywhere: every table on every page offers CSV and Parquet; every chart its data and a PNG.

The pages are read from app.py (tests/test_pages.registered_pages), so a new page is checked without
touching this file. Each page is opened on the demo database with the deep-link parameters of one real
attempt (and a query for the SQL page), so pages that need a selection still draw their tables.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import store as rdb
from tests.test_pages import registered_pages, run_page


def deep_link_params(db: Path) -> dict[str, str]:
    """Query parameters that select one attempt (drilldown-style pages) and a query (the SQL page)."""
    with rdb.reader(db) as con:
        run_id, task_id, sample = rdb.query_rows(
            con, "SELECT run_id, task_id, sample FROM attempts ORDER BY attempt_id LIMIT 1"
        )[0]
    return {
        "run": str(run_id),
        "task": str(task_id),
        "sample": str(sample),
        "q": "SELECT agent, count(*) AS n_attempts FROM v_attempts GROUP BY agent ORDER BY agent",
    }


def download_counts(at: AppTest) -> tuple[int, int]:
    """How many CSV and how many Parquet download buttons the page drew."""
    labels = [str(b.label).lower() for b in at.download_button]
    return sum("csv" in lab for lab in labels), sum("parquet" in lab for lab in labels)


def chart_png_configured(chart) -> bool:
    """A Plotly chart whose toolbar saves a PNG (the config ui.common.show_fig passes)."""
    config = json.loads(chart.proto.config or "{}")
    return (
        config.get("toImageButtonOptions", {}).get("format", "png") == "png"
        and config.get("displayModeBar", True) is not False
    )


@pytest.mark.slow
@pytest.mark.parametrize("page", registered_pages())
def test_every_table_and_chart_offers_downloads(page: str, demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run_page(page, demo_db, monkeypatch, **deep_link_params(demo_db))
    assert not at.exception, [e.value for e in at.exception]
    n_tables = len(at.dataframe) + len(at.table)
    charts = at.get("plotly_chart")
    n_csv, n_parquet = download_counts(at)
    if n_tables:
        assert n_csv >= 1 and n_parquet >= 1, f"{page}: {n_tables} table(s) but no CSV/Parquet download"
    # each table and each chart's data comes with its own pair of buttons
    assert n_csv >= n_tables + len(charts), f"{page}: {n_tables} tables + {len(charts)} charts, {n_csv} CSV buttons"
    assert n_parquet >= n_tables + len(charts), f"{page}: {n_tables} tables + {len(charts)} charts, {n_parquet} Parquet"
    for chart in charts:
        assert chart_png_configured(chart), f"{page}: a chart without the PNG export of show_fig"


def test_the_check_sees_tables_and_buttons(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The counting helpers work on a page known to draw a table, a chart and their downloads."""
    at = run_page(
        "views/sql.py", fixture_db, monkeypatch, q="SELECT agent, count(*) AS n FROM v_attempts GROUP BY agent"
    )
    assert not at.exception
    n_csv, n_parquet = download_counts(at)
    charts = at.get("plotly_chart")
    assert len(at.dataframe) == 3 and len(charts) == 1
    assert n_csv == n_parquet == len(at.dataframe) + len(charts)
    assert chart_png_configured(charts[0])

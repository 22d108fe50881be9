"""Shared SQL links with hostile text (issue 18): refused with the project's reason, history labels plain."""

from __future__ import annotations

from pathlib import Path

import pytest

from analytics.plaintext import md_plain
from tests.test_page_sql import open_sql_page


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("UPDATE EXTENSIONS", "this kind of statement is not supported here"),
        ("EXPLAIN (FORMAT JSON) DELETE FROM runs", "EXPLAIN is allowed for SELECT statements only"),
        ("SELECT current_setting('temp_directory')", "current_setting() is not allowed"),
    ],
)
def test_a_shared_link_gets_the_projects_refusal(
    sql: str, reason: str, fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = open_sql_page(fixture_db, monkeypatch, q=sql)
    assert any(e.value.startswith("Refused") for e in at.error)
    assert any(reason in c.value for c in at.code)


def test_history_buttons_show_a_shared_query_as_plain_text(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sql = "SELECT '![x](http://127.0.0.1:9/beacon.png)' AS a"
    at = open_sql_page(fixture_db, monkeypatch, q=sql)
    labels = [str(b.label) for b in at.button if str(b.key).startswith("sql_hist_")]
    assert labels == [md_plain(f"1 row: {sql}")]
    assert "![x](http" not in labels[0]

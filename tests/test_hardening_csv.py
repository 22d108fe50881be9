"""CSV rows that cannot be split (issue 30): every CSV Runlens writes quotes a cell holding ``\\r`` or ``\\n`` and
neutralises a formula at the start of any line inside a cell (page downloads, the SQL export, the CLI)."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analytics import csvsafe
from analytics import sql_console as sb

# Log fields a hostile producer could write: a formula after a carriage return, a line feed, both, a tab.
CELLS = [
    "x\r=cmd|' /C calc'!A0",
    'x\n=HYPERLINK("http://example.com")',
    "x\r\n+1+1",
    "x\n\n@SUM(A1)",
    "x\r-2",
    "ok\r\n\tthen a tab",
    "=at the start",
    "a plain line\nand another",
]


def _sql_of(cells: list[str]) -> str:
    def literal(text: str) -> str:
        parts = re.split(r"([\r\n\t])", text)
        return " || ".join(f"chr({ord(p)})" if p in "\r\n\t" and p else "'" + p.replace("'", "''") + "'" for p in parts)

    return " UNION ALL ".join(f"SELECT {i} AS i, {literal(c)} AS field" for i, c in enumerate(cells))


FORMULA_START = re.compile(r'^"?[=+\-@\t]')


def _assert_unsplittable(text: str, cells: list[str]) -> None:
    """A CSV reader gets the cells back (neutralised); and no line of the raw text, however a reader splits it,
    starts a formula."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == len(cells) + 1, rows
    got = [row[1] for row in rows[1:]]
    assert [g.replace("'", "") for g in got] == [c.replace("'", "") for c in cells]
    for line in re.split(r"\r\n|\r|\n", text):
        assert not FORMULA_START.match(line), (line, text)


def test_page_downloads_quote_line_breaks_and_neutralise_every_line() -> None:
    df = pd.DataFrame({"i": range(len(CELLS)), "field": CELLS})
    text = csvsafe.csv_bytes(df).decode("utf-8")
    _assert_unsplittable(text, CELLS)
    assert "\"x\r'=cmd|' /C calc'!A0\"" in text  # quoted, and the formula after the \r neutralised


def test_the_sql_export_and_shown_rows_do_too(fixture_db: Path) -> None:
    sql = _sql_of(CELLS) + " ORDER BY i"
    _assert_unsplittable(sb.export_result(sql, "csv", db=fixture_db, is_isolated=False).decode(), CELLS)
    _assert_unsplittable(sb.result_csv(sb.run_query(sql, db=fixture_db, is_isolated=False)), CELLS)


@pytest.mark.parametrize("extra", [[], ["--max-rows", "100"]])
def test_the_cli_does_too(fixture_db: Path, extra: list[str]) -> None:
    sql = _sql_of(CELLS) + " ORDER BY i"
    proc = subprocess.run(
        [sys.executable, "-m", "analytics", "sql", "--db", str(fixture_db), *extra, sql],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _assert_unsplittable(proc.stdout.decode(), CELLS)


def test_numbers_and_plain_text_are_untouched() -> None:
    df = pd.DataFrame({"score": [-0.5, 1.0], "agent": ["o3", "a\nb"]})
    rows = list(csv.reader(io.StringIO(csvsafe.csv_text(df), newline="")))
    assert rows == [["score", "agent"], ["-0.5", "o3"], ["1.0", "a\nb"]]

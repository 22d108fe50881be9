"""docs/security.md's attack-corpus table is recomputed from the corpus in the tests (issue 18)."""

from __future__ import annotations

import re
from pathlib import Path

from tests import test_hardening_sql as hs
from tests import test_hardening_upload as hu
from tests.conftest import ROOT
from tests.test_sql_console import ATTACKS

N_BOUNDED_ATTACKS = 5  # the resource attacks at the end of ATTACKS (time and memory)


def table_row(label: str) -> tuple[int, int, int, int]:
    """tried, refused, bounded, allowed of the row whose first cell contains ``label``."""
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and label in cells[0]:
            tried, refused, bounded, allowed = (int(c) for c in cells[1:])
            return tried, refused, bounded, allowed
    raise AssertionError(f"no row for {label!r} in docs/security.md")


def counts(statements: list[str]) -> tuple[int, int, int, int]:
    kinds = [hs.classify(sql) for sql in statements]
    refused = kinds.count("refused") + kinds.count("syntax")
    return len(kinds), refused, 0, kinds.count("allowed")


def test_sql_rows_match_the_corpus() -> None:
    assert table_row("`ATTACKS`") == (len(ATTACKS), len(ATTACKS) - N_BOUNDED_ATTACKS, N_BOUNDED_ATTACKS, 0)
    assert table_row("`STATEMENT_KINDS`") == counts(hs.STATEMENT_KINDS)
    assert table_row("fuzzed statements") == counts(hs.fuzzed_statements())


def test_upload_name_row_matches_the_corpus() -> None:
    marks = hu.test_safe_names_stay_inside_the_folder.pytestmark  # type: ignore[attr-defined]
    n_names = len(marks[0].args[1]) + 5  # the parametrised names and the five of the uniqueness test
    assert table_row("upload names") == (n_names, 0, 0, n_names)


def test_formula_row_matches_the_corpus() -> None:
    n_formulas = len(re.findall(r"'[=+\-@]", hs.FORMULAS))
    assert table_row("CSV formula cells") == (n_formulas, 0, 0, n_formulas)


def test_round_two_rows_match_the_corpus(fixture_db: Path) -> None:
    """CSV cells with line breaks, and the disclosure payloads as the sandbox answers them (issue 30)."""
    from tests import test_hardening_csv as hc
    from tests import test_hardening_sql_channel as hd

    assert table_row("`CELLS`") == (len(hc.CELLS), 0, 0, len(hc.CELLS))
    kinds = [hd._answer_text(sql, fixture_db)[0] for sql in hd.DISCLOSURE]
    assert table_row("`DISCLOSURE`") == (len(kinds), len(kinds) - kinds.count("ran"), 0, kinds.count("ran"))

"""Layers only reach the right way: analytics and ingest never import streamlit; pages never import duckdb."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

RULES = {
    "analytics": {"streamlit", "ui", "pages"},
    "ingest": {"streamlit", "ui", "pages"},
    "pages": {"duckdb"},
    "ui": {"duckdb", "pages"},
}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer}/ has no Python files"
    offences = {str(f.relative_to(ROOT)): sorted(imported_roots(f) & RULES[layer]) for f in files}
    assert {f: bad for f, bad in offences.items() if bad} == {}


def test_pages_hold_no_sql() -> None:
    for page in (ROOT / "pages").glob("*.py"):
        if page.name == "sql.py":  # the SQL console shows example queries to the user
            continue
        text = page.read_text(encoding="utf-8").upper()
        for keyword in ("SELECT ", "INSERT INTO", "CREATE TABLE"):
            assert keyword not in text, f"{page.name} contains SQL ({keyword.strip()})"

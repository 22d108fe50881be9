"""AppTest smoke test of every page app.py routes to, on the demo database, plus deep links."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest import open_page
from tests.conftest import ROOT

EMPTY_HINT = re.compile(r"\b(no|nothing|empty)\b.*\b(ingest|upload|load|run|data|database)", re.IGNORECASE | re.DOTALL)


def registered_pages() -> list[str]:
    """The page files app.py routes to (its ``PAGES``, read from its source, so a new page is tested
    automatically)."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    pages = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                pages.append(arg.value)
    return sorted(set(pages))  # the leaderboard is registered twice: at the root URL and at /leaderboard


def page_urls() -> dict[str, str]:
    """Each URL path app.py serves, with its page file (read from app.py's ``PAGES``)."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    urls = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page" and node.args:
            page, url = node.args[0], {k.arg: k.value for k in node.keywords}.get("url_path")
            assert isinstance(page, ast.Constant) and isinstance(url, ast.Constant), ast.unparse(node)
            urls[str(url.value)] = str(page.value)
    return urls


def test_page_urls_stay() -> None:
    """Links people saved and shared keep working: every page keeps its URL (the root serves the leaderboard)."""
    assert page_urls() == {
        "home": "views/leaderboard.py",
        "leaderboard": "views/leaderboard.py",
        "progress": "views/progress.py",
        "tmf": "views/tmf.py",
        "errors": "views/errors.py",
        "drilldown": "views/drilldown.py",
        "search": "views/search.py",
        "clusters": "views/clusters.py",
        "review": "views/review.py",
        "diff": "views/diff.py",
        "gem": "views/gem.py",
        "sql": "views/sql.py",
        "upload": "views/upload.py",
    }


def run_page(page: str, db: Path, monkeypatch: pytest.MonkeyPatch, **params: str) -> AppTest:
    return open_page(page, db, monkeypatch, check=False, **params)


def test_every_page_file_is_registered() -> None:
    files = sorted(f"views/{p.name}" for p in (ROOT / "views").glob("*.py") if not p.name.startswith("_"))
    assert sorted(registered_pages()) == files


@pytest.mark.parametrize("page", registered_pages())
def test_page_renders_on_demo_data(page: str, demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run_page(page, demo_db, monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} drew no title"
    assert any("Demo data" in w.value for w in at.warning), "the demo banner is missing"


@pytest.mark.parametrize("page", registered_pages())
def test_page_explains_an_empty_database(page: str, tmp_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from store import writer

    with writer(tmp_db):
        pass  # an existing but empty database (the app only seeds a new one)
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    at = run_page(page, tmp_db, monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} drew no title on an empty database"
    # an empty state that explains itself: a notice saying there is nothing yet and how to get data in
    notices = [m.value for m in at.info] + [m.value for m in at.warning]
    assert any(EMPTY_HINT.search(n) for n in notices), f"{page} does not explain an empty database: {notices}"


def test_leaderboard_numbers_and_deep_link(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench", agents="Agent A")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "Pass@2 %" in d.value.columns)
    assert list(table["Agent"]) == ["Agent A"]
    assert table.loc[0, "Pass@1 %"] == "50.0" and table.loc[0, "Pass@2 %"] == "100.0"
    summary = at.dataframe[0].value  # the table read first
    assert list(summary["Run"]) == ["Agent A 1 · 2026-01-15"]  # agent, version, evaluation date
    assert summary.loc[0, "Pass@1 % [95% CI]"].startswith("50.0 [")
    assert at.sidebar.multiselect[0].value == ["Agent A"]
    assert at.query_params["benchmark"] == ["mini-bench"] or at.query_params["benchmark"] == "mini-bench"
    labels = [b.label for b in at.get("download_button")]
    assert "CSV" in labels and "Parquet" in labels


def test_human_rows_stand_apart(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench")
    assert [s.value for s in at.subheader][:2] == ["Agents", "Human baseline"]
    assert "Human" not in set(at.dataframe[0].value["Run"])  # not among the ranked runs
    humans = [d.value for d in at.dataframe if "Run" in d.value.columns and "Rank" not in d.value.columns]
    assert [h["Run"].str.startswith("Human").tolist() for h in humans][:1] == [[True]]


def test_breakdown_by_category(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run_page("views/leaderboard.py", fixture_db, monkeypatch, benchmark="mini-bench")
    at.segmented_control(key="lb_breakdown").set_value("category").run()
    assert not at.exception
    pivot = next(d.value for d in at.dataframe if "Run" in d.value.columns and "lookup" in d.value.columns)
    assert set(pivot.columns) == {"Run", "compute", "lookup"}


@pytest.mark.parametrize(
    ("page", "unused"),
    [
        ("views/leaderboard.py", None),
        ("views/drilldown.py", None),
        ("views/progress.py", None),  # the scale uses every run; the filters choose the versions shown
        ("views/sql.py", "Benchmark, Agents, Evaluation dates"),
    ],
)
def test_filters_a_page_ignores_are_marked(
    page: str, unused: str | None, fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No sidebar filter is silently ignored: the sidebar names the ones a page does not apply (issue 22)."""
    at = run_page(page, fixture_db, monkeypatch)
    notes = [c.value for c in at.sidebar.caption if "Not used on this page" in c.value]
    assert notes == ([] if unused is None else [f":material/filter_alt_off: Not used on this page: {unused}."])


def test_the_servers_long_lived_heap_is_frozen_once_per_new_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit collects garbage in full after every run; the modules the server keeps for life are frozen out of
    that walk, again only after a page imported more (collected first, so no garbage is frozen)."""
    import gc
    import sys
    import types

    from ui import shell

    monkeypatch.setitem(shell._FROZEN_AT, "modules", 0)
    try:
        assert shell.freeze_long_lived() and gc.get_freeze_count() > 0
        assert not shell.freeze_long_lived()  # nothing imported since: nothing to do
        monkeypatch.setitem(sys.modules, "runlens_test_new_import", types.ModuleType("runlens_test_new_import"))
        assert shell.freeze_long_lived()
    finally:
        gc.unfreeze()  # the test process's heap is not a server's

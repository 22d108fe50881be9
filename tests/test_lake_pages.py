"""Every page on the team store: the demo migrated into a lake (DuckLake on a throwaway PostgreSQL, data in a
local folder) draws the same tables as on the single-file store, from a visitor's deep link, without an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.transfer import copy_store
from tests.apptest import open_page
from tests.lake_support import new_lake
from tests.test_downloads_everywhere import deep_link_params
from tests.test_pages import registered_pages


@pytest.fixture(scope="module")
def demo_lake(postgres, demo_db_master: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """The demo dataset copied into a new lake (once per module; pages only read it)."""
    location, env = new_lake(postgres, tmp_path_factory.mktemp("lake") / "data")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        copy_store(demo_db_master, location)
    return location, env


def tables_of(at) -> list[list[list[str]]]:
    """Every table the page drew, as text cells (the values a reader sees). The schema browser's ``meta`` row is
    left out: a file store keeps its publish generation there and a lake does not."""
    return [[row for row in frame.value.astype(str).values.tolist() if row[0] != "meta"] for frame in at.dataframe]


@pytest.mark.slow
@pytest.mark.parametrize("page", registered_pages())
def test_every_page_draws_the_same_tables_on_the_lake(
    page: str, demo_lake: tuple[str, dict[str, str]], demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, env = demo_lake
    params = deep_link_params(demo_db)
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    on_file = open_page(page, demo_db, monkeypatch, **params)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    on_lake = open_page(page, location, monkeypatch, **params)  # type: ignore[arg-type]
    lake_tables, file_tables = tables_of(on_lake), tables_of(on_file)
    assert len(lake_tables) == len(file_tables)
    for i, (a, b) in enumerate(zip(lake_tables, file_tables, strict=True)):
        assert a == b, (i, [r for r in a if r not in b][:5], [r for r in b if r not in a][:5])
    if page in ("views/leaderboard.py", "views/errors.py", "views/tmf.py", "views/sql.py"):
        assert lake_tables and any(lake_tables), f"{page} drew no table: nothing was compared"
    assert [m.value for m in on_lake.metric] == [m.value for m in on_file.metric]
    assert len(on_lake.get("plotly_chart")) == len(on_file.get("plotly_chart"))
    captions = [c.value.replace("\\", "") for c in on_lake.sidebar.caption]  # plain text: Markdown escaped
    assert any(c.startswith("Team store dbname=") and "· snapshot " in c for c in captions), captions

"""A lake an older Runlens wrote is migrated when the dashboard opens it, before any page reads it.

Pages read the snapshot pinned at the start of their run (``reader(as_of=...)``), and a pinned read never migrates:
without the migration at start-up every page of an upgraded dashboard read tables without the columns the new code
asks for ("Binder Error: Referenced column ... not found"), until something wrote to the store."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import store as rdb
from store import lake
from tests.apptest import open_page
from tests.conftest import FIXTURES

migrate_module = importlib.import_module("store.migrate")  # the module (``store.migrate`` is also its function)
PROBE = "runlens_upgrade_probe"


def _schema_at(location: str, snapshot: int) -> tuple[int, bool]:
    """The schema version of ``snapshot`` and whether it holds the probe's table, read without migrating."""
    found = lake.parse(location)
    con, _ = lake.pinned_reader(found, snapshot)
    try:
        version = rdb.schema_version(con)
        has_probe = bool(
            con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [PROBE]).fetchone()[0]
        )  # type: ignore[index]
    finally:
        lake.close(con)
    return version, has_probe


@pytest.mark.parametrize("page", ["views/leaderboard.py", "views/tmf.py"])
def test_an_older_lake_is_migrated_before_the_first_page_reads_it(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest.pipeline import ingest_paths
    from ui import common

    location = f"ducklake:sqlite:{tmp_path / 'team.lake'}"  # not the default lake: no demo data is loaded into it
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    ingest_paths([FIXTURES / "good.jsonl"], db=location)
    written = lake.snapshot_id(lake.parse(location))
    assert written is not None
    # this code now has one migration more than the Runlens that wrote the lake
    real = rdb.migrations()
    newer = [*real, (real[-1][0] + 1, "999_upgrade_probe", f"CREATE TABLE {PROBE} (x INTEGER);")]
    monkeypatch.setattr(migrate_module, "migrations", lambda: newer)
    assert _schema_at(location, written) == (real[-1][0], False)

    at = open_page(page, Path(location), monkeypatch)
    pinned = str(at.session_state[common.PINNED_KEY])
    snapshot = int(pinned.removeprefix("snapshot:"))
    assert snapshot > written  # the page read the migrated snapshot, not the one the older code wrote
    assert _schema_at(location, snapshot) == (newer[-1][0], True)

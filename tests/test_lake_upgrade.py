"""A lake an older Runlens wrote is migrated when the dashboard opens it, before any page reads it; a time-travel
read of a snapshot the older Runlens wrote is refused with a sentence saying so.

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
    from ui import common

    location, written, version = _older_lake(tmp_path, monkeypatch)
    assert _schema_at(location, written) == (version - 1, False)

    at = open_page(page, Path(location), monkeypatch)
    pinned = str(at.session_state[common.PINNED_KEY])
    snapshot = int(pinned.removeprefix("snapshot:"))
    assert snapshot > written  # the page read the migrated snapshot, not the one the older code wrote
    assert _schema_at(location, snapshot) == (version, True)


def _older_lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, int]:
    """A lake written by this code, which then gets one migration more (as an upgraded Runlens would): its location,
    the snapshot the older code wrote and the newer schema version."""
    from ingest.pipeline import ingest_paths

    location = f"ducklake:sqlite:{tmp_path / 'team.lake'}"  # not the default lake: no demo data is loaded into it
    monkeypatch.delenv("RUNLENS_LAKE_DATA_PATH", raising=False)
    ingest_paths([FIXTURES / "good.jsonl"], db=location)
    written = lake.snapshot_id(lake.parse(location))
    assert written is not None
    real = rdb.migrations()
    newer = [*real, (real[-1][0] + 1, "999_upgrade_probe", f"CREATE TABLE {PROBE} (x INTEGER);")]
    monkeypatch.setattr(migrate_module, "migrations", lambda: newer)
    return location, written, newer[-1][0]


def test_an_as_of_read_of_a_snapshot_older_than_the_schema_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m analytics REPORT --as-of`` on a snapshot the older code wrote: exit 2 with a sentence naming the
    snapshot and both schema versions (before, the report read it and failed on the first newer column it asked
    for, "Binder Error: Referenced column ... not found"); the snapshots after the migration read as usual."""
    from cli import main

    location, written, version = _older_lake(tmp_path, monkeypatch)
    assert main(["leaderboard", "--db", location, "--as-of", str(written)]) == 2
    err = capsys.readouterr().err
    assert f"snapshot {written} predates this Runlens's schema" in err
    assert f"schema version {version - 1}; this version reads {version}" in err
    assert "Binder Error" not in err

    assert main(["leaderboard", "--db", location, "--json"]) == 0  # the latest read migrates
    migrated = lake.snapshot_id(lake.parse(location))
    assert migrated is not None and migrated > written
    capsys.readouterr()
    assert main(["leaderboard", "--db", location, "--as-of", str(migrated), "--json"]) == 0
    assert _schema_at(location, migrated) == (version, True)


def test_a_link_to_a_snapshot_older_than_the_schema_shows_the_latest_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's ``?as_of=`` naming a snapshot the older code wrote: the page says why the link's past state
    cannot be shown and reads the migrated latest snapshot (before, it pinned the older snapshot)."""
    from ui import common

    location, written, version = _older_lake(tmp_path, monkeypatch)
    at = open_page("views/leaderboard.py", Path(location), monkeypatch, as_of=str(written))
    snapshot = int(str(at.session_state[common.PINNED_KEY]).removeprefix("snapshot:"))
    assert snapshot > written
    assert _schema_at(location, snapshot) == (version, True)
    notices = " ".join(str(e.value) for e in at.info).replace("\\", "")
    assert f"snapshot {written} predates this Runlens's schema" in notices

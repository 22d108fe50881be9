"""Uploads (issue 18): checked and ingested in a worker with limits, under safe names, never left on disk."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ingest import upload_worker as uw
from tests.adapter_helpers import rows
from tests.conftest import FIXTURES


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("..", "upload"),
        (".", "upload"),
        ("", "upload"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\boot.ini", "boot.ini"),
        (".hidden.jsonl", "hidden.jsonl"),
        ("results.csv", "results.csv"),
        ("run <a href=x>.jsonl", "run _a href_x_.jsonl"),
    ],
)
def test_safe_names_stay_inside_the_folder(name: str, expected: str) -> None:
    assert uw.safe_name(name, set()) == expected


def test_safe_names_are_unique_and_keep_the_suffix() -> None:
    taken: set[str] = set()
    assert [uw.safe_name(n, taken) for n in ("a.jsonl", "A.jsonl", "x/a.jsonl", "..", "..")] == [
        "a.jsonl",
        "A-2.jsonl",
        "a-3.jsonl",
        "upload",
        "upload-2",
    ]


def test_preview_in_a_worker_with_hostile_names_leaves_nothing_behind(fixture_db: Path, private_tmp: Path) -> None:
    good = (FIXTURES / "good.jsonl").read_bytes()
    bad = (FIXTURES / "bad_json.jsonl").read_bytes()
    previews = uw.preview_uploads(
        [("..", good), ("../x/bad.jsonl", bad), ("new.jsonl", good.replace(b"mini-a-v1", b"mini-a-v9"))],
        db=fixture_db,
    )
    assert [p.file for p in previews] == ["..", "../x/bad.jsonl", "new.jsonl"]  # the uploads' own names
    assert [p.outcome for p in previews][1] == "invalid"
    assert previews[1].errors and all(str(private_tmp) not in e for e in previews[1].errors)
    assert previews[0].outcome in ("duplicate", "ready") and previews[0].format == "native"
    if previews[2].outcome == "ready":  # what the file would create is said before anything is written
        assert ("mini-a-v9", "mini-bench", "Agent A") in previews[2].runs
    assert not list(private_tmp.glob(uw.TEMP_PREFIX + "*"))


def test_ingest_in_a_worker_reports_each_file_and_removes_the_upload(tmp_db: Path, private_tmp: Path) -> None:
    seen: list[tuple[int, str]] = []
    results = uw.ingest_uploads(
        [("..", (FIXTURES / "good.jsonl").read_bytes())],
        [".."],
        db=tmp_db,
        on_file=lambda i, r: seen.append((i, r.outcome)),
    )
    assert [(r.file, r.outcome) for r in results] == [("..", "ingested")] and seen == [(0, "ingested")]
    assert results[0].n_attempts == rows(tmp_db, "SELECT count(*) FROM attempts")[0][0] > 0
    assert not list(private_tmp.glob(uw.TEMP_PREFIX + "*"))


def test_the_worker_is_stopped_by_its_time_limit(fixture_db: Path, private_tmp: Path) -> None:
    limits = uw.WorkerLimits(preview_timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(uw.UploadWorkerError, match="time limit"):
        uw.preview_uploads([("a.jsonl", (FIXTURES / "good.jsonl").read_bytes())], db=fixture_db, limits=limits)
    assert time.monotonic() - started < 10
    assert not list(private_tmp.glob(uw.TEMP_PREFIX + "*"))


def test_the_worker_is_stopped_by_its_memory_limit(fixture_db: Path, private_tmp: Path) -> None:
    """A small address space (what a zip bomb would run into) ends the worker, not the server."""
    limits = uw.WorkerLimits(memory_bytes=150 * 1024 * 1024)
    with pytest.raises(uw.UploadWorkerError, match="memory limit"):
        uw.preview_uploads([("a.jsonl", (FIXTURES / "good.jsonl").read_bytes())], db=fixture_db, limits=limits)
    assert not list(private_tmp.glob(uw.TEMP_PREFIX + "*"))


def test_stale_upload_folders_are_removed(private_tmp: Path) -> None:
    old = private_tmp / (uw.TEMP_PREFIX + "old")
    new = private_tmp / (uw.TEMP_PREFIX + "new")
    for folder in (old, new):
        folder.mkdir()
        (folder / "x.jsonl").write_text("{}")
    os.utime(old, (time.time() - 2 * uw.STALE_AFTER_S,) * 2)
    assert uw.remove_stale() == 1
    assert not old.exists() and new.exists()


def test_upload_ingest_carries_the_readers_warnings(tmp_db: Path, private_tmp: Path) -> None:
    """An Inspect log not scored yet goes in, and the upload page is told why its scores are empty."""
    log = FIXTURES / "inspect_upstream" / "log_tool_call_error.json"
    out = uw.ingest_uploads([("unscored.json", log.read_bytes())], ["unscored.json"], db=tmp_db)
    assert [s.outcome for s in out] == ["ingested"]
    assert any("inspect score" in w for w in out[0].warnings), out[0].warnings
    assert not any(str(private_tmp) in w for w in out[0].warnings)  # no server path in what the page shows

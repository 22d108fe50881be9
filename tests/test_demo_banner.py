"""The demo banner shows while demo runs are in view, and not once the view holds only real runs (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.pipeline import ingest_paths
from tests.apptest import open_page
from tests.conftest import FIXTURES

DEMO = [
    {"record": "benchmark", "benchmark": "demo-bench", "scoring": "binary"},
    {"record": "task", "benchmark": "demo-bench", "task_id": "t1"},
    {"record": "run", "run_id": "d1", "benchmark": "demo-bench", "agent": "Demo A", "eval_date": "2026-01-01"},
    {"record": "attempt", "run_id": "d1", "task_id": "t1", "score": 1.0},
]


@pytest.fixture
def mixed_db(tmp_path: Path) -> Path:
    """Real runs (mini-bench, from the fixture) beside demo runs of another benchmark."""
    db = tmp_path / "mixed.duckdb"
    demo = tmp_path / "demo.jsonl"
    demo.write_text("".join(json.dumps(r) + "\n" for r in DEMO), encoding="utf-8")
    assert [r.outcome for r in ingest_paths([FIXTURES / "good.jsonl"], db=db)] == ["ingested"]
    assert [r.outcome for r in ingest_paths([demo], db=db, is_demo=True)] == ["ingested"]
    return db


def _has_banner(at: object) -> bool:
    return any("Demo data" in w.value for w in at.warning)  # type: ignore[attr-defined]


def test_banner_only_while_demo_runs_are_in_view(mixed_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _has_banner(open_page("views/leaderboard.py", mixed_db, monkeypatch, benchmark="demo-bench"))
    assert not _has_banner(open_page("views/leaderboard.py", mixed_db, monkeypatch, benchmark="mini-bench"))

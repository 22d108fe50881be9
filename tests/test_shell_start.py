"""Where a visit opens: a link to a run opens on the run's own benchmark (sidebar and demo banner follow the run,
not the landing benchmark), and a visit without a benchmark opens on the one last used on this store, kept across
server processes (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.pipeline import ingest_paths
from tests.apptest import open_page
from tests.conftest import FIXTURES

# demo runs newer than the fixture's real runs: a visit without a benchmark opens on the demo benchmark
DEMO = [
    {"record": "benchmark", "benchmark": "demo-bench", "scoring": "binary"},
    {"record": "task", "benchmark": "demo-bench", "task_id": "t1"},
    {"record": "run", "run_id": "d1", "benchmark": "demo-bench", "agent": "Demo A", "eval_date": "2026-03-01"},
    {"record": "attempt", "run_id": "d1", "task_id": "t1", "score": 1.0},
]


@pytest.fixture
def mixed_db(tmp_path: Path) -> Path:
    """Real runs of mini-bench (the fixture, January) beside newer demo runs of demo-bench (March)."""
    db = tmp_path / "mixed.duckdb"
    demo = tmp_path / "demo.jsonl"
    demo.write_text("".join(json.dumps(r) + "\n" for r in DEMO), encoding="utf-8")
    assert [r.outcome for r in ingest_paths([FIXTURES / "good.jsonl"], db=db)] == ["ingested"]
    assert [r.outcome for r in ingest_paths([demo], db=db, is_demo=True)] == ["ingested"]
    return db


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own (where the last benchmark used is kept)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("RUNLENS_CACHE_DIR", str(folder))
    return folder


def _has_banner(at: object) -> bool:
    return any("Demo data" in w.value for w in at.warning)  # type: ignore[attr-defined]


def test_a_link_to_a_run_opens_on_its_own_benchmark(mixed_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    landing = open_page("views/drilldown.py", mixed_db, monkeypatch)
    assert landing.session_state["flt_benchmark"] == "demo-bench" and _has_banner(landing)
    at = open_page("views/drilldown.py", mixed_db, monkeypatch, run="mini-a-v1")
    assert at.session_state["flt_benchmark"] == "mini-bench"
    assert not _has_banner(at)  # the real run is not shown under the demo banner
    assert at.selectbox(key="dd_run").value == "mini-a-v1"
    assert at.query_params["benchmark"] == "mini-bench"
    demo = open_page("views/drilldown.py", mixed_db, monkeypatch, run="d1")
    assert demo.session_state["flt_benchmark"] == "demo-bench" and _has_banner(demo)


def test_a_link_with_its_benchmark_or_a_stale_run_keeps_the_usual_rules(
    mixed_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = open_page("views/drilldown.py", mixed_db, monkeypatch, run="mini-a-v1", benchmark="demo-bench")
    assert asked.session_state["flt_benchmark"] == "demo-bench"  # the link's own benchmark is kept
    stale = open_page("views/drilldown.py", mixed_db, monkeypatch, run="no-such-run")
    assert stale.session_state["flt_benchmark"] == "demo-bench"
    assert any("not in the database" in w.value for w in stale.warning)

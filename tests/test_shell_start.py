"""Where a visit opens: a link to a run opens on the run's own benchmark (sidebar and demo banner follow the run,
not the landing benchmark), and a visit without a benchmark opens on the one last used on this store, kept across
server processes (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st

from ingest.pipeline import ingest_paths
from tests.apptest import open_page
from tests.conftest import FIXTURES
from ui import last_used

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
    monkeypatch.delenv("RUNLENS_STATE_DIR", raising=False)  # (conftest's per-test folder): the cache folder is read
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
    # the URL stays as the link was (adding the benchmark would be a second history entry for one view); links the
    # page draws to other pages carry the run's benchmark
    assert "benchmark" not in at.query_params and at.session_state["flt_link"]["benchmark"] == "mini-bench"
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


def _new_server_process() -> None:
    """What a restart forgets: everything Streamlit keeps in the process (its resource and data caches)."""
    st.cache_resource.clear()
    st.cache_data.clear()


def test_the_last_benchmark_used_outlives_the_server_process(
    mixed_db: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert open_page("views/leaderboard.py", mixed_db, monkeypatch).session_state["flt_benchmark"] == "demo-bench"
    open_page("views/leaderboard.py", mixed_db, monkeypatch, benchmark="mini-bench")
    saved = json.loads((own_cache / last_used.FILE_NAME).read_text(encoding="utf-8"))
    assert saved == {str(mixed_db.resolve()): "mini-bench"}
    _new_server_process()
    again = open_page("views/leaderboard.py", mixed_db, monkeypatch)  # a fresh session, no benchmark in the link
    assert again.session_state["flt_benchmark"] == "mini-bench"
    assert not list(own_cache.glob(".last-*")), "no temporary file is left behind"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"x": 3}', ""])
def test_a_corrupt_memory_is_ignored(
    content: str, mixed_db: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own_cache.mkdir(parents=True)
    (own_cache / last_used.FILE_NAME).write_text(content, encoding="utf-8")
    _new_server_process()
    at = open_page("views/leaderboard.py", mixed_db, monkeypatch)
    assert at.session_state["flt_benchmark"] == "demo-bench"  # the newest runs, as with nothing remembered
    assert last_used.read_all() == {str(mixed_db.resolve()): "demo-bench"}  # and the file is whole again


def test_an_unwritable_cache_folder_costs_only_the_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("RUNLENS_CACHE_DIR", str(blocker / "cache"))  # a folder inside a file: cannot exist
    assert last_used.remember("/some/store.duckdb", "ad-bench") is False
    assert last_used.last_benchmark("/some/store.duckdb") is None


def test_stores_are_kept_apart_and_the_oldest_forgotten(own_cache: Path) -> None:
    for i in range(last_used.MAX_STORES + 3):
        assert last_used.remember(f"/stores/s{i}.duckdb", f"bench-{i}")
    assert last_used.remember("/stores/s52.duckdb", "bench-52") is False  # unchanged: no write
    kept = last_used.read_all()
    assert len(kept) == last_used.MAX_STORES and "/stores/s0.duckdb" not in kept
    assert last_used.last_benchmark("/stores/s52.duckdb") == "bench-52"


def test_a_store_is_keyed_by_its_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert last_used.store_key("runs.duckdb") == str(tmp_path.resolve() / "runs.duckdb")
    lake = "ducklake:postgres:dbname=runlens host=db.internal"
    assert (
        last_used.store_key(lake) == lake
        and last_used.store_key("ducklake:sqlite:a.sqlite") == "ducklake:sqlite:a.sqlite"
    )
    assert last_used.store_key(":memory:") == ":memory:"


def test_the_first_run_spares_streamlits_repl_check(mixed_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's once-per-process check for a REPL (``inspect.stack()`` over every frame and module, 0.02-0.035 CPU
    s of the app's first run) is not made: the app marks its warning as shown before drawing anything."""
    from streamlit import delta_generator, env_util

    from ui.shell import BARE_SCRIPT_FLAG

    calls: list[int] = []
    monkeypatch.setattr(env_util, "is_repl", lambda: calls.append(1) or False)
    monkeypatch.setattr(delta_generator, BARE_SCRIPT_FLAG, False)  # as in a new process
    at = open_page("views/leaderboard.py", mixed_db, monkeypatch)
    assert not at.exception and at.dataframe  # the page is drawn
    assert calls == [] and getattr(delta_generator, BARE_SCRIPT_FLAG) is True

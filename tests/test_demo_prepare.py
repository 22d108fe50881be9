"""data/demo/prepare.py: the store is made ready before the server starts (bash run.sh app), the demo loaded only
into an empty store, and the dashboard's own start-up then finds nothing to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import store as rdb
from data.demo import build, prepare
from tests.conftest import ROOT


def test_an_empty_store_gets_the_demo_and_a_full_one_is_left_alone(
    tmp_path: Path, fixture_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNLENS_SKIP_DEMO", raising=False)
    loaded: list[str] = []
    monkeypatch.setattr(build, "load_demo", lambda db, out=None: loaded.append(str(db)))
    empty = tmp_path / "new.duckdb"
    assert prepare.prepare_store(str(empty)) is True and loaded == [str(empty)]
    with rdb.reader(empty) as con:  # created and migrated even before the demo's rows arrive
        assert rdb.describe(con).is_current
    assert prepare.prepare_store(str(fixture_db)) is False and loaded == [str(empty)]
    monkeypatch.setenv("RUNLENS_SKIP_DEMO", "1")
    assert prepare.prepare_store(str(tmp_path / "skipped.duckdb")) is False and len(loaded) == 1


def test_the_command_line_reports_ready(fixture_db: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "data.demo.prepare", "--db", str(fixture_db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "runlens: ready in" in done.stderr, done.stderr


def test_run_sh_prepares_the_store_before_the_server() -> None:
    script = (ROOT / "run.sh").read_text()
    app = script[script.index("  app)") : script.index("  team-demo)")]
    assert app.index("-m data.demo.prepare") < app.index("streamlit run")


def test_the_warm_up_finds_the_server_from_the_options_run_sh_passes() -> None:
    from ui.warmup import server_url

    assert server_url([]) == "http://127.0.0.1:8501"
    assert server_url(["--server.port", "9000", "--server.address=0.0.0.0"]) == "http://127.0.0.1:9000"
    assert server_url(["--server.headless", "true", "--server.port=8600", "--server.baseUrlPath", "/rl/"]) == (
        "http://127.0.0.1:8600/rl"
    )
    assert server_url(["--server.address", "::1"]) == "http://[::1]:8501"


def test_run_sh_warms_the_app_beside_the_server() -> None:
    script = (ROOT / "run.sh").read_text()
    app = script[script.index("  app)") : script.index("  team-demo)")]
    assert app.index('-m ui.warmup "$@" &') < app.index("streamlit run")
    assert "scriptHealthCheckEnabled = true" in (ROOT / ".streamlit" / "config.toml").read_text()

"""Inspect's own test logs (tests/fixtures/inspect_upstream, MIT): every one is read, as many attempts as it holds.

The expected counts come from the files themselves (sample members of a .eval, the ``samples`` array of a .json),
never from a table written here.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ingest.pipeline import ingest_paths

UPSTREAM = Path(__file__).parent / "fixtures" / "inspect_upstream"
LOGS = sorted(p for p in UPSTREAM.iterdir() if p.suffix in (".eval", ".json"))


def samples_in(path: Path) -> int:
    """How many samples (x epochs) the log holds, read without Runlens."""
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as zf:
            return sum(1 for n in zf.namelist() if n.startswith("samples/") and n.endswith(".json"))
    return len(json.loads(path.read_text()).get("samples") or [])


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_every_upstream_log_is_read(tmp_db: Path, path: Path) -> None:
    res = ingest_paths([path], db=tmp_db)[0]
    assert res.outcome == "ingested", res.error
    assert res.n_attempts == samples_in(path)


def test_upstream_eval_and_json_of_one_log_are_the_same_content(tmp_db: Path) -> None:
    first, second = ingest_paths([UPSTREAM / "log_formats.eval", UPSTREAM / "log_formats.json"], db=tmp_db)
    assert first.outcome == "ingested" and first.n_attempts == samples_in(UPSTREAM / "log_formats.eval")
    assert second.outcome == "duplicate" and second.duplicate_of == str(UPSTREAM / "log_formats.eval")


def test_unscored_upstream_log_warns(tmp_db: Path) -> None:
    res = ingest_paths([UPSTREAM / "log_tool_call_error.json"], db=tmp_db)[0]
    assert res.outcome == "ingested" and any("inspect score" in w for w in res.warnings)


def test_cli_prints_the_warning(tmp_db: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "ingest", "--db", str(tmp_db), str(UPSTREAM / "log_tool_call_error.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "inspect score" in proc.stderr

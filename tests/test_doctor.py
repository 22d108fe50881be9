"""doctor finds what is wrong with a database and passes a healthy one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from analytics import doctor
from store import writer
from tests.conftest import ROOT


def run_doctor(db: Path) -> tuple[int, dict]:
    out = subprocess.run(
        [sys.executable, "-m", "analytics", "doctor", "--db", str(db), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.returncode, json.loads(out.stdout)


def test_healthy_database_passes(fixture_db: Path) -> None:
    code, rep = run_doctor(fixture_db)
    assert code == 0 and rep["ok"], rep["problems"]
    assert rep["counts"]["attempts"] == 6 and rep["files_checked"] == 1
    assert rep["schema_version"] == rep["latest_version"]


def test_lost_steps_and_orphans_are_reported(fixture_db: Path) -> None:
    with writer(fixture_db) as con:
        con.execute("DELETE FROM steps WHERE attempt_id = (SELECT min(attempt_id) FROM attempts)")
        con.execute("INSERT INTO error_labels (attempt_id, code, source) VALUES (999999, 'TE', 'label')")
    code, rep = run_doctor(fixture_db)
    assert code == 1 and not rep["ok"]
    assert rep["orphans"]["error labels without attempt"] == 1
    assert any("good.jsonl" in p and "found" in p for p in rep["problems"]), rep["problems"]


def test_changed_rows_break_the_digest(fixture_db: Path) -> None:
    with writer(fixture_db) as con:
        con.execute("UPDATE attempts SET score = 1 - score, passed = NOT passed WHERE attempt_id = 1")
        rep = doctor.check(con, str(fixture_db))
    assert any("digest mismatch" in p for p in rep.problems)

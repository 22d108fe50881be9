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


def test_kept_aggregates_are_compared_with_their_attempts_and_rebuilt(demo_db: Path) -> None:
    """Every table the writer keeps for the pages equals a recomputation on the demo; a changed, a lost and an
    invented row are each found in their own table, and --rebuild-aggregates repairs them."""
    from store import aggregates

    with writer(demo_db) as con:
        rep = doctor.check(con, str(demo_db), rehash_sources=False)
        assert set(rep.aggregates) == set(aggregates.KEPT)
        assert rep.ok and not any(rep.aggregates.values()), rep.problems
        assert con.execute("SELECT count(*) FROM run_slice_codes").fetchone()[0] > 0  # the check compares rows
        con.execute(
            "UPDATE run_task_stats SET n_passed = n_passed + 1 WHERE (run_id, task_id) = "
            "(SELECT (run_id, task_id) FROM run_task_stats ORDER BY ALL LIMIT 1)"
        )
        con.execute("DELETE FROM run_slice_codes WHERE rowid = (SELECT min(rowid) FROM run_slice_codes)")
        con.execute("INSERT INTO run_label_codes SELECT * REPLACE ('ZZ' AS code) FROM run_label_codes LIMIT 1")
    code, out = run_doctor(demo_db)
    assert code == 1 and not out["ok"]
    # the changed row is two rows apart (the stored one and the recomputed one), in run_task_stats and in the TMF
    # rows that copy it (compared with the stored run_task_stats); the others one each
    assert {t: n for t, n in out["aggregates"].items() if n} == {
        "run_task_stats": 2,
        "run_task_tmf": 2,
        "run_slice_codes": 1,
        "run_label_codes": 1,
    }
    assert any("run_task_stats differ" in p and "--rebuild-aggregates" in p for p in out["problems"])
    rebuilt = subprocess.run(
        [sys.executable, "-m", "analytics", "doctor", "--db", str(demo_db), "--rebuild-aggregates", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    after = json.loads(rebuilt.stdout)
    assert rebuilt.returncode == 0 and after["ok"], after["problems"]
    assert not any(after["aggregates"].values())

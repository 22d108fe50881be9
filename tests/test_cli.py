"""The command line's one registry (the cli package): every report listed, shared options, light --help, clean
errors and JSON without pandas' missing-value markers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli import REPORTS, build_parser, main
from ingest.pipeline import ingest_paths
from tests.conftest import ROOT, shared_data


def test_help_lists_every_report_and_imports_none_of_them() -> None:
    code = (
        "import sys; from cli import build_parser; build_parser().format_help(); "
        "print(sorted(m for m in sys.modules if m.startswith(('analytics', 'jobs', 'torch', 'scipy', 'plotly'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert json.loads(out.replace("'", '"')) == []
    text = build_parser().format_help()
    assert all(name in text for name in REPORTS)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_each_report_declares_its_options_and_the_shared_ones(name: str) -> None:
    sub = build_parser(name)._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
    flags = {opt for action in sub._actions for opt in action.option_strings}
    assert "--db" in flags
    assert ("--json" in flags) == bool(REPORTS[name].json_help)
    assert ("--eval-date" in flags) == REPORTS[name].filtered


@pytest.fixture(scope="module")
def tau_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("cli") / "tau.duckdb"
    src = shared_data("tau_bench", "gpt-4o-airline.json")
    assert [r.outcome for r in ingest_paths([src], db=db, fmt="openai-messages")] == ["ingested"]
    return db


def test_json_has_null_for_a_missing_date(tau_db: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["leaderboard", "--db", str(tau_db), "--json"]) == 0
    rows = [r for rep in json.loads(capsys.readouterr().out) for r in rep["rows"]]
    assert rows and all(r["eval_date"] is None for r in rows)  # the tau log has no date: null, not "NaT"
    assert main(["leaderboard", "--db", str(tau_db)]) == 0
    assert "NaT" not in capsys.readouterr().out


def test_a_project_error_is_one_line_and_exit_2(tau_db: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["coverage", "--db", str(tau_db), "--benchmark", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m analytics coverage: no benchmark named 'nope'") and "tau-bench-airline" in err

"""Lesser hardening (issue 18): bounded judge input, long answers cut in the drilldown, empty ingest folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analytics import judge
from ingest.__main__ import main as ingest_main
from ingest.pipeline import ingest_paths
from tests.conftest import FIXTURES, ROOT


def test_the_judge_sends_bounded_fields() -> None:
    item = {"answer": "y" * 1_300_000, "query": "q" * 50_000, "reference_answer": "5%"}
    fields = judge._fields(item, "step " * 10)
    assert fields["final_answer"].startswith("y" * 1000)
    assert len(fields["final_answer"]) < judge.MAX_FIELD_CHARS + 80
    assert "[cut: 1,284,000 more characters]" in fields["final_answer"]
    assert len(fields["query"]) < judge.MAX_FIELD_CHARS + 80
    assert fields["ground_truth"] == "5%"  # short fields untouched
    prompt = judge.load_prompt("adbench-stage1")
    sent = sum(len(m["content"]) for m in prompt.messages(fields, fence="f00d"))
    assert sent < 6 * judge.MAX_FIELD_CHARS + 20_000  # every field bounded: the whole request is


def test_ingest_of_an_empty_folder_says_so_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a log")
    assert ingest_main(["--db", str(tmp_path / "x.duckdb"), str(empty)]) == 2
    assert f"no log files found in {empty}" in capsys.readouterr().err


def test_drilldown_cuts_a_very_long_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = (FIXTURES / "good.jsonl").read_text().replace('"answer":"5%"', '"answer":"' + "z" * 1_000_000 + '"', 1)
    path = tmp_path / "long.jsonl"
    path.write_text(log)
    db = tmp_path / "long.duckdb"
    assert [r.outcome for r in ingest_paths([path], db=db)] == ["ingested"]
    monkeypatch.setenv("RUNLENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"run": "mini-a-v1", "task": "T1", "sample": "0"})
    at.switch_page("views/drilldown.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    longest = max(len(t.value) for t in at.text)
    assert 20_000 <= longest < 20_010, longest  # cut, not sent whole
    assert any(str(b.label) == "Download the whole text" for b in at.download_button)
    at.toggle(key="dd_answer_whole").set_value(True).run()
    assert max(len(t.value) for t in at.text) == 1_000_000  # the whole answer a click away

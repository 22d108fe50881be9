"""Inspect samples read as Inspect reads them: unscored and NaN scores, odd score values, limits, errors, graders.

Each test edits one real log (tests/conftest.py ``shared_data``) in the way the issue describes and ingests it.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from ingest.pipeline import ingest_paths
from store import RunFilter
from tests.adapter_helpers import counts, rows
from tests.conftest import shared_data

POPULARITY = "2025-05-12T20-28-13-04-00_popularity.json"


def _log() -> dict[str, Any]:
    return json.loads(shared_data("inspect", POPULARITY).read_text())


def _write(tmp_path: Path, log: dict[str, Any], name: str = "log.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(log))
    return path


def test_unscored_samples_ingest_empty_with_a_warning(tmp_db: Path, tmp_path: Path) -> None:
    log = _log()
    log["samples"][0]["scores"] = {}
    del log["samples"][1]["scores"]
    res = ingest_paths([_write(tmp_path, log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    got = rows(tmp_db, "SELECT task_id, score, passed FROM attempts ORDER BY task_id")
    ids = [str(s["id"]) for s in log["samples"]]
    by_id = {t: (sc, p) for t, sc, p in got}
    assert by_id[ids[0]] == (None, None) and by_id[ids[1]] == (None, None)
    assert by_id[ids[2]][0] is not None
    assert len(res[0].warnings) == 2 and all("inspect score" in w for w in res[0].warnings)


def test_nan_score_is_missing(tmp_db: Path, tmp_path: Path) -> None:
    log = _log()
    log["samples"][0]["scores"]["match"]["value"] = math.nan
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(log))  # json.dumps writes NaN, as Inspect does
    res = ingest_paths([path], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    sid = str(log["samples"][0]["id"])
    assert rows(tmp_db, "SELECT score FROM attempts WHERE task_id = ?", [sid]) == [(None,)]


def test_odd_score_value_is_read_as_inspect_reads_it(tmp_db: Path, tmp_path: Path) -> None:
    """A list is no score Inspect can read: value_to_float takes it as 0 with a warning; so does Runlens, keeping
    the value as written."""
    log = _log()
    log["samples"][1]["scores"]["match"]["value"] = ["C", "I"]
    path = _write(tmp_path, log)
    res = ingest_paths([path], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    assert any("scorer 'match' gave" in w and "reads as 0" in w for w in res[0].warnings)
    sid = str(log["samples"][1]["id"])
    got = rows(
        tmp_db,
        "SELECT s.value, CAST(s.raw_value AS VARCHAR), a.score FROM scores s JOIN attempts a USING (attempt_id) "
        "WHERE a.task_id = ?",
        [sid],
    )
    assert got == [(0.0, '["C","I"]', 0.0)]


def test_dict_score_is_one_score_per_key(tmp_db: Path, tmp_path: Path) -> None:
    log = _log()
    for sample in log["samples"]:
        sample["scores"]["match"]["value"] = {"a": 1, "b": "no"}
    res = ingest_paths([_write(tmp_path, log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    got = rows(tmp_db, "SELECT scorer, avg(value), bool_or(is_headline) FROM scores GROUP BY 1 ORDER BY 1")
    assert got == [("match/a", 1.0, True), ("match/b", 0.0, False)]
    res = ingest_paths([_write(tmp_path, log, "b.json")], db=tmp_db, scorer="b", run_id="by-key")
    assert res[0].outcome == "ingested", res[0].error
    assert rows(tmp_db, "SELECT DISTINCT score FROM attempts WHERE run_id = 'by-key'") == [(0.0,)]


def test_unknown_scorer_is_an_error_listing_the_log_scores(tmp_db: Path, tmp_path: Path) -> None:
    path = _write(tmp_path, _log())
    res = ingest_paths([path], db=tmp_db, scorer="nonexistent")
    assert res[0].outcome == "failed"
    assert "unknown scorer 'nonexistent'; this log has 'match'" in str(res[0].error)
    assert rows(tmp_db, "SELECT count(*) FROM runs") == [(0,)]


def test_limits_and_errors_become_statuses(tmp_db: Path, tmp_path: Path) -> None:
    log = _log()
    log["samples"][0]["limit"] = {"type": "message", "limit": 3}
    log["samples"][1]["error"] = {"message": "RuntimeError('tool broke')", "traceback": "", "traceback_ansi": ""}
    del log["samples"][1]["scores"]
    res = ingest_paths([_write(tmp_path, log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    got = {
        t: (st, json.loads(ex or "{}"))
        for t, st, ex in rows(tmp_db, "SELECT task_id, status, CAST(extra AS VARCHAR) FROM attempts")
    }
    first, second = (str(s["id"]) for s in log["samples"][:2])
    assert got[first][0] == "timeout" and got[first][1]["limit"] == {"type": "message", "limit": 3}
    assert got[second][0] == "crashed" and "tool broke" in got[second][1]["error"]
    assert res[0].warnings == ()  # an errored sample is not "unscored": it failed


def _graded(log: dict[str, Any]) -> dict[str, Any]:
    """The log with a model call inside each sample's scorer span, as ``model_graded_qa`` writes it."""
    log = copy.deepcopy(log)
    for sample in log["samples"]:
        events = sample["events"]
        at = next(i for i, e in enumerate(events) if e["event"] == "span_begin" and e.get("type") == "scorer")
        model = copy.deepcopy(next(e for e in events if e["event"] == "model"))
        model["model"] = "grader/model"
        model["output"]["choices"][0]["message"]["content"] = "GRADE: C"
        model["output"]["usage"] = {"input_tokens": 500, "output_tokens": 7, "total_tokens": 507}
        events.insert(at + 1, model)
        sample["model_usage"]["grader/model"] = {"input_tokens": 500, "output_tokens": 7, "total_tokens": 507}
    return log


def test_grader_calls_are_grading_not_trajectory(tmp_db: Path, tmp_path: Path) -> None:
    log = _graded(_log())
    res = ingest_paths([_write(tmp_path, log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    for sample in log["samples"]:
        agent = next(u for m, u in sample["model_usage"].items() if m != "grader/model")
        got = rows(
            tmp_db,
            "SELECT input_tokens, output_tokens, n_steps, CAST(extra AS VARCHAR) FROM attempts WHERE task_id = ?",
            [str(sample["id"])],
        )[0]
        assert got[:2] == (agent["input_tokens"], agent["output_tokens"])
        grading = json.loads(got[3])["grading"]
        assert (grading["input_tokens"], grading["output_tokens"]) == (500, 7)
        assert grading["model_calls"][0]["content"] == "GRADE: C"
        steps = rows(
            tmp_db,
            "SELECT s.kind, s.content FROM steps s JOIN attempts a USING (attempt_id) WHERE a.task_id = ?",
            [str(sample["id"])],
        )
        assert got[2] == len(steps) and all(content != "GRADE: C" for _, content in steps)


def test_detected_by_its_header_past_64_kb_of_sample_ids(tmp_db: Path, tmp_path: Path) -> None:
    log = _log()
    log["eval"]["dataset"]["sample_ids"] = list(range(20_000))  # MMLU-sized: "model" now sits ~150 KB in
    path = _write(tmp_path, log, "big_header.json")
    assert path.read_text().index('"model"') > 65536
    res = ingest_paths([path], db=tmp_db)  # --format auto
    assert res[0].outcome == "ingested" and res[0].format == "inspect", res[0].error


def test_type_errors_carry_inspects_json_path(fixture_db: Path, tmp_path: Path) -> None:
    log = _log()
    log["samples"][2]["epoch"] = "2"
    log["samples"][1]["total_time"] = "12.5"
    log["samples"][0]["scores"] = ["C"]
    path = _write(tmp_path, log)
    before = counts(fixture_db)
    res = ingest_paths([path], db=fixture_db)
    assert res[0].outcome == "failed" and f"{path}:$.samples[2].epoch" in str(res[0].error)
    assert f"{path}:$.samples[1].total_time: total_time: expected number, got str" in str(res[0].error)
    assert f"{path}:$.samples[0].scores: scores: expected dict, got list" in str(res[0].error)
    assert counts(fixture_db) == before


def test_nothing_emptied_silently(tmp_db: Path, tmp_path: Path) -> None:
    log = _log()
    sample = log["samples"][0]
    for event in sample["events"]:
        if event["event"] == "model":
            event["output"]["usage"]["input_tokens"] = "74"
            event["future_model_field"] = {"kept": True}
    log["eval"]["created"] = 1747081693  # 2025-05-12 as a Unix time
    log["eval"]["brand_new_field"] = {"x": 1}
    log["new_top_level"] = [1, 2]
    sample["new_sample_field"] = "kept"
    sample["events"].append({"event": "future_event", "payload": 3})
    res = ingest_paths([_write(tmp_path, log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    tokens, extra = rows(
        tmp_db, "SELECT input_tokens, CAST(extra AS VARCHAR) FROM attempts WHERE task_id = ?", [str(sample["id"])]
    )[0]
    assert tokens == 74
    extra = json.loads(extra)
    assert extra["inspect_extra"]["new_sample_field"] == "kept"
    assert extra["inspect_extra"]["metadata"] == sample["metadata"]  # Inspect's own sample fields kept too
    assert extra["unknown_events"] == [{"event": "future_event", "payload": 3}]
    step_extra = rows(
        tmp_db,
        "SELECT CAST(s.extra AS VARCHAR) FROM steps s JOIN attempts a USING (attempt_id) "
        "WHERE a.task_id = ? AND s.extra IS NOT NULL",
        [str(sample["id"])],
    )
    assert [json.loads(e)["inspect_extra"] for (e,) in step_extra] == [{"future_model_field": {"kept": True}}]
    date, run_extra = rows(tmp_db, "SELECT eval_date, CAST(extra AS VARCHAR) FROM runs")[0]
    assert str(date) == "2025-05-12"
    assert json.loads(run_extra)["inspect_extra"] == {"new_top_level": [1, 2], "eval.brand_new_field": {"x": 1}}


def test_null_model_and_bad_tokens_refused(fixture_db: Path, tmp_path: Path) -> None:
    log = _log()
    log["eval"]["model"] = None
    res = ingest_paths([_write(tmp_path, log, "nomodel.json")], db=fixture_db)
    assert res[0].outcome == "failed" and "$.eval.model" in str(res[0].error) and "--agent" in str(res[0].error)
    log = _log()
    log["samples"][1]["events"] = []
    log["samples"][1]["model_usage"] = {"m": {"input_tokens": "many", "output_tokens": 1}}
    path = _write(tmp_path, log, "badtokens.json")
    res = ingest_paths([path], db=fixture_db)
    assert res[0].outcome == "failed"
    assert f"{path}:$.samples[1].model_usage.m.input_tokens" in str(res[0].error)


def test_unknown_layouts_refused_never_zero_attempts(fixture_db: Path, tmp_path: Path) -> None:
    import zipfile

    log = _log()
    header = {k: v for k, v in log.items() if k != "samples"}
    chunked = tmp_path / "chunked.eval"
    with zipfile.ZipFile(chunked, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(header))
        zf.writestr("samples/chunk_0001.jsonl", "\n".join(json.dumps(s) for s in log["samples"]))
    headless = tmp_path / "header_only.json"
    headless.write_text(json.dumps(header))
    before = counts(fixture_db)
    res = ingest_paths([chunked, headless], db=fixture_db)
    assert [r.outcome for r in res] == ["failed", "failed"]
    assert "unknown sample layout" in str(res[0].error) and "samples/chunk_0001.jsonl" in str(res[0].error)
    assert "holds none" in str(res[1].error)
    assert counts(fixture_db) == before


def test_unscored_attempts_are_not_failures_on_the_leaderboard(tmp_db: Path, tmp_path: Path) -> None:
    import duckdb

    from analytics import leaderboard as lb

    log = _log()
    log["samples"][0]["scores"] = {}
    res = ingest_paths([_write(tmp_path, log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    bench = log["eval"]["task"].split("/")[-1]
    con = duckdb.connect(str(tmp_db), read_only=True)
    try:
        out = lb.task_outcomes(con, RunFilter(benchmark=bench))
    finally:
        con.close()
    assert str(log["samples"][0]["id"]) not in set(out["task_id"])
    assert len(out) == len(log["samples"]) - 1

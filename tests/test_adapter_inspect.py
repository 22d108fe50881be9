"""Inspect AI logs: the two real JSON logs, .eval archives built here, and hostile or broken archives."""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path

import pytest

from ingest.inspect_scores import value_to_float
from ingest.inspect_usage import call_tokens
from ingest.pipeline import ingest_paths
from tests.adapter_helpers import counts, rows
from tests.conftest import shared_data

BROWSER = "2025-05-12T20-27-36-04-00_browser.json"
POPULARITY = "2025-05-12T20-28-13-04-00_popularity.json"


def _log(name: str) -> dict:
    return json.loads(shared_data("inspect", name).read_text())


def _eval_zip(path: Path, log: dict, *, extra: dict[str, bytes] | None = None) -> Path:
    """Write ``log`` in Inspect's .eval layout: header.json, samples/<id>_epoch_<n>.json, reductions, summaries."""
    header = {k: v for k, v in log.items() if k not in ("samples", "reductions")}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_journal/start.json", json.dumps({"version": log["version"], "eval": log["eval"]}))
        zf.writestr("header.json", json.dumps(header))
        for sample in log.get("samples") or []:
            zf.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
        zf.writestr("reductions.json", json.dumps(log.get("reductions") or []))
        zf.writestr(
            "summaries.json", json.dumps([{"id": s["id"], "epoch": s["epoch"]} for s in log.get("samples") or []])
        )
        for name, body in (extra or {}).items():
            zf.writestr(name, body)
    return path


def test_real_json_logs(tmp_db: Path) -> None:
    res = ingest_paths([shared_data("inspect")], db=tmp_db)
    assert [(r.outcome, r.format) for r in res] == [("ingested", "inspect")] * 2, [str(r.error) for r in res]
    runs = rows(tmp_db, "SELECT benchmark, agent, eval_date::VARCHAR, status FROM runs ORDER BY benchmark")
    assert runs == [
        ("browser", "openai/gpt-4o-mini", "2025-05-12", "success"),
        ("popularity", "openai/gpt-4o-mini", "2025-05-12", "cancelled"),
    ]
    pop = _log(POPULARITY)
    expected = {str(s["id"]): value_to_float(s["scores"]["match"]["value"])[0] for s in pop["samples"]}
    got = dict(
        rows(
            tmp_db,
            "SELECT a.task_id, a.score FROM attempts a JOIN runs r USING (run_id) WHERE r.benchmark = 'popularity'",
        )
    )
    assert got == expected
    browser = _log(BROWSER)["samples"][0]
    tokens = sum(u["input_tokens"] for u in browser["model_usage"].values())
    att = rows(
        tmp_db,
        "SELECT input_tokens, latency_s, n_tool_calls, passed FROM attempts a JOIN runs r USING (run_id) "
        "WHERE r.benchmark = 'browser'",
    )[0]
    n_tool_events = sum(e["event"] == "tool" for e in browser["events"])
    assert att == (tokens, browser["total_time"], n_tool_events, True)
    tools = [t for (t,) in rows(tmp_db, "SELECT tool FROM steps WHERE kind = 'tool_call' ORDER BY attempt_id, step")]
    assert tools == [e["function"] for e in browser["events"] if e["event"] == "tool"]
    final = rows(tmp_db, "SELECT content FROM steps WHERE kind = 'final'")
    assert any(c and c.startswith("The AI Security Institute") for (c,) in final)


def test_eval_archive_matches_the_json_log(tmp_path: Path) -> None:
    db_json, db_eval = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    ingest_paths([shared_data("inspect", BROWSER)], db=db_json)
    archive = _eval_zip(tmp_path / "browser.eval", _log(BROWSER))
    res = ingest_paths([archive], db=db_eval)
    assert (res[0].outcome, res[0].format) == ("ingested", "inspect"), res[0].error
    query = "SELECT task_id, sample, score, input_tokens, output_tokens, latency_s, n_steps FROM attempts"
    assert rows(db_eval, query) == rows(db_json, query)
    assert ingest_paths([archive], db=db_eval)[0].outcome == "duplicate"


def test_epochs_become_samples(tmp_db: Path, tmp_path: Path) -> None:
    log = _log(POPULARITY)
    second = copy.deepcopy(log["samples"])
    for s in second:
        s["epoch"] = 2
        s["scores"]["match"]["value"] = "P"
    log["samples"] += second
    res = ingest_paths([_eval_zip(tmp_path / "pop.eval", log)], db=tmp_db)
    assert res[0].outcome == "ingested", res[0].error
    assert rows(tmp_db, "SELECT sample, count(*), avg(score) FROM attempts GROUP BY 1 ORDER BY 1")[1] == (1, 3, 0.5)
    assert rows(tmp_db, "SELECT scoring FROM benchmarks") == [("continuous",)]


def test_cancelled_log_without_samples_is_an_empty_run(tmp_db: Path, tmp_path: Path) -> None:
    log = _log(POPULARITY)
    log["samples"] = []
    log["status"] = "cancelled"
    path = tmp_path / "cancelled.json"
    path.write_text(json.dumps(log))
    res = ingest_paths([path], db=tmp_db)
    assert res[0].outcome == "ingested" and res[0].n_runs == 1 and res[0].n_attempts == 0
    assert rows(tmp_db, "SELECT status FROM runs") == [("cancelled",)]


def test_score_values_as_inspects_value_to_float() -> None:
    """Inspect's rules (inspect_ai.scorer.value_to_float): letters compared exactly, yes/no/true/false in any case,
    numbers on their own scale, numeric text; other text and lists are read as 0 (and said so)."""
    cases = ["C", "I", "P", "N", 0.25, True, "yes", "No", "TRUE", "false", 7, "8.5", -2, "c", "maybe", ["C"]]
    got = [value_to_float(v) for v in cases]
    assert [v for v, _ in got] == [1.0, 0.0, 0.5, 0.0, 0.25, 1.0, 1.0, 0.0, 1.0, 0.0, 7.0, 8.5, -2.0, 0.0, 0.0, 0.0]
    assert [zero for _, zero in got] == [False] * 13 + [True] * 3
    assert value_to_float(float("nan")) == (None, False) and value_to_float(None) == (None, False)


def _bomb() -> bytes:
    """Nine members of 64 MiB (576 MiB decompressed, over the 512 MiB an archive may expand to), compressed once."""
    from tests.test_inspect_zip_limits import build_zip, member

    _, raw, method, crc, size = member("m", b"{" + b" " * (64 * 1024 * 1024) + b"}", zipfile.ZIP_DEFLATED)
    return build_zip([(f"samples/{i}_epoch_1.json", raw, method, crc, size) for i in range(1, 10)])


@pytest.mark.parametrize(
    "case, expected",
    [
        ("traversal", "unsafe member name"),
        ("absolute", "unsafe member name"),
        ("bomb", "more than the 512 MiB an archive may expand to"),
        ("truncated_member", "invalid JSON"),
        ("truncated_archive", "not a readable zip"),
        ("no_header", "no header.json"),
    ],
)
def test_hostile_or_broken_archives_write_nothing(fixture_db: Path, tmp_path: Path, case: str, expected: str) -> None:
    path = tmp_path / f"{case}.eval"
    log = _log(POPULARITY)
    if case == "traversal":
        _eval_zip(path, log, extra={"../../etc/evil.json": b"{}"})
    elif case == "absolute":
        _eval_zip(path, log, extra={"/tmp/evil.json": b"{}"})
    elif case == "bomb":
        path.write_bytes(_bomb())
    elif case == "truncated_member":
        _eval_zip(path, log, extra={"samples/9_epoch_1.json": b'{"id": 9, "epoch": 1, "scores": {'})
    elif case == "truncated_archive":
        _eval_zip(path, log)
        path.write_bytes(path.read_bytes()[:-200])
    else:
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("samples/1_epoch_1.json", json.dumps(log["samples"][0]))
    before = counts(fixture_db)
    res = ingest_paths([path], db=fixture_db, fmt="inspect")
    assert res[0].outcome == "failed", case
    assert expected in str(res[0].error) and str(path) in str(res[0].error)
    assert counts(fixture_db) == before


def test_truncated_json_log_reports_a_line(fixture_db: Path, tmp_path: Path) -> None:
    text = shared_data("inspect", POPULARITY).read_text()
    path = tmp_path / "truncated.json"
    path.write_text(text[: len(text) // 2])
    before = counts(fixture_db)
    res = ingest_paths([path], db=fixture_db, fmt="inspect")
    assert res[0].outcome == "failed" and "invalid JSON" in str(res[0].error)
    assert f"{path}:" in str(res[0].error)
    assert counts(fixture_db) == before


@pytest.mark.parametrize(
    ("usage", "provider", "version", "expected"),
    [
        # total_tokens says which way the call was counted, whatever the version
        ({"input_tokens": 200, "input_tokens_cache_read": 800, "total_tokens": 1050}, "openai", (0, 3, 100), 1000),
        ({"input_tokens": 1000, "input_tokens_cache_read": 800, "total_tokens": 1050}, "openai", (0, 3, 285), 1000),
        # no total: the version and the provider decide (OpenAI counted the cache read in before 0.3.184)
        ({"input_tokens": 1000, "input_tokens_cache_read": 800}, "openai", (0, 3, 150), 1000),
        ({"input_tokens": 900, "input_tokens_cache_read": 800}, "anthropic", (0, 3, 150), 1700),
        ({"input_tokens": 900, "input_tokens_cache_read": 800}, "openai", (0, 3, 184), 1700),
        ({"input_tokens": 900, "input_tokens_cache_read": 800}, "google", (0, 3, 200), 900),
        ({"input_tokens": 900, "input_tokens_cache_read": 800}, "google", (0, 3, 208), 1700),
        ({"input_tokens": 100, "input_tokens_cache_read": 800}, "openai", (0, 3, 150), 900),  # less than its cache
        ({"input_tokens": 100}, "openai", None, 100),
    ],
)
def test_inspect_input_tokens_counted_as_inspect_counted_them(
    usage: dict, provider: str, version: tuple[int, ...] | None, expected: int
) -> None:
    assert call_tokens({**usage, "output_tokens": 50}, "$", provider, version).input == expected
